//! The attack suite: each hostile program with its expected outcome. None may pass.

use std::time::Duration;

use mentor_core::datasets::{load_mbpp, MbppSplit};
use mentor_core::{
    CodeFeedback, CodeHarness, CodeOutcome, CodePayload, Payload, Task, TaskMeta, Verifier, VerifierError,
};
use mentor_verify_code::{CodeVerifier, Limits, RewardMode, VerifierConfig};

use crate::{code, datasets_dir, humaneval, short_limits, short_verifier, verifier};

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
fn patching_modules_and_builtins_changes_only_the_candidates_interpreter() {
    // The tests run in another instance, with its own builtins and modules: what the program
    // rebinds in its own interpreter changes nothing they see, so the wrong answer stays wrong.
    for patch in [
        "import builtins\nbuiltins.abs = lambda x: 0\n",
        "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\n",
        "import builtins\nbuiltins.bool = lambda x: True\n",
        "import math\nmath.isclose = lambda *a, **k: True\n",
        "import sys, types\nsys.modules['math'] = types.ModuleType('math')\n",
        "import collections\ncollections.Counter.__eq__ = lambda self, other: True\n",
        "import collections, types\ncollections.heapq = types.ModuleType('heapq')\n",
        "def check(candidate):\n    pass\n",
        "print('All tests passed!')\nprint('{\"passed\": 7, \"total\": 7, \"phase\": \"done\"}')\n",
        "import ast\nast.parse = None\n",
    ] {
        expect(&format!("{WRONG}{patch}"), CodeOutcome::WrongAnswer);
    }
    // Breaking the JSON encoder breaks only the program's own replies: a failure, not a pass.
    let c = outcome_of(&format!(
        "{WRONG}import json.encoder, _json\njson.encoder.encode_basestring_ascii = lambda s: '\"\"'\n_json.encode_basestring_ascii = lambda s: '\"\"'\n"
    ));
    assert!(matches!(c.outcome, CodeOutcome::WrongAnswer | CodeOutcome::RuntimeError), "{c:?}");
}

#[test]
fn objects_with_their_own_equality_are_wrong_answers() {
    // A candidate object stays in the candidate's instance; the tests hold a handle that
    // equals only itself, so it never decides a comparison. An instance of a subclass of a
    // plain type crosses as its base type's value, read through the base type's own methods,
    // so its `__eq__` never runs in the tests either (HumanEval/0's first test expects True).
    for (forged, actual) in [
        (
            "    class Yes:\n        def __eq__(self, other):\n            return True\n        __hash__ = None\n    return Yes()\n",
            "<Yes object of the candidate's>",
        ),
        (
            "    class T(int):\n        def __eq__(self, other):\n            return True\n        __hash__ = int.__hash__\n    return T(0)\n",
            "0",
        ),
        (
            "    class B:\n        def __bool__(self):\n            return True\n    return B()\n",
            "<B object of the candidate's>",
        ),
    ] {
        let c = expect(forged, CodeOutcome::WrongAnswer);
        let got = c.failed_test.as_ref().and_then(|t| t.actual.clone()).unwrap_or_default();
        assert_eq!(got, actual, "{c:?}");
    }
}

#[test]
fn introspection_in_the_candidates_instance_reaches_nothing() {
    // Nothing is blocked in the candidate's instance any more: frames, the collector and
    // tracing all work, and find only the candidate's own program.
    for probe in [
        "    import sys\n    sys._getframe(1).f_locals['passed'] = 99\n    return False\n",
        "    try:\n        raise ValueError\n    except ValueError as e:\n        f = e.__traceback__.tb_frame.f_back\n    return False\n",
        "    import gc\n    gc.get_objects()\n    return False\n",
        "    import sys\n    sys.settrace(lambda *a: None)\n    return False\n",
        "    import inspect\n    inspect.stack()\n    return False\n",
    ] {
        let c = outcome_of(probe);
        assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{probe}\n{c:?}");
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
pub(crate) const ANY: &str = r#"
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
        // A handle in arithmetic is a TypeError in the tests' instance.
        assert!(matches!(c.outcome, CodeOutcome::WrongAnswer | CodeOutcome::RuntimeError), "{c:?}");
    }
}

/// A crawl of the candidate's whole interpreter: every object the collector tracks (with
/// `DEBUG_SAVEALL`, so cycles freed earlier stay listed), every module, every class
/// (`object.__subclasses__()`, recursively), the frames up the stack, and through `__dict__`,
/// `__globals__`, closure cells, defaults, bound `__self__`/`__func__`, code constants and
/// container members, up to 150,000 objects. It looks for anything of the tests: their
/// source (`check(`, the marker in the expected value), a frame or code object of `<test>`,
/// a namespace binding the judge's assert function. It prints what it found.
const CRAWLER: &str = r#"
import sys, gc
def _crawl(limit=150000):
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    seen = set()
    queue = []
    def push(o):
        i = id(o)
        if i not in seen and len(queue) < limit:
            seen.add(i)
            queue.append(o)
    for o in gc.get_objects():
        push(o)
    for o in gc.garbage:
        push(o)
    for m in list(sys.modules.values()):
        push(m)
    f = sys._getframe()
    while f is not None:
        push(f)
        f = f.f_back
    stack = [object]
    while stack:
        c = stack.pop()
        push(c)
        try:
            stack.extend(type.__subclasses__(c))
        except Exception:
            pass
    found = 0
    # Every needle is assembled here, so the program's own text holds none of them whole;
    # the needles themselves are skipped by identity.
    needles = ("EXPECTED" + "-MARKER-7f3a", "def " + "check(", "__mentor" + "_assert__")
    ns_key = needles[2]
    pos = 0
    while pos < len(queue):
        o = queue[pos]
        pos += 1
        t = type(o)
        if t is str:
            if any(n in o for n in needles) and not any(o is n for n in needles):
                found += 1
                print("found test text:", o[:80])
            continue
        if t is bytes:
            if needles[0].encode() in o:
                found += 1
            continue
        if t is type(sys._getframe()):
            push(o.f_code)
            push(o.f_back)
            try:
                push(o.f_locals)
            except Exception:
                pass
            continue
        if t is type(_crawl.__code__):
            if o.co_filename == "<test>":
                found += 1
                print("found test code:", o.co_name)
            for c in o.co_consts:
                push(c)
            continue
        if t is dict:
            # The interpreter's own string table maps the guest's constants to themselves (the
            # judge's code is in this component too, unused); a namespace binds a function.
            if ns_key in o and callable(o[ns_key]):
                found += 1
                print("found the tests' namespace:", sorted(map(str, o))[:20])
            for k, v in list(o.items()):
                push(k)
                push(v)
            continue
        if t in (list, tuple, set, frozenset):
            for v in list(o):
                push(v)
            continue
        for a in ("__dict__", "__globals__", "__closure__", "__defaults__", "__kwdefaults__", "__self__",
                  "__func__", "__wrapped__", "__builtins__", "__mro__", "__class__", "__code__",
                  "__traceback__", "__context__", "__cause__", "tb_frame", "tb_next", "gi_frame", "cr_frame"):
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
    return found, pos
_found, _visited = _crawl()
print("test objects found:", _found, "visited:", _visited)
_once = []
"#;

/// The number after `label` in the program's stdout.
fn reported(c: &CodeFeedback, label: &str) -> usize {
    let at = c.stdout.find(label).unwrap_or_else(|| panic!("no `{label}` in stdout: {c:?}"));
    let rest = &c.stdout[at + label.len()..];
    let digits: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("no count after `{label}`: {c:?}"))
}

/// A HumanEval-format task whose expected values carry a marker string.
fn marked_task() -> Task {
    Task {
        id: "attack/marked".into(),
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::HumanEval {
                prompt: "def tag(x):\n".into(),
                test: "def check(candidate):\n    assert candidate(1) == 'EXPECTED-MARKER-7f3a-1'\n    assert candidate(2) == 'EXPECTED-MARKER-7f3a-2'\n".into(),
                entry_point: "tag".into(),
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    }
}

#[test]
fn a_crawl_inside_the_candidates_instance_finds_nothing_of_the_tests() {
    // Run at load time and again inside the call under test, after the tests' instance has
    // sent its request: neither finds the test code, an expected value or the judge's state,
    // because none of them is in that interpreter.
    let task = marked_task();
    let completion = format!("    {CRAWLER_CALL}\n    return 'wrong'\n{CRAWLER}");
    let v = CodeVerifier::new(
        crate::sandbox(),
        VerifierConfig { limits: Some(generous()), ..Default::default() },
    );
    let verdict = v.verify(&task, &completion).expect("verdict");
    let c = code(&verdict).clone();
    assert!(!verdict.passed(), "{c:?}");
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
    assert_eq!(c.stdout.matches("test objects found: 0").count(), 2, "{c:?}");
    assert!(reported(&c, "visited:") > 10_000, "the crawl reached too little: {c:?}");
    // The same crawl on real HumanEval tasks: nothing of their tests either.
    let tasks: Vec<Task> = humaneval().into_iter().take(2).collect();
    for c in none_pass(&tasks, &format!("    {CRAWLER_CALL}\n    return _Any()\n{CRAWLER}{ANY}"), generous())
    {
        assert_eq!(reported(&c, "test objects found:"), 0, "{c:?}");
        assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
    }
}

/// The crawl again, from inside the function under test.
const CRAWLER_CALL: &str =
    "if not _once:\n        _once.append(_crawl())\n        print('test objects found:', *_once[0], 'visited:')";

/// The route of issue 32: with `DEBUG_SAVEALL`, the frames of an exception raised by the old
/// judge's audit hook stayed in `gc.garbage`; their locals switched the hook off and the
/// judge's frames were one `f_back` away. Generic: it patches every callable it finds in any
/// frame's locals and globals, then returns an always-equal object.
pub(crate) const SAVEALL_ROUTE: &str = r#"    import gc, sys
    gc.set_debug(gc.DEBUG_SAVEALL)
    for probe in (lambda: sys._getframe(5), lambda: 1 / 0):
        try:
            probe()
        except BaseException:
            pass
    gc.collect()
    yes = lambda *a, **k: True
    frames = [o for o in gc.garbage + gc.get_objects() if type(o) is type(sys._getframe())]
    f = sys._getframe()
    while f is not None:
        frames.append(f)
        f = f.f_back
    for fr in frames:
        for scope in (fr.f_locals, fr.f_globals):
            try:
                for k in list(scope):
                    if callable(scope[k]) and not isinstance(scope[k], type) and not k.startswith("__"):
                        scope[k] = yes
            except Exception:
                pass
    return _Any()
"#;

#[test]
fn the_saveall_frame_route_gets_no_reward() {
    let tasks: Vec<Task> = humaneval().into_iter().take(20).collect();
    for c in none_pass(&tasks, &with_any(SAVEALL_ROUTE), short_limits()) {
        assert!(!matches!(c.outcome, CodeOutcome::Passed), "{c:?}");
    }
}

#[test]
fn humaneval_prompt_helpers_come_from_the_prompt_never_the_completion() {
    // HumanEval/32, /38 and /50 test the candidate with a helper the prompt defines (`poly`,
    // `encode_cyclic`, `encode_shift`). A completion that redefines the helper so that a wrong
    // body passes must fail: the tests' side defines the helpers from the prompt alone.
    let tasks = humaneval();
    let get = |id: &str| tasks.iter().find(|t| t.id == id).cloned().expect(id);
    let cases = [
        ("HumanEval/38", "    return s\n\ndef encode_cyclic(s):\n    return s\n"),
        ("HumanEval/50", "    return s\n\ndef encode_shift(s):\n    return s\n"),
        ("HumanEval/32", "    return 0.0\n\ndef poly(xs, x):\n    return 0.0\n"),
    ];
    for (id, completion) in cases {
        let task = get(id);
        let c = outcome_of_task(&task, completion);
        assert!(matches!(c.outcome, CodeOutcome::WrongAnswer | CodeOutcome::RuntimeError), "{id}: {c:?}");
        // The canonical solution still passes (it calls the prompt's helper on its side).
        let v = verifier().verify(&task, task.reference_solution().unwrap()).unwrap();
        assert!(v.passed(), "{id}: {:?}", code(&v));
    }
}

#[test]
fn mbpp_test_imports_cannot_be_rebound_by_the_program() {
    // 13 sanitized-MBPP tasks import `math` for their asserts. A program that binds `math` to
    // an object whose every function says yes, and defines the functions under test to return
    // 0, passes none of them; every reference still passes.
    let path = datasets_dir().join("mbpp/sanitized-mbpp.json");
    let mut tasks = Vec::new();
    for split in [MbppSplit::Prompt, MbppSplit::Test, MbppSplit::Validation, MbppSplit::Train] {
        tasks.extend(load_mbpp(&path, split).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
    }
    tasks.retain(|t| matches!(&t.payload, Payload::Code(c) if matches!(&c.harness, CodeHarness::Mbpp { imports, .. } if !imports.is_empty())));
    assert_eq!(tasks.len(), 13);
    let fake = "import sys\nclass _Yes:\n    def __getattr__(self, name):\n        return lambda *a, **k: True\nmath = _Yes()\nsys.modules['math'] = math\n";
    let v = CodeVerifier::new(
        crate::sandbox(),
        VerifierConfig { limits: Some(generous()), ..Default::default() },
    );
    for task in &tasks {
        let reference = task.reference_solution().expect("reference");
        let ok = v.verify(task, reference).expect("verdict");
        assert!(ok.passed(), "{}: {:?}", task.id, code(&ok));
        let defs: String = reference
            .lines()
            .filter_map(|l| l.strip_prefix("def "))
            .filter_map(|l| l.split('(').next())
            .map(|name| format!("def {name}(*a, **k):\n    return 0\n"))
            .collect();
        let attack = format!("{defs}{fake}");
        let verdict = v.verify(task, &attack).expect("verdict");
        assert!(!verdict.passed(), "{} passed: {:?}", task.id, code(&verdict));
        // The same task with its imports dropped (what a caller that cannot carry them sends):
        // the tests import the modules they read themselves, so the reference still passes and
        // the attack still fails.
        let mut bare = task.clone();
        if let Payload::Code(c) = &mut bare.payload {
            if let CodeHarness::Mbpp { imports, .. } = &mut c.harness {
                imports.clear();
            }
        }
        let ok = v.verify(&bare, reference).expect("verdict");
        assert!(ok.passed(), "{} without imports: {:?}", task.id, code(&ok));
        let verdict = v.verify(&bare, &attack).expect("verdict");
        assert!(!verdict.passed(), "{} without imports passed: {:?}", task.id, code(&verdict));
    }
}

#[test]
fn a_module_the_tests_read_never_comes_from_the_program() {
    // MBPP 596 reads `sys` in its asserts. A program defining its own `sys` (a class whose
    // `getsizeof` agrees with the function under test) fails; the reference passes.
    let path = datasets_dir().join("mbpp/sanitized-mbpp.json");
    let tasks = load_mbpp(&path, MbppSplit::All).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let task = tasks.iter().find(|t| t.id.ends_with("/596")).expect("mbpp 596");
    let own = "class sys:\n    @staticmethod\n    def getsizeof(x):\n        return 0\n\ndef tuple_size(t):\n    return 0\n";
    let verdict = verifier().verify(task, own).expect("verdict");
    assert!(!verdict.passed(), "{:?}", code(&verdict));
    let ok = verifier().verify(task, task.reference_solution().expect("reference")).expect("verdict");
    assert!(ok.passed(), "{:?}", code(&ok));
}

#[test]
fn patched_random_state_does_not_reach_the_tests() {
    // Tests that draw random inputs: making the program's `random` degenerate (a class
    // attribute, or the module's hidden instance) leaves the tests' own `random` untouched.
    let task = Task {
        id: "attack/random".into(),
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::HumanEval {
                prompt: "def double(x):\n".into(),
                test: "import random\ndef check(candidate):\n    for _ in range(20):\n        x = random.randint(0, 1000)\n        assert candidate(x) == 2 * x\n".into(),
                entry_point: "double".into(),
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    };
    for patch in [
        "import random\nrandom.Random._randbelow = lambda self, n: 0\n",
        "import random\nrandom._inst.random = lambda: 0.0\nrandom.randint = lambda a, b: a\n",
    ] {
        let c = outcome_of_task(&task, &format!("    return 0\n{patch}"));
        assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{patch}\n{c:?}");
    }
    let ok = short_verifier().verify(&task, "    return 2 * x\n").unwrap();
    assert!(ok.passed(), "{:?}", code(&ok));
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
fn a_test_that_hands_over_a_function_is_not_supported() {
    // A test-defined function cannot cross to the candidate's instance (code never crosses),
    // so such a task is "not supported": an error, never a verdict and never a pass, whatever
    // the completion.
    let task = hands_over_functions();
    for completion in ["    return f(x)\n", "    return f(x) + 1\n"] {
        let e = short_verifier().verify(&task, completion).expect_err("not supported");
        assert!(matches!(e, VerifierError::Unsupported { .. }), "{e}");
        assert!(e.to_string().contains("not supported"), "{e}");
    }
    // Builtin functions cross by name: `candidate(abs, -1)` is judged.
    let mut builtin = hands_over_functions();
    if let Payload::Code(CodePayload { harness: CodeHarness::HumanEval { test, .. }, .. }) =
        &mut builtin.payload
    {
        *test = "def check(candidate):\n    for i in range(3):\n        assert candidate(abs, -i) == i + 1\n"
            .into();
    }
    assert!(short_verifier().verify(&builtin, "    return f(x) + 1\n").unwrap().passed());
    assert!(!short_verifier().verify(&builtin, "    return f(x)\n").unwrap().passed());
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
    // Handing a test-defined checker over is not supported (see above): an error, not a pass.
    let swallow = "    if check is None:\n        return 0\n    try:\n        check(6)\n    except BaseException:\n        pass\n    return 0\n";
    let e = short_verifier().verify(&task, swallow).expect_err("not supported");
    assert!(matches!(e, VerifierError::Unsupported { .. }), "{e}");
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
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
    // A metaclass that claims its class equals `int` is not mistaken for one.
    let meta = "    class M(type):\n        def __hash__(cls): return hash(int)\n        def __eq__(cls, o): return True\n    class Y(metaclass=M):\n        def __eq__(self, o): return True\n        def __hash__(self): return 0\n    return Y()\n";
    let c = outcome_of_task(&task, meta);
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
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
    // The program can only break its own instance (a serve loop that returns no string traps).
    let c = outcome_of(&format!("{WRONG}{patch}"));
    assert!(matches!(c.outcome, CodeOutcome::WrongAnswer | CodeOutcome::RuntimeError), "{c:?}");
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
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{c:?}");
}
