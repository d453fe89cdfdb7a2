//! The attack suite: each hostile program with its expected outcome. None may pass.

use mentor_core::{CodeOutcome, Task, Verifier};

use crate::{code, humaneval, short_verifier, verifier};

/// HumanEval/0 (`has_close_elements`), whose tests need a correct answer to pass.
fn task() -> Task {
    humaneval().into_iter().next().expect("HumanEval/0")
}

const WRONG: &str = "    return False\n";

/// Runs `completion` (appended to the prompt) and returns the outcome, asserting it failed.
fn outcome_of(completion: &str) -> mentor_core::CodeFeedback {
    let v = short_verifier().verify(&task(), completion).expect("verdict");
    assert!(!v.passed(), "attack passed: {completion}\n{:?}", code(&v));
    assert_eq!(v.reward(), 0.0);
    code(&v).clone()
}

fn expect(completion: &str, outcome: CodeOutcome) -> mentor_core::CodeFeedback {
    let c = outcome_of(completion);
    assert_eq!(c.outcome, outcome, "{completion}\n{c:?}");
    c
}

#[test]
fn cpu_and_blocking_attacks_time_out() {
    expect("    while True:\n        pass\n", CodeOutcome::Timeout);
    // Blocked in a host call: only the wall-clock timeout can stop it.
    let c = expect("    import time\n    time.sleep(30)\n", CodeOutcome::Timeout);
    assert_eq!(c.failed_test.as_ref().map(|t| t.index), Some(0), "{c:?}");
    let c = outcome_of("    x = 10 ** (10 ** 9)\n    return x\n");
    assert!(matches!(c.outcome, CodeOutcome::Timeout | CodeOutcome::MemoryLimit), "{c:?}");
}

#[test]
fn a_timed_out_test_is_named_with_the_tests_before_it() {
    // Passes the first six asserts, then loops forever on the seventh (threshold 0.5).
    let completion = "    if threshold == 0.5:\n        while True:\n            pass\n    for i, a in enumerate(numbers):\n        for j, b in enumerate(numbers):\n            if i != j and abs(a - b) < threshold:\n                return True\n    return False\n";
    let c = expect(completion, CodeOutcome::Timeout);
    let failed = c.failed_test.as_ref().expect("the running test");
    assert_eq!(failed.index, 6, "{c:?}");
    assert!(failed.source.contains("0.5"), "{failed:?}");
    assert_eq!(c.tests_passed, 6);
}

#[test]
fn memory_bombs_hit_the_memory_limit() {
    expect("    x = 'a' * (1 << 30)\n", CodeOutcome::MemoryLimit);
    expect("    x = []\n    while True:\n        x.append(bytearray(1 << 20))\n", CodeOutcome::MemoryLimit);
    expect("    x = bytearray(1 << 30)\n", CodeOutcome::MemoryLimit);
    // On wasm32 a 10 GB string does not even fit an index: refused before allocating.
    let c = expect("    x = 'a' * 10 ** 10\n", CodeOutcome::RuntimeError);
    assert_eq!(c.exception.as_ref().map(|e| e.kind.as_str()), Some("OverflowError"));
}

#[test]
fn output_floods_are_capped_and_flagged() {
    let c = expect("    while True:\n        print('A' * 1000)\n", CodeOutcome::OutputLimit);
    assert!(c.output_truncated);
    assert!(c.stdout.len() <= 16 << 10);
    let c = expect(
        "    import sys\n    while True:\n        sys.stderr.write('E' * 1000)\n",
        CodeOutcome::OutputLimit,
    );
    assert!(c.output_truncated && c.stderr.len() <= 16 << 10);
    // One huge write by a correct solution: truncated and flagged, not a failure.
    let reference = task().reference_solution().unwrap().to_string();
    let noisy = format!("    import sys\n    sys.stdout.write('B' * 10_000_000)\n{reference}");
    let v = short_verifier().verify(&task(), &noisy).unwrap();
    assert!(v.passed(), "{:?}", code(&v));
    assert!(code(&v).output_truncated);
}

#[test]
fn files_network_processes_and_native_code_are_unavailable() {
    for attack in [
        "    print(open('/etc/passwd').read())\n",
        "    open('/tmp/pwned', 'w').write('x')\n",
        "    open('pwned.txt', 'w').write('x')\n",
        "    import socket\n    socket.socket().connect(('127.0.0.1', 22))\n",
        "    import urllib.request\n    urllib.request.urlopen('http://127.0.0.1:8000')\n",
        "    import os\n    os.system('echo hi')\n",
        "    import subprocess\n    subprocess.run(['ls'])\n",
        "    import os\n    os.fork()\n",
        "    import threading\n    t = threading.Thread(target=print)\n    t.start()\n",
        "    import ctypes\n    ctypes.CDLL(None)\n",
    ] {
        let c = outcome_of(attack);
        assert_eq!(c.outcome, CodeOutcome::RuntimeError, "{attack}\n{c:?}");
        assert!(c.exception.is_some(), "{attack}\n{c:?}");
    }
}

#[test]
fn listing_the_root_and_reading_env_reveal_nothing() {
    let sb = crate::sandbox();
    let e = sb.run_blocking("import os\ntry:\n    print(os.listdir('/'))\nexcept OSError as e:\n    print('denied', type(e).__name__)\n", b"").unwrap();
    let out = String::from_utf8_lossy(&e.stdout);
    assert!(out.starts_with("denied") || out.trim() == "[]", "{out}");
    let e = sb.run_blocking("import os\nprint(dict(os.environ))\n", b"").unwrap();
    assert_eq!(String::from_utf8_lossy(&e.stdout).trim(), "{}");
}

#[test]
fn deep_recursion_and_input_without_stdin_fail_cleanly() {
    let c = expect("    def f(n):\n        return f(n + 1)\n    return f(0)\n", CodeOutcome::RuntimeError);
    assert_eq!(c.exception.as_ref().map(|e| e.kind.as_str()), Some("RecursionError"));
    let c = outcome_of("    import sys\n    sys.setrecursionlimit(10 ** 6)\n    def f(n):\n        return f(n + 1)\n    return f(0)\n");
    assert!(matches!(c.outcome, CodeOutcome::RuntimeError | CodeOutcome::MemoryLimit), "{c:?}");
    let c = expect("    return input() == 'x'\n", CodeOutcome::RuntimeError);
    assert_eq!(c.exception.as_ref().map(|e| e.kind.as_str()), Some("EOFError"));
}

#[test]
fn early_exits_are_tampering() {
    for exit in [
        "import sys\nsys.exit(0)\n",
        "raise SystemExit\n",
        "raise SystemExit(0)\n",
        "import os\nos._exit(0)\n",
    ] {
        // At module level after a wrong solution, and inside the function under test.
        expect(&format!("{WRONG}{exit}"), CodeOutcome::Tampered);
        let inside: String = exit.lines().map(|l| format!("    {l}\n")).collect();
        expect(&inside, CodeOutcome::Tampered);
    }
}

#[test]
fn patching_the_harness_and_builtins_never_passes() {
    let tampered = [
        // Rebinding builtins the tests use, or the exception asserts raise.
        "import builtins\nbuiltins.abs = lambda x: 0\n",
        "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\n",
        "import builtins\nbuiltins.bool = lambda x: True\n",
        // Patching or replacing modules the tests import.
        "import math\nmath.isclose = lambda *a, **k: True\n",
        "import sys, types\nsys.modules['math'] = types.ModuleType('math')\n",
        // Stdlib value classes and lazily imported module globals are watched too.
        "import collections\ncollections.Counter.__eq__ = lambda self, other: True\n",
        "import collections, types\ncollections.heapq = types.ModuleType('heapq')\n",
    ];
    for patch in tampered {
        let c = expect(&format!("{WRONG}{patch}"), CodeOutcome::Tampered);
        assert!(c.detail.is_some(), "{patch}");
    }
    // Redefining check, printing pass markers, patching the JSON encoder or the assert helper
    // have no effect: the tests still run and fail.
    for harmless in [
        "def check(candidate):\n    pass\n",
        "print('All tests passed!')\nprint('{\"passed\": 7, \"total\": 7, \"phase\": \"done\"}')\n",
        "import json.encoder, _json\njson.encoder.encode_basestring_ascii = lambda s: '\"\"'\n_json.encode_basestring_ascii = lambda s: '\"\"'\n",
        "import ast\nast.parse = None\n",
    ] {
        expect(&format!("{WRONG}{harmless}"), CodeOutcome::WrongAnswer);
    }
}

#[test]
fn objects_with_their_own_equality_are_tampering() {
    for forged in [
        "    class Yes:\n        def __eq__(self, other):\n            return True\n        __hash__ = None\n    return Yes()\n",
        "    class T(int):\n        def __eq__(self, other):\n            return True\n        __hash__ = int.__hash__\n    return T(0)\n",
        "    class B:\n        def __bool__(self):\n            return True\n    return B()\n",
    ] {
        expect(forged, CodeOutcome::Tampered);
    }
}

#[test]
fn introspecting_the_harness_is_blocked() {
    for probe in [
        // Frames of the harness (PEP 667 makes f_locals writable) and the object graph.
        "    import sys\n    sys._getframe(1).f_locals['passed'] = 99\n    return False\n",
        "    try:\n        raise ValueError\n    except ValueError as e:\n        f = e.__traceback__.tb_frame.f_back\n    return False\n",
        "    import gc\n    gc.get_objects()\n    return False\n",
        "    import sys\n    sys.settrace(lambda *a: None)\n    return False\n",
        "    import inspect\n    inspect.stack()\n    return False\n",
    ] {
        let c = outcome_of(probe);
        assert_eq!(c.outcome, CodeOutcome::RuntimeError, "{probe}\n{c:?}");
        let e = c.exception.as_ref().expect("exception");
        assert!(e.message.contains("blocked by the sandbox"), "{probe}\n{e:?}");
    }
}

#[test]
fn stdlib_that_probes_frames_still_works() {
    // namedtuple/enum/dataclasses look up their caller's module; the block must degrade gracefully.
    let reference = task().reference_solution().unwrap().to_string();
    let program = format!(
        "    from collections import namedtuple\n    from dataclasses import dataclass\n    import enum\n    P = namedtuple('P', 'x y')\n    E = enum.Enum('E', 'A B')\n    @dataclass\n    class D:\n        x: int\n    _ = (P(1, 2), E.A, D(1))\n{reference}"
    );
    let v = verifier().verify(&task(), &program).unwrap();
    assert!(v.passed(), "{:?}", code(&v));
}

#[test]
fn a_run_after_a_killed_run_works() {
    let task = task();
    let reference = task.reference_solution().unwrap();
    expect("    while True:\n        pass\n", CodeOutcome::Timeout);
    let v = short_verifier().verify(&task, reference).unwrap();
    assert!(v.passed(), "{:?}", code(&v));
    expect("    x = 'a' * (1 << 30)\n", CodeOutcome::MemoryLimit);
    let v = short_verifier().verify(&task, reference).unwrap();
    assert!(v.passed(), "{:?}", code(&v));
}
