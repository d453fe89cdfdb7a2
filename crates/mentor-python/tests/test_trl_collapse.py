"""Collapse on correctness in TRL: ``Intervention(correctness=...)`` and MentorGRPOTrainer's
rollout deciding "collapsed" and "rescued" on it, while the advantages keep the shaped reward.
The trainer runs on the fake TRL of ``_fake_trl`` (no torch): generation is scripted, the
rewards, the monitor and the mentor are the real ones."""

import importlib
import sys
import unittest

import mentor_rl
from mentor_rl import trl as mtrl

import _fake_trl

QUESTION = (
    "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins for her "
    "friends every day with four. She sells the remainder at the farmers' market daily for $2 per fresh duck egg. "
    "How much in dollars does she make every day at the farmers' market?"
)
GOLD = "Janet sells 16 - 3 - 4 = 9 duck eggs a day.\nShe makes 9 * 2 = $18 every day.\n#### 18"
# Wrong answers in the expected format: a format reward gives them credit.
WRONG = ["16 - 3 = 13. 13 * 2 = 26, so \\boxed{26}", "16 - 3 - 4 = 9. 9 * 3 = 27, so \\boxed{27}"] * 2
RIGHT = "16 - 3 - 4 = 9 and 9 * 2 = 18, so \\boxed{18}"


def format_reward(completions, **kwargs):
    """Shaped: 1 for an answer in \\boxed{}, right or wrong."""
    return [1.0 if "\\boxed{" in mtrl.completion_text(c) else 0.0 for c in completions]


def _trainer_class():
    sys.modules.pop("mentor_rl.trl", None)
    return importlib.import_module("mentor_rl.trl").MentorGRPOTrainer


def _policy(unhinted, hinted):
    """Group k's unhinted prompt ``Q<k>`` gets ``unhinted[k]`` (one text per row, in order);
    a hinted prompt gets ``hinted``."""
    seen = {}

    def generate(texts):
        out = []
        for t in texts:
            if "Hint:" in t:
                out.append(hinted)
                continue
            k = int(t[1:])
            j = seen.get(k, 0)
            seen[k] = j + 1
            out.append(unhinted[k][j % len(unhinted[k])])
        return out

    return generate


def _rows(n_groups, g, **columns):
    return [dict({"prompt": f"Q{k}"}, **{c: v[k] for c, v in columns.items()}) for k in range(n_groups) for _ in range(g)]


def _math_rows(n_groups, g):
    return _rows(n_groups, g, question=[QUESTION] * n_groups, answer=[GOLD] * n_groups)


class Correctness(unittest.TestCase):
    def test_default_is_our_reward_function(self):
        c = mtrl._resolve_correctness(None, [format_reward, mtrl.math_reward])
        self.assertIs(c.func, mtrl.math_reward)
        self.assertEqual(c.index, 1)
        code = mtrl.CodeReward(name="tests_passed")
        self.assertIs(mtrl._resolve_correctness(None, [code]).func, code)

        class Timed:  # a wrapper that keeps its function's verdicts (as crates/mentor-python/bench does)
            __name__ = "timed"
            last_verdicts: list = []

            def __call__(self, completions, **kwargs):
                return [0.0] * len(completions)

        timed = Timed()
        self.assertIs(mtrl._resolve_correctness(None, [format_reward, timed]).func, timed)

    def test_no_default_and_none_named_is_an_error(self):
        with self.assertRaises(ValueError) as e:
            mtrl._resolve_correctness(None, [format_reward])
        msg = str(e.exception)
        self.assertIn("intervention.correctness", msg)
        self.assertIn("format_reward", msg)
        self.assertIn("math_reward", msg)

    def test_named_and_callable(self):
        def accuracy(completions, **kwargs):
            return [1.0] * len(completions)

        c = mtrl._resolve_correctness("accuracy", [format_reward, accuracy])
        self.assertEqual((c.func, c.index, c.name), (accuracy, 1, "accuracy"))
        with self.assertRaisesRegex(ValueError, r"no reward function is named 'acc'.*\['format_reward', 'accuracy'\]"):
            mtrl._resolve_correctness("acc", [format_reward, accuracy])
        own = mtrl._resolve_correctness(lambda completions, **kw: [True] * len(completions), [format_reward])
        self.assertIsNone(own.index)
        self.assertIs(mtrl._resolve_correctness(accuracy, [format_reward, accuracy]).index, 1)

    def test_values_read_as_correct(self):
        c = mtrl._resolve_correctness(format_reward, [format_reward])
        self.assertEqual(
            c.flags([True, False, 1, 0, 1.0, 0.99, 2.5, None, float("nan"), 0.5]),
            [True, False, True, False, True, False, True, False, False, False],
        )

    def test_verdicts_decide_for_verdict_keeping_functions(self):
        reward = mtrl.MathReward(threads=1)
        values = reward(["\\boxed{18}", "\\boxed{17}"], answer=["18", "18"])
        c = mtrl._resolve_correctness(None, [reward])
        self.assertEqual(c.flags(values), [True, False])

    def test_intervention_field(self):
        self.assertIsNone(mtrl.Intervention().correctness)
        self.assertEqual(mtrl.Intervention.from_dict({"correctness": "accuracy"}).correctness, "accuracy")
        for bad in ("", 3):
            with self.assertRaisesRegex(ValueError, "correctness"):
                mtrl.Intervention(correctness=bad)


class TrainerOnFakeTrl(unittest.TestCase):
    """MentorGRPOTrainer's rollout (one generation batch of 2 groups of 4) on the fake TRL."""

    def setUp(self):
        self.fakes = _fake_trl.installed()
        self.fakes.__enter__()
        self.addCleanup(self.fakes.__exit__, None, None, None)
        self.Trainer = _trainer_class()

    def make(self, policy, reward_funcs, **kwargs):
        trainer = self.Trainer(reward_funcs=reward_funcs, num_generations=4, policy=policy, **kwargs)
        # What TRL does after the rollout (advantages, the loss) needs torch: not here.
        trainer._mentor_generate_and_score = lambda inputs, run: run()
        return trainer

    def step(self, trainer, rows):
        out = trainer._generate_and_score_completions(rows)
        return out, {k: v[-1] for k, v in trainer._metrics["train"].items()}

    def test_construction_needs_a_correctness(self):
        with self.assertRaisesRegex(ValueError, "intervention.correctness.*format_reward"):
            self.Trainer(reward_funcs=[format_reward], num_generations=4)
        t = self.Trainer(reward_funcs=[format_reward], num_generations=4, intervention={"correctness": "format_reward"})
        self.assertEqual(t._correctness.name, "format_reward")
        with self.assertRaisesRegex(ValueError, "rollout_func"):
            self.Trainer(reward_funcs=[mtrl.math_reward], rollout_func=lambda p, t: {})

    def test_a_format_reward_on_wrong_answers_does_not_hide_a_collapse(self):
        mixed = [RIGHT, "\\boxed{2}", "no idea", "\\boxed{3}"]
        trainer = self.make(
            _policy([WRONG, mixed], hinted=RIGHT),  # shaped reward 1.0 for each WRONG (format), none correct
            [mtrl.MathReward(threads=1), format_reward],
            mentor=mentor_rl.Mentor("rules"),
            intervention={"credit": "in_context"},  # a dict: mtrl is not the module the fakes re-imported
        )
        out, m = self.step(trainer, _math_rows(2, 4))
        self.assertEqual((m["mentor/zrf"], m["mentor/interventions"], m["mentor/rescued"]), (0.5, 1.0, 1.0))
        self.assertEqual(m["mentor/hinted_rows"], 4.0)
        self.assertEqual(m["mentor/hinted_reward"], 2.0)  # correct (1) + format (1): the shaped reward
        texts = trainer._tokenizer.batch_decode(out["completion_ids"])
        self.assertEqual(texts[:4], [RIGHT] * 4)  # the collapsed group, hinted
        self.assertEqual(texts[4:], mixed)  # the group with a correct answer, untouched
        self.assertIn("Hint:", trainer._tokenizer.batch_decode(out["prompt_ids"])[0])  # in_context

    def test_a_formatted_wrong_hinted_answer_is_no_rescue(self):
        trainer = self.make(
            _policy([WRONG, WRONG], hinted=WRONG[1]),
            [mtrl.MathReward(threads=1), format_reward],
            mentor=mentor_rl.Mentor("rules"),
            intervention={"max_groups": 1},
        )
        _, m = self.step(trainer, _math_rows(2, 4))
        self.assertEqual((m["mentor/zrf"], m["mentor/interventions"], m["mentor/rescued"]), (1.0, 1.0, 0.0))
        # Not rescued, so it escalated through every level: 1, 2 and 3.
        self.assertEqual((m["mentor/level_1"], m["mentor/level_2"], m["mentor/level_3"]), (1.0, 1.0, 1.0))
        self.assertEqual(trainer._mentor_hinted_calls, [4, 4, 4])

    def test_the_named_correctness_decides(self):
        # A 0/1 accuracy of the user's own, named: group 0 is "correct" by it, group 1 is not.
        def accuracy(completions, answer, **kwargs):
            return [float(mtrl.completion_text(c).strip() == a) for c, a in zip(completions, answer)]

        trainer = self.make(
            _policy([["18", "1", "2", "3"], ["\\boxed{17}"] * 4], hinted="x"),
            [accuracy, format_reward],
            intervention={"correctness": "accuracy"},
        )
        _, m = self.step(trainer, _rows(2, 4, answer=["18", "18"]))
        self.assertEqual(m["mentor/zrf"], 0.5)  # group 1 only: its format reward does not count
        self.assertEqual(m["mentor/interventions"], 0.0)  # no mentor: vanilla GRPO with the metrics

    def test_a_correctness_callable_of_its_own(self):
        calls = []

        def judge(prompts, completions, **kwargs):
            calls.append(len(completions))
            return [False] * len(completions)

        trainer = self.make(_policy([[RIGHT] * 4], hinted="x"), [mtrl.math_reward], intervention={"correctness": judge})
        _, m = self.step(trainer, _math_rows(1, 4))
        self.assertEqual((m["mentor/zrf"], calls), (1.0, [4]))  # judge says no, whatever math_reward says

    def test_partially_passing_code_is_collapsed(self):
        try:
            sandbox = mentor_rl.CodeSandbox(reward="fraction_passed")
        except mentor_rl.RuntimeMissingError as e:
            self.skipTest(str(e))
        tests = ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]
        half = "def add(a, b):\n    return 3\n"  # passes the first test only: reward 0.5
        right = "def add(a, b):\n    return a + b\n"
        reward = mtrl.CodeReward(sandbox=sandbox)
        trainer = self.make(_policy([[half] * 4, [half, half, right, half]], hinted=right), [reward])
        _, m = self.step(trainer, _rows(2, 4, tests=[tests, tests]))
        self.assertEqual([v.reward for v in reward.last_verdicts], [0.5] * 4 + [0.5, 0.5, 1.0, 0.5])
        self.assertEqual(m["mentor/zrf"], 0.5)  # group 0: every attempt has partial credit, none passes


if __name__ == "__main__":
    unittest.main()
