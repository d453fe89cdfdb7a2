"""Mentor, StaticHints, Refinement and CollapseMonitor from Python."""

import re
import unittest

import mentor_rl
from _support import datasets_dir, read_jsonl


def gsm8k_task():
    record = read_jsonl(datasets_dir() / "gsm8k/test.jsonl")[0]
    return {"id": "gsm8k/test/0", "question": record["question"], "answer": record["answer"]}


FAILED = [
    "Janet has 16 eggs. 16 - 3 = 13. 13 * 2 = 26.\n#### 26",
    "16 - 3 - 4 = 9. 9 * 3 = 27\n#### 27",
]


def leaks(text: str, gold: str) -> bool:
    """Whether any number in `text` equals the gold answer."""
    return any(mentor_rl.math_equivalent(gold, n) for n in re.findall(r"-?\d+(?:\.\d+)?", text))


class MentorOnGsm8k(unittest.TestCase):
    def setUp(self):
        self.task = gsm8k_task()
        self.verdicts = mentor_rl.verify_math([self.task["answer"]] * len(FAILED), FAILED)
        self.assertFalse(any(v.correct for v in self.verdicts))

    def test_a_failed_attempt_gets_a_guarded_hint_at_each_level(self):
        mentor = mentor_rl.Mentor()
        for level in (1, 2, 3):
            with self.subTest(level=level):
                out = mentor.intervene(self.task, FAILED, self.verdicts, level=level)
                self.assertIsNotNone(out)
                self.assertEqual(out["mentor"], "rules")
                self.assertEqual(out["diagnosis"]["first_wrong_step"], 0)
                self.assertIn(out["diagnosis"]["category"], ("wrong_method", "arithmetic_slip"))
                hint = out["hint"]
                self.assertEqual(hint["level"], level)
                self.assertEqual(hint["source"], "mentor")
                self.assertTrue(hint["text"])
                self.assertEqual(out["guard"]["outcome"], "accepted")
                shown = hint["text"] + (hint["solution_prefix"] or "")
                self.assertFalse(leaks(shown, "18"), shown)
        # Level 3 gives the reference up to the first wrong step as the start of the answer.
        out = mentor.intervene(self.task, FAILED, self.verdicts, level=3)
        self.assertIn("16 - 3 - 4 = 9", out["hint"]["solution_prefix"])

    def test_default_level_is_the_trainers_start_level(self):
        out = mentor_rl.Mentor().intervene(self.task, FAILED, self.verdicts)
        self.assertEqual(out["hint"]["level"], 1)

    def test_a_group_with_a_pass_needs_no_intervention(self):
        attempts = FAILED + ["9 * 2 = 18\n#### 18"]
        verdicts = mentor_rl.verify_math([self.task["answer"]] * 3, attempts)
        self.assertIsNone(mentor_rl.Mentor().intervene(self.task, attempts, verdicts))

    def test_verdict_dicts_and_serialised_tasks_are_accepted(self):
        dicts = tuple(v.to_dict() for v in self.verdicts)
        out = mentor_rl.Mentor().intervene(self.task, tuple(FAILED), dicts, level=2)
        self.assertEqual(out["hint"]["level"], 2)
        full = {
            "id": "t",
            "prompt": [{"role": "user", "content": self.task["question"]}],
            "payload": {"domain": "math", "answer": "18", "solution": self.task["answer"].split("####")[0]},
        }
        self.assertEqual(mentor_rl.Mentor().intervene(full, FAILED, self.verdicts, level=2), out)

    def test_refinement_redacts_a_leaking_quote(self):
        # The failed answer holds the gold value as an intermediate: the guard removes it.
        attempts = ["She makes 9 * 2 = 18 dollars, plus 2 for the muffins.\n#### 20"]
        verdicts = mentor_rl.verify_math([self.task["answer"]], attempts)
        out = mentor_rl.Refinement().intervene(self.task, attempts, verdicts)
        self.assertIsNone(out["diagnosis"])
        self.assertEqual(out["guard"]["outcome"], "redacted")
        self.assertTrue(out["guard"]["redactions"])
        self.assertFalse(leaks(out["hint"]["text"], "18"), out["hint"]["text"])

    def test_static_hints_are_generic_and_seeded(self):
        a = mentor_rl.StaticHints(7).intervene(self.task, FAILED, self.verdicts)
        b = mentor_rl.StaticHints(7).intervene(self.task, FAILED, self.verdicts)
        self.assertEqual(a, b)
        self.assertIsNone(a["diagnosis"])
        self.assertEqual(a["hint"]["source"], "static")
        again = mentor_rl.StaticHints(7).intervene(self.task, FAILED, self.verdicts, previous_hints=[a["hint"]])
        self.assertNotEqual(again["hint"]["text"], a["hint"]["text"])


class MentorOnCode(unittest.TestCase):
    def test_a_failed_humaneval_attempt_gets_a_hint_without_the_reference(self):
        try:
            sandbox = mentor_rl.CodeSandbox()
        except mentor_rl.RuntimeMissingError as e:
            self.skipTest(str(e))
        r = read_jsonl(datasets_dir() / "humaneval/HumanEval.jsonl")[0]
        attempts = ["    return False\n", "    return len(numbers) > 1\n"]
        verdicts = sandbox.verify_many(
            attempts,
            tests=[r["test"]] * 2,
            entry_points=[r["entry_point"]] * 2,
            prompts=[r["prompt"]] * 2,
        )
        task = {
            "id": r["task_id"],
            "question": r["prompt"],
            "prompt": r["prompt"],
            "tests": r["test"],
            "format": "humaneval",
            "entry_point": r["entry_point"],
            "reference_solution": r["canonical_solution"],
        }
        out = mentor_rl.Mentor().intervene(task, attempts, verdicts, level=2)
        self.assertEqual(out["diagnosis"]["category"], "wrong_output")
        self.assertTrue(out["hint"]["text"])
        self.assertNotIn(r["canonical_solution"].strip(), out["hint"]["text"])


class MentorArguments(unittest.TestCase):
    def setUp(self):
        self.task = gsm8k_task()
        self.verdicts = mentor_rl.verify_math([self.task["answer"]] * 2, FAILED)

    def test_bad_arguments_name_themselves(self):
        m = mentor_rl.Mentor()
        cases = [
            (lambda: m.intervene(self.task, FAILED, self.verdicts[:1]), "verdicts"),
            (lambda: m.intervene(self.task, [], []), "attempts"),
            (lambda: m.intervene(self.task, FAILED, self.verdicts, level=4), "level"),
            (lambda: m.intervene({"question": "q"}, FAILED, self.verdicts), "answer"),
            (lambda: m.intervene("not a dict", FAILED, self.verdicts), "task"),
            (lambda: m.intervene(self.task, FAILED, [1, 2]), "verdicts[0]"),
            (lambda: m.intervene(self.task, FAILED, self.verdicts, previous_hints=[{"x": 1}]), "previous_hints[0]"),
            (lambda: mentor_rl.Mentor("oracle"), "backend"),
            (lambda: mentor_rl.Mentor("llm"), "base_url"),
            (lambda: mentor_rl.Mentor(model="m"), "model"),
            (lambda: mentor_rl.Mentor(prompts="/nonexistent/prompts"), "prompts"),
            (lambda: mentor_rl.Mentor(max_code_overlap=2.0), "max_code_overlap"),
            (lambda: mentor_rl.Mentor("llm", base_url="http://127.0.0.1:9/v1", timeout=1e300), "timeout"),
        ]
        for call, name in cases:
            with self.subTest(name=name):
                with self.assertRaises(ValueError) as e:
                    call()
                self.assertIn(name, str(e.exception))

    def test_the_llm_backend_falls_back_to_rules_when_unreachable(self):
        # Nothing listens on port 9 (discard): every call fails fast and the rules answer.
        m = mentor_rl.Mentor("llm", base_url="http://127.0.0.1:9/v1", model="x", timeout=2.0, retries=0)
        self.assertEqual(m.backend, "llm")
        out = m.intervene(self.task, FAILED, self.verdicts, level=2)
        self.assertEqual(out["mentor"], "llm")
        self.assertTrue(out["hint"]["text"])
        self.assertGreater(m.fallbacks, 0)


class Monitor(unittest.TestCase):
    def test_zrf_zero_std_and_events(self):
        mon = mentor_rl.CollapseMonitor(window=2, raise_above=0.5, clear_below=0.25)
        F, T = False, True
        r = mon.observe([F, F, F, F, T, F, F, F], group_size=4)
        self.assertEqual(r["collapsed"], [0])
        # Without rewards, a pass counts 1.0 and a failure 0.0.
        self.assertEqual((r["zrf"], r["zero_std_frac"], r["mean_reward"]), (0.5, 0.5, 0.125))
        self.assertEqual(r["event"], "quiet")
        r = mon.observe([F] * 8, 4)
        self.assertEqual((r["zrf"], r["window_zrf"], r["event"], r["event_active"]), (1.0, 0.75, "started", True))
        self.assertTrue(mon.in_event)
        r = mon.observe([T, F, T, T, T, T, T, T], 4, rewards=[1.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
        self.assertEqual((r["zrf"], r["zero_std_frac"], r["event"]), (0.0, 0.5, "ongoing"))
        r = mon.observe([T] * 8, 4)
        self.assertEqual(r["event"], "cleared")
        mon.reset()
        self.assertFalse(mon.in_event)

    def test_collapse_is_judged_on_passed_not_on_the_reward(self):
        mon = mentor_rl.CollapseMonitor()
        # fraction_passed code: every attempt passes some tests, none passes them all.
        partial = [0.25, 0.75, 0.5, 0.75]
        # A format bonus (0.2) on wrong answers; the right one scores 1.2.
        shaped = [0.2, 0.2, 1.2, 0.0]
        r = mon.observe([False] * 4 + [False, False, True, False], 4, rewards=partial + shaped)
        self.assertEqual((r["collapsed"], r["zrf"]), ([0], 0.5))
        self.assertAlmostEqual(r["mean_reward"], (2.25 + 1.6) / 8)
        self.assertTrue(mentor_rl.is_collapsed([False, False]))
        self.assertFalse(mentor_rl.is_collapsed([False, True]))

    def test_bad_arguments(self):
        mon = mentor_rl.CollapseMonitor()
        F = False
        for call, name in [
            (lambda: mon.observe([F, F, F], 2), "passed"),
            (lambda: mon.observe([], 2), "passed"),
            (lambda: mon.observe([F, F], 0), "group_size"),
            # The old call, with rewards where the pass flags belong, is refused.
            (lambda: mon.observe([0.0, 1.0], 2), "passed[0]"),
            (lambda: mon.observe([F, 1], 2), "passed[1]"),
            (lambda: mon.observe([F, F], 2, rewards=[0.0]), "rewards"),
            (lambda: mon.observe([F, F], 2, rewards=[0.0, float("nan")]), "rewards[1]"),
            (lambda: mentor_rl.is_collapsed([0.0]), "passed[0]"),
            (lambda: mentor_rl.CollapseMonitor(window=0), "window"),
            (lambda: mentor_rl.CollapseMonitor(raise_above=0.1, clear_below=0.3), "clear_below"),
        ]:
            with self.subTest(name=name):
                with self.assertRaises(ValueError) as e:
                    call()
                self.assertIn(name, str(e.exception))


if __name__ == "__main__":
    unittest.main()
