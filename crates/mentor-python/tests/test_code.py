"""CodeSandbox from Python: HumanEval verdicts equal the CLI's, the attack suite gives no pass,
MBPP and stdin/stdout formats, argument errors."""

import os
import tempfile
import unittest

import mentor_rl
from _support import datasets_dir, read_jsonl, run_cli

_SANDBOX = None


def sandbox():
    """One sandbox for the module (starting it loads the compiled runtime)."""
    global _SANDBOX
    if _SANDBOX is None:
        _SANDBOX = mentor_rl.CodeSandbox()
    return _SANDBOX


def short_sandbox():
    """The Rust attack suite's short limits (crates/mentor-verify-code/tests/it/main.rs)."""
    return mentor_rl.CodeSandbox(
        cpu_time=1.5, wall_time=3.0, memory_bytes=128 << 20, stdout_bytes=16 << 10, stderr_bytes=16 << 10
    )


def humaneval():
    return read_jsonl(datasets_dir() / "humaneval/HumanEval.jsonl")


def mutant(solution: str) -> str:
    """The CLI end-to-end test's mutant: every `return x` returns None instead."""
    return solution.replace("return ", "return None and ")


class HumanEval(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.records = humaneval()
        programs, tests, entry_points, prompts = [], [], [], []
        for r in cls.records:
            for completion in (r["canonical_solution"], mutant(r["canonical_solution"])):
                programs.append(completion)
                tests.append(r["test"])
                entry_points.append(r["entry_point"])
                prompts.append(r["prompt"])
        cls.programs = programs
        cls.verdicts = sandbox().verify_many(
            programs, tests=tests, format="humaneval", entry_points=entry_points, prompts=prompts
        )

    def test_canonical_solutions_pass_and_mutants_fail(self):
        canonical = self.verdicts[0::2]
        mutants = self.verdicts[1::2]
        self.assertEqual(len(canonical), len(self.records))
        failed = [r["task_id"] for r, v in zip(self.records, canonical) if not v.correct]
        self.assertEqual(failed, [], "canonical solutions that did not pass")
        self.assertTrue(all(v.reward == 1.0 and v.outcome == "passed" for v in canonical))
        # A few mutants still pass (functions whose result is never checked against None).
        caught = sum(not v.correct for v in mutants)
        self.assertGreaterEqual(caught, 0.9 * len(mutants), f"only {caught} of {len(mutants)} mutants failed")
        first = mutants[2]  # HumanEval/2, the e2e test's mutant
        self.assertFalse(first.correct)
        self.assertEqual(first.reward, 0.0)
        self.assertEqual(first.feedback["domain"], "code")
        self.assertIsInstance(first.feedback["failed_test"], dict)

    def test_every_verdict_equals_the_cli_line(self):
        lines = []
        for i, r in enumerate(self.records):
            for j, completion in enumerate((r["canonical_solution"], mutant(r["canonical_solution"]))):
                lines.append(dict(r, completion=completion, id=f"{i}/{j}"))
        cli = run_cli(["verify", "code", "--format", "humaneval"], lines)
        self.assertEqual(len(cli), len(self.verdicts))
        for k, (line, verdict) in enumerate(zip(cli, self.verdicts)):
            with self.subTest(id=line["id"]):
                self.assertEqual(verdict.correct, line["passed"])
                self.assertEqual(verdict.reward, line["reward"])
                ours, theirs = verdict.feedback, line["feedback"]
                if "random" in self.records[k // 2]["test"]:
                    # Tests that draw random inputs (HumanEval/38, /50): the failing case's
                    # values differ from run to run; everything else must agree.
                    for fb in (ours, theirs):
                        if fb.get("failed_test"):
                            for key in ("source", "input", "expected", "actual"):
                                fb["failed_test"].pop(key, None)
                        fb.pop("detail", None)
                self.assertEqual(ours, theirs)

    def test_one_program_through_verify(self):
        r = self.records[0]
        v = sandbox().verify(
            r["prompt"] + r["canonical_solution"], tests=r["test"], entry_point=r["entry_point"], prompt=r["prompt"]
        )
        self.assertTrue(v.correct)
        markdown = "Here it is:\n```python\n" + r["prompt"] + "    return False\n```\n"
        v = sandbox().verify(markdown, tests=r["test"], entry_point=r["entry_point"], prompt=r["prompt"])
        self.assertFalse(v.correct)
        self.assertEqual(v.outcome, "wrong_answer")
        self.assertEqual(v.feedback["failed_test"]["index"], 0)


class OtherFormats(unittest.TestCase):
    def test_mbpp(self):
        tests = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]
        self.assertTrue(sandbox().verify("def add(a, b):\n    return a + b\n", tests=tests, format="mbpp").correct)
        v = sandbox().verify("def add(a, b):\n    return a - b\n", tests=tests, format="mbpp")
        self.assertFalse(v.correct)
        self.assertEqual(v.feedback["tests_total"], 2)

    def test_mbpp_partial_credit(self):
        sb = mentor_rl.CodeSandbox(reward="fraction_passed")
        tests = ["assert f(1) == 1", "assert f(2) == 4"]
        v = sb.verify("def f(x):\n    return x\n", tests=tests, format="mbpp")
        self.assertFalse(v.correct)
        self.assertEqual(v.reward, 0.5)

    def test_tuples_are_accepted_where_lists_are(self):
        prog = "print(int(input()) + 1)\n"
        [v] = sandbox().verify_many((prog,), tests=((("1\n", "2"),),), format="stdio")
        self.assertTrue(v.correct)

    def test_stdio(self):
        prog = "a, b = map(int, input().split())\nprint(a + b)\n"
        ok = sandbox().verify(prog, tests=[{"input": "1 2\n", "output": "3"}, ("5 5\n", "10")], format="stdio")
        self.assertTrue(ok.correct)
        bad = sandbox().verify(prog, tests=[("1 2\n", "4")], format="stdio")
        self.assertFalse(bad.correct)


# The attack suite of crates/mentor-verify-code/tests/it/attacks.rs, each appended to
# HumanEval/0's prompt, with the outcomes the Rust suite expects. None may pass.
WRONG = "    return False\n"
ANY = '''
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
'''
SUBCLASS_ROUTE = '''    import ast
    for c in ast.NodeTransformer.__subclasses__():
        for v in list(vars(c).values()):
            gl = getattr(v, "__globals__", None)
            if type(gl) is dict and "_plain" in gl:
                gl["_plain"] = lambda *a: True
                for k in ("check", "__mentor_check__", "_show"):
                    if k in gl:
                        gl[k] = lambda *a: True
    return _Any()
'''
SAVEALL_ROUTE = """    import gc, sys
    gc.set_debug(gc.DEBUG_SAVEALL)
    for probe in (lambda: sys._getframe(5), lambda: 1 / 0):
        try:
            probe()
        except BaseException:
            pass
    gc.collect()
    yes = lambda *a, **k: True
    frames = [o for o in gc.garbage + gc.get_objects() if type(o) is type(sys._getframe())]
    for fr in frames:
        for scope in (fr.f_locals, fr.f_globals):
            try:
                for k in list(scope):
                    if callable(scope[k]) and not isinstance(scope[k], type) and not k.startswith("__"):
                        scope[k] = yes
            except Exception:
                pass
    return _Any()
"""
EXITS = ["import sys\nsys.exit(0)\n", "raise SystemExit\n", "raise SystemExit(0)\n", "import os\nos._exit(0)\n"]
ATTACKS = (
    [
        ("    while True:\n        pass\n", {"timeout"}),
        ("    import time\n    time.sleep(30)\n", {"timeout"}),
        ("    x = 10 ** (10 ** 9)\n    return x\n", {"timeout", "memory_limit"}),
        ("    x = 'a' * (1 << 30)\n", {"memory_limit"}),
        ("    x = []\n    while True:\n        x.append(bytearray(1 << 20))\n", {"memory_limit"}),
        ("    x = bytearray(1 << 30)\n", {"memory_limit"}),
        ("    x = 'a' * 10 ** 10\n", {"runtime_error"}),
        ("    while True:\n        print('A' * 1000)\n", {"output_limit"}),
        ("    import sys\n    while True:\n        sys.stderr.write('E' * 1000)\n", {"output_limit"}),
        ("    def f(n):\n        return f(n + 1)\n    return f(0)\n", {"runtime_error"}),
        (
            "    import sys\n    sys.setrecursionlimit(10 ** 6)\n    def f(n):\n        return f(n + 1)\n    return f(0)\n",
            {"runtime_error", "memory_limit"},
        ),
        ("    return input() == 'x'\n", {"runtime_error"}),
    ]
    + [
        (a, {"runtime_error"})
        for a in [
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
        ]
    ]
    # Introspection works in the candidate's own instance and finds only the program.
    + [
        (a, {"wrong_answer"})
        for a in [
            "    import sys\n    sys._getframe(1).f_locals['passed'] = 99\n    return False\n",
            "    try:\n        raise ValueError\n    except ValueError as e:\n        f = e.__traceback__.tb_frame.f_back\n    return False\n",
            "    import gc\n    gc.get_objects()\n    return False\n",
            "    import sys\n    sys.settrace(lambda *a: None)\n    return False\n",
            "    import inspect\n    inspect.stack()\n    return False\n",
        ]
    ]
    + [(WRONG + e, {"tampered"}) for e in EXITS]
    + [("".join("    " + line + "\n" for line in e.splitlines()), {"tampered"}) for e in EXITS]
    # Patches reach only the candidate's interpreter; the tests run in another instance.
    + [
        (WRONG + p, {"wrong_answer"})
        for p in [
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
        ]
    ]
    # Breaking its own JSON encoder breaks only the program's replies.
    + [
        (
            WRONG
            + "import json.encoder, _json\njson.encoder.encode_basestring_ascii = lambda s: '\"\"'\n_json.encode_basestring_ascii = lambda s: '\"\"'\n",
            {"wrong_answer", "runtime_error"},
        )
    ]
    # A candidate object stays in the candidate's instance: it never decides an assert.
    + [
        (f, {"wrong_answer"})
        for f in [
            "    class Yes:\n        def __eq__(self, other):\n            return True\n        __hash__ = None\n    return Yes()\n",
            "    class T(int):\n        def __eq__(self, other):\n            return True\n        __hash__ = int.__hash__\n    return T(0)\n",
            "    class B:\n        def __bool__(self):\n            return True\n    return B()\n",
        ]
    ]
    + [(SUBCLASS_ROUTE + ANY, {"wrong_answer", "runtime_error"})]
    + [(SAVEALL_ROUTE + ANY, {"wrong_answer", "runtime_error", "timeout", "memory_limit"})]
)


class Attacks(unittest.TestCase):
    def test_the_attack_suite_gives_no_pass(self):
        r = humaneval()[0]
        programs = [a for a, _ in ATTACKS]
        n = len(programs)
        verdicts = short_sandbox().verify_many(
            programs,
            tests=[r["test"]] * n,
            entry_points=[r["entry_point"]] * n,
            prompts=[r["prompt"]] * n,
        )
        self.assertEqual(len(verdicts), n)
        passes = [p for p, v in zip(programs, verdicts) if v.correct or v.reward != 0.0]
        self.assertEqual(passes, [], "attacks that passed")
        for (program, expected), v in zip(ATTACKS, verdicts):
            with self.subTest(program=program):
                self.assertIn(v.outcome, expected, v.feedback)

    def test_the_class_graph_route_fails_on_twenty_tasks(self):
        records = humaneval()[:20]
        verdicts = short_sandbox().verify_many(
            [SUBCLASS_ROUTE + ANY] * len(records),
            tests=[r["test"] for r in records],
            entry_points=[r["entry_point"] for r in records],
            prompts=[r["prompt"] for r in records],
        )
        for r, v in zip(records, verdicts):
            with self.subTest(task=r["task_id"]):
                self.assertFalse(v.correct)
                self.assertIn(v.outcome, ("wrong_answer", "runtime_error"))

    def test_prompt_helpers_come_from_the_prompt(self):
        # HumanEval/32, /38, /50: redefining the helper the tests call does not make a wrong
        # body pass; the tests' instance defines helpers from the prompt alone.
        records = {r["task_id"]: r for r in humaneval()}
        cases = [
            ("HumanEval/38", "    return s\n\ndef encode_cyclic(s):\n    return s\n"),
            ("HumanEval/50", "    return s\n\ndef encode_shift(s):\n    return s\n"),
            ("HumanEval/32", "    return 0.0\n\ndef poly(xs, x):\n    return 0.0\n"),
        ]
        for task_id, completion in cases:
            r = records[task_id]
            with self.subTest(task=task_id):
                v = short_sandbox().verify(completion, tests=r["test"], entry_point=r["entry_point"], prompt=r["prompt"])
                self.assertFalse(v.correct, v.feedback)
                self.assertEqual(v.reward, 0.0)

    def test_mbpp_test_imports_and_random_state_cannot_be_rebound(self):
        fake_math = (
            "def f():\n    return 7\nimport sys\nclass _Yes:\n    def __getattr__(self, name):\n"
            "        return lambda *a, **k: True\nmath = _Yes()\nsys.modules['math'] = math\n"
        )
        v = short_sandbox().verify(fake_math, tests=["assert math.isclose(f(), 0.5)"], format="mbpp", imports=["import math"])
        self.assertFalse(v.correct, v.feedback)
        degenerate = "def double(x):\n    return 0\nimport random\nrandom.Random._randbelow = lambda self, n: 0\n"
        tests = ["import random\nfor _ in range(20):\n    x = random.randint(0, 1000)\n    assert double(x) == 2 * x"]
        v = short_sandbox().verify(degenerate, tests=tests, format="mbpp")
        self.assertFalse(v.correct, v.feedback)
        v = short_sandbox().verify("def double(x):\n    return 2 * x\n", tests=tests, format="mbpp")
        self.assertTrue(v.correct, v.feedback)


class Arguments(unittest.TestCase):
    def test_unknown_format(self):
        with self.assertRaises(ValueError) as e:
            sandbox().verify("x = 1", tests=["assert x == 1"], format="junit")
        self.assertIn("format", str(e.exception))

    def test_humaneval_needs_an_entry_point(self):
        with self.assertRaises(ValueError) as e:
            sandbox().verify("def f(): pass", tests="def check(c): pass")
        self.assertIn("entry_point", str(e.exception))
        with self.assertRaises(ValueError) as e:
            sandbox().verify("def f(): pass", tests="def check(c): pass", entry_point="f; import os")
        self.assertIn("entry_point", str(e.exception))

    def test_humaneval_needs_its_prompt(self):
        # HumanEval/32, /38, /50 test with helpers defined in the prompt: without it the tests
        # would fail on a NameError blamed on the program, so a missing prompt is an error.
        with self.assertRaises(ValueError) as e:
            sandbox().verify("def f():\n    return 1\n", tests="def check(c):\n    assert c() == 1\n", entry_point="f")
        self.assertIn("prompt", str(e.exception))
        v = sandbox().verify(
            "def f():\n    return 1\n", tests="def check(c):\n    assert c() == 1\n", entry_point="f", prompt=""
        )
        self.assertTrue(v.correct, v.feedback)

    def test_verify_many_carries_setup_code_and_imports(self):
        program = "class Node:\n    def __init__(self, v):\n        self.v = v\n\ndef value(n):\n    return n.v\n"
        tests = [["assert value(root) == 3"], ["assert math.isclose(value(Node(2)), 2.0)"]]
        v = sandbox().verify_many(
            [program, program], tests=tests, format="mbpp", setup_codes=["root = Node(3)", None], imports=[None, ["import math"]]
        )
        self.assertEqual([x.correct for x in v], [True, True], [x.feedback for x in v])
        with self.assertRaises(ValueError) as e:
            sandbox().verify_many([program], tests=tests[:1], format="mbpp", setup_codes=[])
        self.assertIn("setup_codes", str(e.exception))
        # Without its setup code the task reads a value nothing defines: it cannot be judged.
        with self.assertRaises(ValueError) as e:
            sandbox().verify_many([program], tests=tests[:1], format="mbpp")
        self.assertIn("test_setup_code", str(e.exception))

    def test_tests_in_the_wrong_shape(self):
        with self.assertRaises(ValueError) as e:
            sandbox().verify("x = 1", tests="assert x == 1", format="mbpp")
        self.assertIn("tests", str(e.exception))
        with self.assertRaises(ValueError) as e:
            sandbox().verify("x = 1", tests=[], format="mbpp")
        self.assertIn("tests", str(e.exception))
        with self.assertRaises(ValueError) as e:
            sandbox().verify("print(1)", tests=[("1",)], format="stdio")
        self.assertIn("tests[0]", str(e.exception))

    def test_verify_many_lengths(self):
        with self.assertRaises(ValueError) as e:
            sandbox().verify_many(["x = 1", "x = 2"], tests=[["assert x == 1"]], format="mbpp")
        self.assertIn("tests", str(e.exception))
        with self.assertRaises(ValueError) as e:
            sandbox().verify_many(["x"], tests=["t"], entry_points=[], format="humaneval")
        self.assertIn("entry_points", str(e.exception))

    def test_bad_limits(self):
        for kwargs, name in [
            ({"cpu_time": 0}, "cpu_time"),
            ({"wall_time": float("nan")}, "wall_time"),
            ({"memory_bytes": 2 << 30}, "memory_bytes"),
            ({"reward": "half"}, "reward"),
            ({"concurrency": 10**6}, "concurrency"),
        ]:
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(ValueError) as e:
                    mentor_rl.CodeSandbox(**kwargs)
                self.assertIn(name, str(e.exception))

    def test_a_missing_runtime_says_to_run_setup(self):
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaises(mentor_rl.RuntimeMissingError) as e:
                mentor_rl.CodeSandbox(assets=empty)
            self.assertIn("cargo xtask setup", str(e.exception))
            self.assertIsInstance(e.exception, mentor_rl.SandboxError)
            self.assertIsInstance(e.exception, mentor_rl.MentorRlError)
            with self.assertRaises(mentor_rl.RuntimeMissingError):
                mentor_rl.CodeSandbox(runtime=os.path.join(empty, "runner.wasm"))

    def test_an_unjudgeable_task_raises_or_scores_zero(self):
        # Test code that does not parse: the task cannot be judged (not the program's fault).
        kwargs = dict(tests="def check(candidate) oops", entry_point="f", prompt="")
        with self.assertRaises((ValueError, mentor_rl.SandboxError)):
            sandbox().verify("def f():\n    return 1\n", **kwargs)
        v = sandbox().verify("def f():\n    return 1\n", errors="verdict", **kwargs)
        self.assertEqual((v.correct, v.reward, v.outcome), (False, 0.0, "verifier_error"))
        with self.assertRaises(ValueError):
            sandbox().verify("x", tests="t", entry_point="f", errors="ignore")


if __name__ == "__main__":
    unittest.main()
