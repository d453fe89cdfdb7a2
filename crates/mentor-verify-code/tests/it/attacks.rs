//! The attack suite: each hostile program with its expected outcome. None may pass.

use std::time::Duration;

use mentor_core::{CodeFeedback, CodeHarness, CodeOutcome, CodePayload, Payload, Task, TaskMeta, Verifier};
use mentor_verify_code::{CodeVerifier, Limits, RewardMode, VerifierConfig};

use crate::{code, humaneval, short_limits, short_verifier, verifier};

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
    let c = outcome_of(
        "    import sys\n    sys.setrecursionlimit(10 ** 6)\n    def f(n):\n        return f(n + 1)\n    return f(0)\n",
    );
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

// ---------------------------------------------------------------------------------------------
// Reach the judge: generic completions that would pass every test if any object holding the
// judge's state (its functions, their globals, closure cells, classes, the verdict) were
// reachable from candidate code. Each must end not passing, and the probes that count what
// they reached must count nothing.

/// An object equal to anything, truthy, and closed under arithmetic: returned by the attacks,
/// it passes every comparison a corrupted judge would let it decide.
const ANY: &str = r#"
class _Any:
    def __eq__(self, o): return True
    def __ne__(self, o): return False
    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    def __bool__(self): return True
    def __hash__(self): return 0
    def __abs__(self): return self
    __neg__ = __pos__ = __abs__
    def __sub__(self, o): return self
    __add__ = __radd__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __mod__ = __sub__
    def __len__(self): return 0
    def __iter__(self): return iter(())
    def __contains__(self, x): return True
"#;

/// The route of issue 17: `ast.NodeTransformer.__subclasses__()` found the harness's `Rewrite`
/// class, whose method's `__globals__` was the harness namespace; `_plain` replaced, the
/// always-equal object passed 155 of 164 HumanEval tasks (20 of the first 20) before the fix.
const SUBCLASS_ROUTE: &str = r#"    import ast
    for c in ast.NodeTransformer.__subclasses__():
        for v in list(vars(c).values()):
            gl = getattr(v, "__globals__", None)
            if type(gl) is dict and "_plain" in gl:
                gl["_plain"] = lambda *a: True
                for k in ("check", "__mentor_check__", "_show"):
                    if k in gl:
                        gl[k] = lambda *a: True
    return _Any()
"#;

/// Runs a completion on many tasks: none may pass; returns the outcomes.
fn none_pass(tasks: &[Task], completion: &str, limits: Limits) -> Vec<CodeFeedback> {
    let v =
        CodeVerifier::new(crate::sandbox(), VerifierConfig { limits: Some(limits), ..Default::default() });
    let items: Vec<(&Task, &str)> = tasks.iter().map(|t| (t, completion)).collect();
    let mut out = Vec::new();
    for ((task, _), verdict) in items.iter().zip(v.verify_batch(&items)) {
        let verdict = verdict.unwrap_or_else(|e| panic!("{}: {e}", task.id));
        assert!(!verdict.passed(), "{} passed: {:?}", task.id, code(&verdict));
        assert_eq!(verdict.reward(), 0.0, "{}", task.id);
        out.push(code(&verdict).clone());
    }
    out
}

fn generous() -> Limits {
    Limits { cpu_time: Duration::from_secs(60), wall_time: Duration::from_secs(120), ..Limits::default() }
}

fn with_any(completion: &str) -> String {
    // The class at module level, after the function.
    format!("{completion}{ANY}")
}

#[test]
fn reach_the_judge_through_the_class_graph_fails_on_humaneval() {
    let tasks: Vec<Task> = humaneval().into_iter().take(20).collect();
    for c in none_pass(&tasks, &with_any(SUBCLASS_ROUTE), short_limits()) {
        assert!(matches!(c.outcome, CodeOutcome::Tampered | CodeOutcome::WrongAnswer), "{c:?}");
    }
}

/// A breadth-first crawl from every module and every class (`object.__subclasses__()`,
/// recursively) through `__dict__`, `__globals__`, closure cells, defaults, bound `__self__` /
/// `__func__`, `__wrapped__`, `__builtins__`, and container members, up to 200,000 objects.
/// Anything that looks like the judge (a function compiled from `<harness>`, a dict binding
/// harness names) is counted and its functions replaced by `lambda *a: True`. It prints what
/// it found before the tests run (stopping after 15 s on a slow machine).
const CRAWLER: &str = r#"
import sys
def _crawl(limit=200000):
    seen = set()
    queue = []
    def push(o):
        i = id(o)
        if i not in seen and len(queue) < limit:
            seen.add(i)
            queue.append(o)
    for m in list(sys.modules.values()):
        push(m)
    stack = [object]
    while stack:
        c = stack.pop()
        push(c)
        try:
            stack.extend(type.__subclasses__(c))
        except Exception:
            pass
    found = patched = 0
    yes = lambda *a, **k: True
    names = ("_plain", "_judge", "run_one", "_snapshot", "__mentor_check__", "__mentor_assert__", "_HARNESS_STATE")
    pos = 0
    import time
    deadline = time.monotonic() + 15
    while pos < len(queue) and pos < limit and (pos % 1000 or time.monotonic() < deadline):
        o = queue[pos]
        pos += 1
        try:
            code = getattr(o, "__code__", None)
            if code is not None and getattr(code, "co_filename", None) == "<harness>":
                found += 1
                print("found a harness function:", code.co_name)
        except Exception:
            pass
        if type(o) is dict:
            if any(k in o for k in names):
                found += 1
                print("found a harness-like dict:", sorted(k for k in names if k in o))
                for k in list(o):
                    if callable(o[k]) and not isinstance(o[k], type):
                        o[k] = yes
                        patched += 1
            for k, v in list(o.items()):
                push(k)
                push(v)
            continue
        if type(o) in (list, tuple, set, frozenset):
            for v in list(o):
                push(v)
            continue
        for a in ("__dict__", "__globals__", "__closure__", "__defaults__", "__kwdefaults__", "__self__",
                  "__func__", "__wrapped__", "__builtins__", "__mro__", "__class__", "__module__"):
            try:
                v = getattr(o, a)
            except Exception:
                continue
            if a == "__closure__" and type(v) is tuple:
                for cell in v:
                    try:
                        push(cell.cell_contents)
                    except Exception:
                        pass
            else:
                push(v)
        if type(o) is type:
            try:
                for v in type.__dict__["__dict__"].__get__(o).values():
                    push(v)
            except Exception:
                pass
    return found, patched, pos
_found, _patched, _visited = _crawl()
print("harness objects found:", _found, "visited:", _visited)
"#;

/// The number after `label` in the program's stdout.
fn reported(c: &CodeFeedback, label: &str) -> usize {
    let at = c.stdout.find(label).unwrap_or_else(|| panic!("no `{label}` in stdout: {c:?}"));
    let rest = &c.stdout[at + label.len()..];
    let digits: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("no count after `{label}`: {c:?}"))
}

#[test]
fn an_exhaustive_crawl_finds_no_judge_object() {
    let tasks: Vec<Task> = humaneval().into_iter().take(2).collect();
    let completion = format!("    return _Any()\n{CRAWLER}{ANY}");
    for c in none_pass(&tasks, &completion, generous()) {
        assert_eq!(reported(&c, "harness objects found:"), 0, "{c:?}");
        assert!(reported(&c, "visited:") > 10_000, "the crawl reached too little: {c:?}");
        assert_eq!(c.outcome, CodeOutcome::Tampered, "{c:?}");
    }
}

#[test]
fn exception_classes_and_raised_exceptions_lead_nowhere() {
    // Every exception class, and everything reachable from the exceptions the judge raises into
    // candidate code (the audit hook's AttributeError and AssertionError): traceback links,
    // context, cause and args. Nothing may come from `<harness>`.
    let probe = r#"    import sys
    global _found
    def harnessy(o):
        code = getattr(o, "__code__", None)
        return getattr(o, "__module__", None) == "mentor_harness" or (
            code is not None and code.co_filename == "<harness>")
    stack = [BaseException]
    while stack:
        c = stack.pop()
        stack.extend(type.__subclasses__(c))
        if harnessy(c) or any(harnessy(v) for v in vars(c).values()):
            _found += 1
    caught = []
    for attempt in (lambda: sys._getframe(1), lambda: sys.audit("mentor.assert", False),
                    lambda: sys.audit("mentor.compare", (False, 0), 1, 2), lambda: sys.audit("mentor.not", _Any())):
        try:
            attempt()
        except BaseException as e:
            caught.append(e)
    seen = set()
    while caught:
        e = caught.pop()
        if id(e) in seen or e is None:
            continue
        seen.add(id(e))
        if harnessy(e) or harnessy(type(e)) or type(e).__module__ not in ("builtins",):
            _found += 1
        caught.extend([e.__context__, e.__cause__])
        caught.extend(a for a in e.args if isinstance(a, BaseException) or callable(a))
        tb = e.__traceback__
        while tb is not None:
            try:
                tb.tb_frame
                _found += 1
            except AttributeError:
                pass
            tb = tb.tb_next
    print("harness objects found:", _found)
    return _Any()
"#;
    let completion = format!("{probe}{ANY}_found = 0\n");
    let tasks: Vec<Task> = humaneval().into_iter().take(3).collect();
    for c in none_pass(&tasks, &completion, short_limits()) {
        assert_eq!(reported(&c, "harness objects found:"), 0, "{c:?}");
        assert!(matches!(c.outcome, CodeOutcome::Tampered | CodeOutcome::WrongAnswer), "{c:?}");
    }
}

/// A HumanEval-format task whose test hands test-defined functions to the candidate: the one
/// way candidate code can reach the tests' namespace (not the judge's).
fn hands_over_functions() -> Task {
    let test = "def check(candidate):\n    assert candidate(lambda x: x + 1, 3) == 4\n    for i in range(3):\n        assert candidate(abs, -i) == i + 1\n    assert candidate(lambda x: x * 2, 5) == 11\n";
    Task {
        id: "attack/handover".into(),
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::HumanEval {
                prompt: "def apply(f, x):\n".into(),
                test: test.into(),
                entry_point: "apply".into(),
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    }
}

#[test]
fn a_handed_over_test_function_cannot_corrupt_the_tests() {
    // `apply(f, x)` is expected to return f(x) + 1 for the last two tests, which `f(x)` does
    // not: the wrong answer can pass only by switching the asserts off or faking builtins.
    let task = hands_over_functions();
    let attacks = [
        // Replace the assert binding with a no-op (then the loop's asserts would do nothing).
        "    g = getattr(f, '__globals__', None)\n    if g is not None:\n        for k, v in list(g.items()):\n            if k.startswith('__mentor'):\n                g[k] = lambda *a: None\n    return f(x)\n",
        // Patch the tests' builtins (their `abs`), and rebind the entry point.
        "    g = getattr(f, '__globals__', None)\n    if g is not None:\n        g['__builtins__']['abs'] = lambda v: v - 1\n        g['candidate'] = lambda f, x: f(x) + 1\n    return f(x)\n",
        // Swap the tests' builtins dict for one of the program's.
        "    g = getattr(f, '__globals__', None)\n    if g is not None:\n        g['__builtins__'] = dict(g['__builtins__'], abs=lambda v: v - 1)\n    return f(x)\n",
    ];
    for attack in attacks {
        let c = outcome_of_task(&task, attack);
        assert_eq!(c.outcome, CodeOutcome::Tampered, "{attack}\n{c:?}");
    }
    // And nothing of the judge is in that namespace.
    let probe = "    g = getattr(f, '__globals__', {})\n    n = sum(1 for v in list(g.values()) if getattr(getattr(v, '__code__', None), 'co_filename', '') == '<harness>' or '_plain' in getattr(v, '__globals__', ()))\n    print('harness objects found:', n)\n    return f(x)\n";
    let c = outcome_of_task(&task, probe);
    assert_eq!(reported(&c, "harness objects found:"), 0, "{c:?}");
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
}

fn outcome_of_task(task: &Task, completion: &str) -> CodeFeedback {
    let v = short_verifier().verify(task, completion).expect("verdict");
    assert!(!v.passed(), "attack passed: {completion}\n{:?}", code(&v));
    assert_eq!(v.reward(), 0.0);
    code(&v).clone()
}

#[test]
fn forged_assert_events_and_swallowed_assertion_errors_never_pass() {
    // A test-defined checker handed to the candidate, which calls it and swallows the
    // AssertionError: the failed assert is recorded by the judge all the same.
    let test = "def check(candidate):\n    def verify(v):\n        assert v == 7\n    candidate(verify)\n    assert candidate(None) == 0\n";
    let task = Task {
        id: "attack/swallow".into(),
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::HumanEval {
                prompt: "def f(check):\n".into(),
                test: test.into(),
                entry_point: "f".into(),
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    };
    let swallow = "    if check is None:\n        return 0\n    try:\n        check(6)\n    except BaseException:\n        pass\n    return 0\n";
    let c = outcome_of_task(&task, swallow);
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
    assert_eq!(c.failed_test.as_ref().map(|t| t.index), Some(0), "{c:?}");
    // Sending the judge's own events: asserts that hold add nothing, ones that do not only fail.
    let forge = "    import sys\n    for _ in range(50):\n        sys.audit('mentor.assert', True)\n        sys.audit('mentor.compare', (False, 0), 1, 1)\n        try:\n            sys.audit('mentor.compare', (False, 0), 1)\n        except AssertionError:\n            pass\n    return False\n";
    let c = outcome_of(forge);
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
    let c = outcome_of(&format!(
        "{WRONG}import sys\nfor _ in range(50):\n    sys.audit('mentor.assert', True)\n"
    ));
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
}

#[test]
fn nested_asserts_refuse_forged_equality() {
    // Asserts inside loops are compared by the judge too: an always-equal object is refused.
    let test = "def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i * i\n    for i in range(3):\n        assert not candidate(-1)\n    assert 0 <= candidate(2) < 5\n";
    let task = Task {
        id: "attack/nested".into(),
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::HumanEval {
                prompt: "def sq(i):\n".into(),
                test: test.into(),
                entry_point: "sq".into(),
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    };
    let c = outcome_of_task(&task, &with_any("    return _Any()\n"));
    assert_eq!(c.outcome, CodeOutcome::Tampered, "{c:?}");
    // A metaclass that claims its class equals `int` is not mistaken for one.
    let meta = "    class M(type):\n        def __hash__(cls): return hash(int)\n        def __eq__(cls, o): return True\n    class Y(metaclass=M):\n        def __eq__(self, o): return True\n        def __hash__(self): return 0\n    return Y()\n";
    let c = outcome_of_task(&task, meta);
    assert_eq!(c.outcome, CodeOutcome::Tampered, "{c:?}");
    let ok = short_verifier().verify(&task, "    return i * i if i >= 0 else 0\n").unwrap();
    assert!(ok.passed(), "{:?}", code(&ok));
}

#[test]
fn forged_progress_events_claim_nothing() {
    // The progress import is callable from candidate code: untagged "pass" events must not
    // count, not even for partial credit when the run is cut off.
    let claim = "    import wit_world\n    for i in range(7):\n        wit_world.progress('pass %d' % i)\n        wit_world.progress('0' * 32 + ' pass %d' % i)\n";
    let c = expect(&format!("{claim}    while True:\n        pass\n"), CodeOutcome::Timeout);
    assert_eq!(c.tests_passed, 0, "{c:?}");
    let partial = CodeVerifier::new(
        crate::sandbox(),
        VerifierConfig { limits: Some(short_limits()), reward: RewardMode::FractionPassed },
    );
    let deep = format!(
        "{claim}    import sys\n    sys.setrecursionlimit(10 ** 6)\n    def f(n):\n        return f(n + 1)\n    return f(0)\n"
    );
    let v = partial.verify(&task(), &deep).unwrap();
    assert!(!v.passed());
    assert_eq!(v.reward(), 0.0, "{:?}", code(&v));
    assert_eq!(code(&v).tests_passed, 0, "{:?}", code(&v));
}

#[test]
fn the_module_tables_hold_nothing_of_the_judge() {
    // The guest module and the bindings module are reachable through sys.modules; rebinding
    // everything in them after the judge started changes nothing.
    let patch = "import sys\nfor name in ('app', 'wit_world', 'componentize_py_runtime'):\n    m = sys.modules.get(name)\n    if m is not None:\n        for k, v in list(vars(m).items()):\n            if callable(v) and not k.startswith('__'):\n                try:\n                    setattr(m, k, lambda *a, **k: True)\n                except Exception:\n                    pass\n";
    let c = outcome_of(&format!("{WRONG}{patch}"));
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
}

#[test]
fn a_rebound_module_table_does_not_hide_a_replaced_module() {
    // `sys.modules = copy` leaves the import system on the real table (where `math` is now a
    // fake), but fooled a judge that looked modules up through `sys.modules`.
    let task = Task {
        id: "attack/modules".into(),
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::Mbpp {
                tests: vec!["import math\nassert math.isclose(f(), 0.5)".into()],
                setup_code: String::new(),
                imports: Vec::new(),
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    };
    let attack = "def f():\n    return 7\nimport sys, types\nreal = sys.modules\nfake = types.ModuleType('math')\nfake.isclose = lambda *a, **k: True\nsys.modules = dict(real)\nreal['math'] = fake\n";
    let c = outcome_of_task(&task, attack);
    assert_eq!(c.outcome, CodeOutcome::Tampered, "{c:?}");
}
