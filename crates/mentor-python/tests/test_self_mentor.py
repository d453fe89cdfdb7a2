"""``Mentor("self")``: the learner writes its own diagnosis and hint with the ``llm`` role
prompts, through a :class:`mentor_rl.MentorSession` (prompt -> reply -> ... -> guarded result),
alone and inside MentorGRPOTrainer's rollout on the fake TRL of ``_fake_trl`` (no torch):
generation is scripted, the sessions, the guard, the rewards and the monitor are the real ones."""

import importlib
import json
import sys
import unittest

import mentor_rl
from mentor_rl import trl as mtrl

import _fake_trl
from test_trl_collapse import GOLD, QUESTION, RIGHT, WRONG

TASK = {"question": QUESTION, "answer": GOLD, "id": "gsm8k/janet"}
DIAGNOSIS = {
    "category": "wrong_method",
    "shared_mode": "forgets the four eggs used for muffins",
    "evidence": ["16 - 3 = 13"],
    "first_wrong_step": 1,
    "confidence": 0.8,
}
HINT = "Count every use of the eggs before you sell the rest."


def reply_to(text):
    """A well-behaved learner: JSON in a chatty reply, for the diagnoser and for the tutor."""
    if "You are the diagnoser" in text:
        return "Let me look. " + json.dumps(DIAGNOSIS)
    if "You are a tutor" in text:
        return json.dumps({"hint": HINT}) + " Good luck!"
    raise AssertionError(f"not a mentor prompt: {text[:60]!r}")


def failed():
    verdicts = mentor_rl.verify_math(["18"] * len(WRONG), WRONG)
    return list(WRONG), verdicts


class Session(unittest.TestCase):
    def test_intervene_with_a_generate_callable(self):
        seen = []

        def generate(messages):
            seen.append(messages)
            self.assertEqual([m["role"] for m in messages], ["system", "user"])
            return reply_to(messages[0]["content"])

        mentor = mentor_rl.Mentor("self")
        self.assertTrue(mentor.writes_with_learner)
        self.assertFalse(mentor_rl.Mentor("rules").writes_with_learner)
        attempts, verdicts = failed()
        out = mentor.intervene(TASK, attempts, verdicts, level=2, generate=generate)
        self.assertEqual(out["mentor"], "self")
        self.assertEqual(out["diagnosis"]["category"], "wrong_method")
        self.assertEqual(out["diagnosis"]["shared_mode"], DIAGNOSIS["shared_mode"])
        self.assertEqual((out["hint"]["text"], out["hint"]["level"]), (HINT, 2))
        self.assertEqual(out["guard"]["outcome"], "accepted")
        self.assertEqual(len(seen), 2)
        self.assertIn("16 - 3 = 13", seen[0][1]["content"])  # the attempts reach the diagnoser
        self.assertIn("forgets the four eggs", seen[1][1]["content"])  # the diagnosis reaches the tutor
        self.assertEqual(mentor.fallbacks, 0)

    def test_sessions_step_by_step_and_the_guard_on_the_learners_hint(self):
        mentor = mentor_rl.Mentor("self")
        attempts, verdicts = failed()
        s = mentor.begin(TASK, attempts, verdicts, level=1)
        self.assertFalse(s.done)
        with self.assertRaisesRegex(mentor_rl.MentorError, "not over"):
            s.result()
        s.answer(json.dumps(DIAGNOSIS))
        s.answer(json.dumps({"hint": "Subtract 3 and 4 from 16, then double: 18."}))
        self.assertTrue(s.done)
        self.assertIsNone(s.prompt())
        out = s.result()
        self.assertEqual(out["guard"]["outcome"], "redacted")
        self.assertNotIn("18", out["hint"]["text"])  # the learner leaked the answer; the guard took it out
        self.assertEqual((s.turns, s.fallbacks), (2, 0))
        with self.assertRaises(mentor_rl.MentorError):
            s.answer("{}")

    def test_unusable_replies_fall_back_to_rules_and_are_counted(self):
        mentor = mentor_rl.Mentor("self")
        attempts, verdicts = failed()
        out = mentor.intervene(TASK, attempts, verdicts, generate=lambda messages: "I do not know JSON.")
        self.assertIsNotNone(out["hint"])  # the rules diagnoser and tutor stepped in
        self.assertEqual(mentor.fallbacks, 2)

    def test_a_group_with_a_pass_needs_no_session(self):
        mentor = mentor_rl.Mentor("self")
        verdicts = mentor_rl.verify_math(["18", "18"], [RIGHT, WRONG[0]])
        self.assertIsNone(mentor.begin(TASK, [RIGHT, WRONG[0]], verdicts))

    def test_bad_arguments(self):
        attempts, verdicts = failed()
        with self.assertRaisesRegex(ValueError, "generate="):
            mentor_rl.Mentor("self").intervene(TASK, attempts, verdicts)
        with self.assertRaisesRegex(ValueError, "generate is only read"):
            mentor_rl.Mentor("rules").intervene(TASK, attempts, verdicts, generate=lambda m: "")
        with self.assertRaisesRegex(ValueError, "only backend=\"self\""):
            mentor_rl.Mentor("rules").begin(TASK, attempts, verdicts)
        with self.assertRaisesRegex(ValueError, "base_url is only read"):
            mentor_rl.Mentor("self", base_url="http://127.0.0.1:1/v1")
        with self.assertRaisesRegex(ValueError, "generate must return"):
            mentor_rl.Mentor("self").intervene(TASK, attempts, verdicts, generate=lambda m: 3)


def _policy(hinted_prompts):
    """Group prompts ``Q<k>`` fail (``WRONG``); mentor prompts get the learner's JSON replies;
    a hinted prompt (its text recorded in ``hinted_prompts``) gets ``RIGHT``."""

    def generate(texts):
        out = []
        for t in texts:
            if t.startswith("Q") and "Hint:" in t:
                hinted_prompts.append(t)
                out.append(RIGHT)
            elif t.startswith("Q"):
                out.append(WRONG[len(out) % len(WRONG)])
            else:
                out.append(reply_to(t))
        return out

    return generate


class TrainerOnFakeTrl(unittest.TestCase):
    """MentorGRPOTrainer with ``Mentor("self")``: the mentor's prompts go through TRL's
    generation path, in calls of equal width on every process."""

    def setUp(self):
        self.fakes = _fake_trl.installed()
        self.fakes.__enter__()
        self.addCleanup(self.fakes.__exit__, None, None, None)
        sys.modules.pop("mentor_rl.trl", None)
        self.Trainer = importlib.import_module("mentor_rl.trl").MentorGRPOTrainer

    def run_step(self, other=None):
        hinted = []
        trainer = self.Trainer(
            reward_funcs=[mtrl.MathReward(threads=1)],
            num_generations=4,
            policy=_policy(hinted),
            mentor=mentor_rl.Mentor("self"),
            intervention={"start_level": 2},
        )
        trainer._mentor_generate_and_score = lambda inputs, run: run()
        if other is not None:  # another process's counts, one per collective `_max` call
            widths = iter(other)
            trainer._max = lambda n: max(n, next(widths))
        rows = [{"prompt": "Q0", "question": QUESTION, "answer": GOLD} for _ in range(4)]
        out = trainer._generate_and_score_completions(rows)
        metrics = {k: v[-1] for k, v in trainer._metrics["train"].items()}
        return trainer, out, metrics, hinted

    def test_the_learner_writes_the_hint_of_its_hinted_round(self):
        trainer, out, m, hinted = self.run_step()
        self.assertEqual(len(hinted), 4)
        self.assertTrue(all(p.endswith("\n\nHint: " + HINT) for p in hinted), hinted[0])
        self.assertEqual((m["mentor/interventions"], m["mentor/rescued"], m["mentor/hinted_rows"]), (1.0, 1.0, 4.0))
        self.assertEqual((m["mentor/self_turns"], m["mentor/self_fallbacks"]), (2.0, 0.0))
        # Tokens are characters in the fake: the two replies' lengths.
        replies = ["Let me look. " + json.dumps(DIAGNOSIS), json.dumps({"hint": HINT}) + " Good luck!"]
        self.assertEqual(m["mentor/self_tokens"], float(sum(map(len, replies))))
        self.assertGreaterEqual(m["mentor/seconds"], 0.0)
        self.assertEqual(trainer._mentor_self_calls, [1, 1])  # the diagnoser's turn, the tutor's turn
        texts = trainer._tokenizer.batch_decode(out["completion_ids"])
        self.assertEqual(texts, [RIGHT] * 4)

    def test_every_process_makes_the_busiest_ones_calls(self):
        # The other process, one value per collective: asking its mentor (3 sessions open for
        # two turns, then none), then sampling 3 hinted groups, then done.
        asking = sys.modules["mentor_rl._trl_trainer"]._ASKING
        trainer, _, m, hinted = self.run_step(other=[asking, 3, 3, 0, 3, 0])
        self.assertEqual(trainer._mentor_self_calls, [3, 3])  # padded to the busiest process's width
        self.assertEqual(trainer._mentor_hinted_calls, [12])
        self.assertEqual(len(hinted), 4)  # the padding rows' outputs are dropped
        self.assertEqual(m["mentor/self_turns"], 2.0)

    def test_the_rules_mentor_logs_no_self_cost(self):
        trainer = self.Trainer(
            reward_funcs=[mtrl.MathReward(threads=1)], num_generations=4, policy=_policy([]), mentor=mentor_rl.Mentor("rules")
        )
        trainer._mentor_generate_and_score = lambda inputs, run: run()
        trainer._generate_and_score_completions([{"prompt": "Q0", "question": QUESTION, "answer": GOLD}] * 4)
        self.assertNotIn("mentor/self_tokens", trainer._metrics["train"])
        self.assertEqual(trainer._mentor_self_calls, [])


if __name__ == "__main__":
    unittest.main()
