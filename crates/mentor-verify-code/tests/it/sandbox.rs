//! The raw sandbox: programs, stdin, exit codes, limits, concurrency, and stdio judging.

use mentor_core::{CodeHarness, CodeOutcome, CodePayload, IoCase, Payload, Task, TaskMeta, Verifier};
use mentor_verify_code::{CacheStatus, Exit, Sandbox, SandboxConfig, SlotReset};

use crate::{code, sandbox, short_limits, verifier};

#[test]
fn runs_programs_with_stdin_and_exit_codes() {
    let sb = sandbox();
    let e = sb
        .run_blocking(
            "import sys\nname = input()\nprint('hello', name)\nprint(sys.version_info[:2] >= (3, 12))\n",
            b"mentor\n",
        )
        .unwrap();
    assert_eq!(e.exit, Exit::Code(0));
    assert_eq!(String::from_utf8_lossy(&e.stdout), "hello mentor\nTrue\n");
    let e = sb.run_blocking("import sys\nsys.exit(3)\n", b"").unwrap();
    assert_eq!(e.exit, Exit::Code(3));
    let e = sb.run_blocking("raise ValueError('boom')\n", b"").unwrap();
    assert_eq!(e.exit, Exit::Code(1));
    assert!(String::from_utf8_lossy(&e.stderr).contains("ValueError: boom"));
    // WASI preview 2 `exit` carries only success or failure, so `os._exit(7)` arrives as 1.
    let e = sb.run_blocking("import os\nos._exit(7)\n", b"").unwrap();
    assert_eq!(e.exit, Exit::ProcessExit(1));
}

#[test]
fn limits_apply_to_raw_runs() {
    let sb = sandbox();
    let limits = short_limits();
    let run = |code: &str| sb.run_blocking_with(code, b"", &limits).unwrap();
    assert_eq!(run("while True: pass").exit, Exit::Timeout);
    let e = run("import time; time.sleep(60)");
    assert_eq!(e.exit, Exit::Timeout);
    let e = run("import sys; sys.stdout.write('x' * 1_000_000); print('end', file=sys.stderr)");
    assert_eq!(e.exit, Exit::Code(0));
    assert!(e.stdout_truncated && !e.stderr_truncated);
    assert_eq!(e.stdout.len(), limits.stdout_bytes);
    let e = run("x = bytearray(1 << 30)");
    assert!(e.memory_limited);
    assert_eq!(e.exit, Exit::Code(1));
    assert!(String::from_utf8_lossy(&e.stderr).contains("MemoryError"));
    // The next run is unaffected.
    assert_eq!(run("print('ok')").stdout, b"ok\n");
}

#[test]
fn batches_keep_input_order_and_share_nothing() {
    let sb = sandbox();
    let programs: Vec<(String, Vec<u8>)> = (0..24)
        .map(|i| (format!("import builtins\nassert not hasattr(builtins, 'leak')\nbuiltins.leak = {i}\nprint(int(input()) * {i})"), b"3\n".to_vec()))
        .collect();
    let out = sb.run_batch(&programs).unwrap();
    for (i, e) in out.into_iter().enumerate() {
        let e = e.unwrap();
        assert_eq!(e.exit, Exit::Code(0), "{}", String::from_utf8_lossy(&e.stderr));
        assert_eq!(String::from_utf8_lossy(&e.stdout).trim(), (3 * i).to_string());
    }
}

#[test]
fn every_slot_reset_gives_each_run_the_pristine_image() {
    let assets = mentor_core::assets::AssetDir::resolve(|k| std::env::var(k).ok()).unwrap();
    // Checks the state a previous run changed, then changes it: module and builtin attributes,
    // a stdlib module's function, and several MiB of heap far beyond the first pages.
    let program = "import builtins, math, json\n\
        assert not hasattr(builtins, 'leak') and not hasattr(math, 'leak')\n\
        assert math.sqrt(16.0) == 4.0 and json.dumps([1]) == '[1]'\n\
        builtins.leak = math.leak = 1\n\
        math.sqrt = lambda x: -1.0\n\
        json.dumps = None\n\
        junk = [bytes([i % 251]) * 4096 for i in range(4096)]\n\
        print(len(junk))\n";
    for slot_reset in [
        SlotReset::Release,
        SlotReset::DirtyPages { bytes: 1 << 20 },
        SlotReset::CopyFirst { bytes: 32 << 20 },
        SlotReset::CopyFirst { bytes: 4 << 20 },
    ] {
        let sb = Sandbox::new(&SandboxConfig {
            concurrency: 1,
            slot_reset,
            ..SandboxConfig::from_assets(&assets)
        })
        .unwrap();
        for round in 0..4 {
            let e = sb.run_blocking(program, b"").unwrap();
            let stderr = String::from_utf8_lossy(&e.stderr);
            assert_eq!(e.exit, Exit::Code(0), "{slot_reset:?}, run {round}: {stderr}");
            assert_eq!(e.stdout, b"4096\n", "{slot_reset:?}, run {round}");
        }
    }
}

#[test]
fn a_second_sandbox_loads_the_cached_artifact() {
    let first = sandbox();
    assert!(matches!(first.load_report().status, CacheStatus::Hit | CacheStatus::Compiled));
    let assets = mentor_core::assets::AssetDir::resolve(|k| std::env::var(k).ok()).unwrap();
    let second =
        Sandbox::new(&SandboxConfig { concurrency: 1, ..SandboxConfig::from_assets(&assets) }).unwrap();
    assert_eq!(second.load_report().status, CacheStatus::Hit);
    assert_eq!(second.load_report().runtime_sha256, first.load_report().runtime_sha256);
    assert_eq!(second.run_blocking("print(6 * 7)", b"").unwrap().stdout, b"42\n");
}

#[test]
fn new_warms_up_and_works_inside_an_async_runtime() {
    // `new` judges a trivial program before returning (outside the caller's limits); it must
    // not try to start a runtime inside the caller's.
    let assets = mentor_core::assets::AssetDir::resolve(|k| std::env::var(k).ok()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let sb = rt
        .block_on(async {
            Sandbox::new(&SandboxConfig { concurrency: 1, ..SandboxConfig::from_assets(&assets) })
        })
        .unwrap();
    assert!(sb.warm_up_time() > std::time::Duration::ZERO);
    assert_eq!(rt.block_on(sb.run("print(6 * 7)", b"")).unwrap().stdout, b"42\n");
}

#[test]
fn a_missing_runtime_says_run_setup() {
    let dir = tempfile::tempdir().unwrap();
    let err =
        Sandbox::new(&SandboxConfig::new(dir.path().join("runner.wasm"), None)).unwrap_err().to_string();
    assert!(err.contains("run `cargo xtask setup`"), "{err}");
}

fn stdio(cases: &[(&str, &str)]) -> Task {
    Task {
        id: "stdio/1".into(),
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::Stdio {
                cases: cases
                    .iter()
                    .map(|(i, o)| IoCase { input: i.to_string(), output: o.to_string() })
                    .collect(),
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    }
}

#[test]
fn stdio_judging_normalises_whitespace_and_names_the_case() {
    let task = stdio(&[("1 2\n", "3\n"), ("10 20\n", "30"), ("-1 1\n", "0\n")]);
    let good = "```python\na, b = map(int, input().split())\nprint(a + b, '  ')\nprint()\n```";
    let v = verifier().verify(&task, good).unwrap();
    assert!(v.passed(), "{:?}", code(&v));
    assert_eq!(code(&v).tests_passed, 3);
    let bad = "a, b = map(int, input().split())\nprint(abs(a + b) if a > 0 else a * b)\n";
    let v = verifier().verify(&task, bad).unwrap();
    let c = code(&v);
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer);
    assert_eq!(c.tests_passed, 2);
    let f = c.failed_test.as_ref().unwrap();
    assert_eq!(
        (f.index, f.input.as_deref(), f.expected.as_deref(), f.actual.as_deref()),
        (2, Some("-1 1\n"), Some("0\n"), Some("-1\n"))
    );
    let crash = "a, b = map(int, input().split())\nprint(a // (b - 20))\n";
    let v = verifier().verify(&task, crash).unwrap();
    let c = code(&v);
    assert_eq!(c.outcome, CodeOutcome::RuntimeError);
    assert_eq!(c.failed_test.as_ref().unwrap().index, 1);
    let e = c.exception.as_ref().unwrap();
    assert_eq!((e.kind.as_str(), e.line), ("ZeroDivisionError", Some(2)));
    let v = verifier().verify(&task, "print(input(\n").unwrap();
    assert_eq!(code(&v).outcome, CodeOutcome::SyntaxError);
    let v = verifier().verify(&stdio(&[("", "x")]), "print(input())").unwrap();
    assert_eq!(code(&v).exception.as_ref().map(|e| e.kind.as_str()), Some("EOFError"));
}

#[test]
fn a_stdout_cut_in_one_write_is_never_judged() {
    // Issue 17, item 5: one write past the 64 KiB cap lost its tail unflagged, and the kept
    // prefix ("5" and spaces) passed a test expecting 5.
    let task = stdio(&[("", "5")]);
    let program = "import sys\nsys.stdout.write('5\\n' + ' ' * 70000 + 'WRONG')\n";
    let v = verifier().verify(&task, program).unwrap();
    let c = code(&v);
    assert!(!v.passed(), "{c:?}");
    assert_eq!(c.outcome, CodeOutcome::OutputLimit, "{c:?}");
    assert!(c.output_truncated, "{c:?}");
    assert!(c.detail.as_deref().is_some_and(|d| d.contains("cut at 65536 bytes")), "{c:?}");
    // Raw runs: exactly the cap is not a truncation, one byte more is, however it is split.
    let sb = sandbox();
    for (program, truncated) in [
        ("import sys\nsys.stdout.write('x' * 65536)\n", false),
        ("import sys\nsys.stdout.write('x' * 65537)\n", true),
        ("import sys\nsys.stdout.write('x' * 65535)\nsys.stdout.write('yz')\n", true),
        ("print('x' * 40000)\nprint('y' * 40000)\n", true),
        ("import sys\nsys.stderr.write('e' * 70000)\n", false),
    ] {
        let e = sb.run_blocking(program, b"").unwrap();
        assert_eq!(e.stdout_truncated, truncated, "{program}");
        assert_eq!(e.stdout.len(), if truncated { 65536 } else { e.stdout.len() }, "{program}");
    }
    let e = sb.run_blocking("import sys\nsys.stderr.write('e' * 70000)\n", b"").unwrap();
    assert!(e.stderr_truncated && e.stderr.len() == 65536);
}
