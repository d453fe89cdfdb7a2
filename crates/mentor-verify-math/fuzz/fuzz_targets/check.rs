//! Fuzz target for the math checker: arbitrary bytes, read lossily as UTF-8, split at the first
//! newline into a gold answer and a completion, go through every public entry point. Each input
//! is checked on a thread with a 1 MiB stack (half a rayon worker's), so that recursion which
//! only fits the main thread's 8 MiB is reported as a crash.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mentor_verify_math::{check, equivalent, extract, Config};

/// Stack of the thread each input is checked on.
const STACK: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let worker = std::thread::Builder::new().stack_size(STACK).spawn(move || {
        let (gold, completion) = text.split_once('\n').unwrap_or((text.as_str(), ""));
        let cfg = Config::default();
        let v = check(gold, completion, &cfg);
        assert!((0.0..=1.0).contains(&v.reward()), "reward out of range: {v:?}");
        // The completion as a gold too, and both answer-level entry points.
        let _ = check(completion, gold, &cfg);
        let _ = equivalent(gold, completion, &cfg);
        let _ = extract(completion, &cfg);
    });
    if let Err(panic) = worker.expect("spawn a checking thread").join() {
        std::panic::resume_unwind(panic);
    }
});
