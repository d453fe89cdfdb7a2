//! Loading the Python runtime component, compiling it at most once per machine.
//!
//! Compiling the ~30 MB component takes 9–30 s; loading a serialized artifact takes
//! milliseconds. Artifacts are keyed by (sha256 of the runtime component, wasmtime version,
//! the engine's precompile-compatibility hash), so a rebuilt runtime, another wasmtime or an
//! incompatible engine configuration never loads a stale artifact. Writes are atomic (a
//! temporary file renamed into place), so concurrent processes never see a half-written one.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

use crate::{Error, Result};

/// How the component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    /// Deserialized from the artifact cache.
    Hit,
    /// Compiled now and written to the cache.
    Compiled,
    /// Compiled now; no cache directory was configured.
    Uncached,
}

/// What loading the component did, for logs and benchmarks.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Hit, compiled or uncached.
    pub status: CacheStatus,
    /// The artifact path (when a cache directory is configured).
    pub artifact: Option<PathBuf>,
    /// sha256 of the runtime component (hex).
    pub runtime_sha256: String,
    /// Time spent hashing, compiling or deserializing.
    pub elapsed: Duration,
}

/// Feeds `Hash` data into sha256: a hasher that is stable across Rust releases, unlike
/// `DefaultHasher`.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        let d = self.0.clone().finalize();
        u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The artifact's file name for this runtime and engine.
pub(crate) fn artifact_name(engine: &Engine, runtime_sha256: &str) -> String {
    let mut h = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    let engine_hash = hex(&h.0.finalize());
    let short = runtime_sha256.get(..16).unwrap_or(runtime_sha256);
    format!("runner-{short}-wasmtime{}-{}.cwasm", wasmtime_version(), &engine_hash[..16])
}

/// The wasmtime version this crate is built against.
pub(crate) fn wasmtime_version() -> &'static str {
    "48.0.8"
}

/// Loads the component at `runtime`, through the artifact cache in `cache_dir` when given.
pub(crate) fn load(
    engine: &Engine,
    runtime: &Path,
    cache_dir: Option<&Path>,
) -> Result<(Component, LoadReport)> {
    let t0 = Instant::now();
    let wasm = std::fs::read(runtime).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            Error::RuntimeMissing { path: runtime.to_path_buf() }
        } else {
            Error::Io { action: "reading", path: runtime.to_path_buf(), source }
        }
    })?;
    let runtime_sha256 = hex(&Sha256::digest(&wasm));
    let Some(dir) = cache_dir else {
        let c = Component::new(engine, &wasm).map_err(|e| Error::wasmtime("compile", &e))?;
        let report = LoadReport {
            status: CacheStatus::Uncached,
            artifact: None,
            runtime_sha256,
            elapsed: t0.elapsed(),
        };
        return Ok((c, report));
    };
    let artifact = dir.join(artifact_name(engine, &runtime_sha256));
    if artifact.is_file() {
        if let Ok(c) = deserialize(engine, &artifact) {
            let report = LoadReport {
                status: CacheStatus::Hit,
                artifact: Some(artifact),
                runtime_sha256,
                elapsed: t0.elapsed(),
            };
            return Ok((c, report));
        }
        // An unreadable artifact (truncated by a crash, foreign) is replaced below.
    }
    let c = Component::new(engine, &wasm).map_err(|e| Error::wasmtime("compile", &e))?;
    let bytes = c.serialize().map_err(|e| Error::wasmtime("serialize", &e))?;
    write_atomic(&artifact, &bytes)?;
    let report = LoadReport {
        status: CacheStatus::Compiled,
        artifact: Some(artifact),
        runtime_sha256,
        elapsed: t0.elapsed(),
    };
    Ok((c, report))
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, artifact: &Path) -> Result<Component> {
    // SAFETY: `Component::deserialize_file` requires that the file was produced by
    // `Component::serialize` (wasmtime validates the header, version and engine settings but
    // not the machine code). Only this module writes into the cache directory, atomically,
    // and the file name binds the runtime's sha256, the wasmtime version and the engine's
    // compatibility hash. The cache directory must not be writable by untrusted parties.
    unsafe { Component::deserialize_file(engine, artifact) }.map_err(|e| Error::wasmtime("deserialize", &e))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |source| Error::Io { action: "writing", path: path.to_path_buf(), source };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    mentor_core::fs::write_atomic(path, bytes).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_name_binds_runtime_and_version() {
        let engine = Engine::default();
        let a = artifact_name(&engine, "aaaaaaaaaaaaaaaaaaaa");
        let b = artifact_name(&engine, "bbbbbbbbbbbbbbbbbbbb");
        assert_ne!(a, b);
        assert!(a.starts_with("runner-aaaaaaaaaaaaaaaa-wasmtime48.0.8-"), "{a}");
        assert_eq!(a, artifact_name(&engine, "aaaaaaaaaaaaaaaaaaaa"));
    }

    #[test]
    fn missing_runtime_says_run_setup() {
        let engine = Engine::default();
        let err = load(&engine, Path::new("/nonexistent/runner.wasm"), None).err().map(|e| e.to_string());
        assert!(err.unwrap_or_default().contains("cargo xtask setup"));
    }
}
