//! Seed streams: a deterministic 64-bit mix of seeds and a stable key of a string or of token
//! ids. Every crate that draws random numbers (the trainer's sampling, tasks and bootstrap
//! intervals; the agents' controls) derives its streams here, so a run repeats bit for bit.

/// A deterministic 64-bit mix of seeds (splitmix64 over the parts), for per-step streams.
pub fn mix(parts: &[u64]) -> u64 {
    let mut h = 0x243F_6A88_85A3_08D3u64;
    for &p in parts {
        let mut z = h ^ p.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        h = z ^ (z >> 31);
    }
    h
}

/// A stable 64-bit key of a string (FNV-1a): task ids and names as [`mix`] parts.
pub fn str_key(s: &str) -> u64 {
    fnv(s.bytes().map(u64::from))
}

/// A stable 64-bit key of token ids (FNV-1a over the ids): a prompt as a [`mix`] part.
pub fn ids_key(ids: &[u32]) -> u64 {
    fnv(ids.iter().map(|&id| u64::from(id)))
}

fn fnv(items: impl Iterator<Item = u64>) -> u64 {
    items.fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b).wrapping_mul(0x0100_0000_01b3))
}
