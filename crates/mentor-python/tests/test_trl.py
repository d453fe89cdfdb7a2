"""mentor_rl.trl without torch: the reward functions with TRL's signature and the intervention
settings (MentorGRPOTrainer's rollout runs on a fake TRL in test_trl_collapse.py; with torch
and trl, under `cargo xtask trl`)."""

import importlib.util
import unittest

import mentor_rl
from mentor_rl import trl as mtrl
from _support import code_reward


class MathReward(unittest.TestCase):
    def test_plain_and_conversational_completions(self):
        completions = [
            "9 * 2 = 18, so the answer is \\boxed{18}",
            [{"role": "assistant", "content": "The answer is 17."}],
            "I do not know.",
        ]
        rewards = mtrl.math_reward(completions, answer=["x #### 18", "18", "18"], prompts=["p"] * 3)
        self.assertEqual(rewards, [1.0, 0.0, 0.0])
        verdicts = mtrl.math_reward.last_verdicts
        self.assertEqual(len(verdicts), 3)
        self.assertTrue(verdicts[0].correct)
        self.assertEqual(verdicts[1].feedback["outcome"], "wrong_value")
        self.assertEqual(verdicts[1].extracted, "17")
        self.assertEqual(verdicts[2].feedback["outcome"], "no_answer")
        # A hedged answer is no answer: every word of the answer region must be read.
        [v] = mtrl.MathReward()([[{"role": "assistant", "content": "I think it is 17."}]], answer=["17"], prompts=["p"])
        self.assertEqual(v, 0.0)

    def test_equals_verify_math(self):
        golds = ["\\frac{1}{2}", "18", "1,234"]
        texts = ["$\\boxed{0.5}$", "\\boxed{18.0}", "The total is 1234."]
        expected = [v.reward for v in mentor_rl.verify_math(golds, texts)]
        self.assertEqual(mtrl.MathReward(threads=1)(texts, answer=golds), expected)

    def test_numeric_answers_and_names(self):
        self.assertEqual(mtrl.math_reward(["\\boxed{7}"], answer=[7]), [1.0])
        self.assertEqual(mtrl.math_reward.__name__, "math_reward")
        self.assertEqual(mtrl.MathReward(name="acc").__name__, "acc")

    def test_bad_arguments_name_the_column(self):
        with self.assertRaisesRegex(ValueError, "answer"):
            mtrl.math_reward(["x"])
        with self.assertRaisesRegex(ValueError, "answer: 2 values for 1 completions"):
            mtrl.math_reward(["x"], answer=["1", "2"])
        with self.assertRaisesRegex(ValueError, "completions"):
            mtrl.math_reward([42], answer=["1"])

    def test_completion_text(self):
        self.assertEqual(mtrl.completion_text("abc"), "abc")
        self.assertEqual(
            mtrl.completion_text([{"role": "assistant", "content": "a"}, {"role": "tool", "content": "t"},
                                  {"role": "assistant", "content": [{"type": "text", "text": "b"}]}]),
            "ab",
        )


class CodeReward(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.reward = code_reward()

    def test_mbpp_and_humaneval_rows(self):
        good = "```python\ndef add(a, b):\n    return a + b\n```"
        bad = "def add(a, b):\n    return a - b\n"
        humaneval_tests = "def check(candidate):\n    assert candidate(2, 3) == 5\n"
        rewards = self.reward(
            [good, bad, [{"role": "assistant", "content": good}]],
            tests=[["assert add(1, 2) == 3"], ["assert add(1, 2) == 3"], humaneval_tests],
            entry_point=[None, None, "add"],
            code_prompt=[None, None, 'def add(a, b):\n    """The sum of a and b."""\n'],
        )
        self.assertEqual(rewards, [1.0, 0.0, 1.0])
        self.assertEqual(self.reward.last_verdicts[1].outcome, "wrong_answer")
        self.assertEqual(self.reward.last_verdicts[1].feedback["failed_test"]["index"], 0)

    def test_hostile_code_scores_zero(self):
        attack = "import os\nos.system('echo pwned')\ndef add(a, b):\n    return a + b\n"
        rewards = self.reward([attack], tests=[["assert add(1, 2) == 3"]])
        self.assertEqual(rewards, [0.0])

    def test_missing_tests_column(self):
        with self.assertRaisesRegex(ValueError, "tests"):
            self.reward(["x"])


class InterventionSettings(unittest.TestCase):
    def test_defaults_follow_the_rust_trainer(self):
        cfg = mtrl.Intervention()
        self.assertEqual((cfg.trigger, cfg.start_level, cfg.assembly, cfg.credit), ("per_group", 1, "replace", "prefix"))
        self.assertEqual(cfg.hint_template, "\n\nHint: {hint}")
        self.assertEqual(cfg.memory_fade_after, 1)

    def test_bad_settings_name_the_field(self):
        for kwargs, field in [
            ({"trigger": "always"}, "trigger"),
            ({"assembly": "augment"}, "assembly"),
            ({"credit": "magic"}, "credit"),
            ({"start_level": 4}, "start_level"),
            ({"start_level": 3, "max_level": 2}, "start_level"),
            ({"max_groups": -1}, "max_groups"),
            ({"hint_template": "no placeholder"}, "hint_template"),
            ({"memory_fade_after": 0}, "memory_fade_after"),
        ]:
            with self.assertRaisesRegex(ValueError, field, msg=str(kwargs)):
                mtrl.Intervention(**kwargs)
        with self.assertRaisesRegex(ValueError, "unknown settings \\['budget'\\]"):
            mtrl.Intervention.from_dict({"budget": 3})
        self.assertEqual(mtrl.Intervention.from_dict({"credit": "in_context"}).credit, "in_context")

    def test_trainer_import_needs_trl(self):
        if importlib.util.find_spec("trl") is not None and importlib.util.find_spec("torch") is not None:
            self.skipTest("trl is installed here; `cargo xtask trl` exercises the trainer")
        with self.assertRaises(ImportError):
            mtrl.MentorGRPOTrainer  # noqa: B018


if __name__ == "__main__":
    unittest.main()
