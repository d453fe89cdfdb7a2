"""One MENTOR step: the Rust trainer's ``Plugin::process`` (through ``_native._plugin_process``,
a scripted rollout) and ``MentorGRPOTrainer``'s rollout on the fake TRL of ``_fake_trl`` (no
torch) are fed the same completions, judged by the real math verifier, with the same mentor
and the same settings; they must ask for the same hinted prompts and make the same rows with
the same credit. Also: :class:`mentor_rl.MentorStep` driven by hand."""

import importlib
import sys
import unittest

import mentor_rl
from mentor_rl import _native
from mentor_rl import trl as mtrl

import _fake_trl

G = 4
QUESTIONS = [
    "Janet's ducks lay 16 eggs per day. She eats three for breakfast and bakes muffins with four. "
    "She sells the rest for $2 each. How much in dollars does she make every day?",
    "What is 2 + 3?",
    "A box holds 7 rows of 6 eggs. How many eggs are in the box?",
]
GOLDS = [
    "Janet sells 16 - 3 - 4 = 9 duck eggs a day.\nShe makes 9 * 2 = $18 every day.\n#### 18",
    "2 + 3 = 5.\n#### 5",
    "There are 7 rows.\nEach row has 6 eggs, so 7 * 6 = 42 eggs.\n#### 42",
]
UNHINTED = [
    ["\\boxed{26}", "\\boxed{27}", "\\boxed{13}", "\\boxed{26}"],  # collapsed
    ["\\boxed{5}", "\\boxed{6}", "\\boxed{4}", "\\boxed{5}"],  # solved
    ["\\boxed{13}", "\\boxed{48}", "\\boxed{36}", "\\boxed{13}"],  # collapsed
]


def make_policy():
    """The scripted learner: unhinted rows get ``UNHINTED``; hinted rows of question 0 are right
    every other row (rescued in round 1); hinted rows of question 2 are wrong for two rounds,
    then right every other row (rescued in round 3, at the top level)."""
    seen = {}

    def policy(rows):
        out = []
        for text in rows:
            k = next(i for i, q in enumerate(QUESTIONS) if q in text)
            hinted = text != QUESTIONS[k]
            key = (k, hinted)
            j = seen.get(key, 0)
            seen[key] = j + 1
            if not hinted:
                out.append(UNHINTED[k][j % G])
            elif k == 0:
                out.append("\\boxed{18}" if j % 2 == 0 else "\\boxed{17}")
            elif k == 2 and j >= 2 * G:
                out.append(" so \\boxed{42}" if j % 2 == 0 else " so \\boxed{41}")
            else:
                out.append("\\boxed{40}")
        return out

    return policy


def dataset_rows():
    return [
        {"prompt": q, "question": q, "answer": a, "id": f"t{k}"}
        for k, (q, a) in enumerate(zip(QUESTIONS, GOLDS))
        for _ in range(G)
    ]


def rust_step(settings, mentor, steps=1):
    groups = [
        {"task": {"question": q, "answer": a, "id": f"t{k}"}, "completions": UNHINTED[k]}
        for k, (q, a) in enumerate(zip(QUESTIONS, GOLDS))
    ]
    config = mtrl.Intervention(**settings).step_config(G)
    return _native._plugin_process(mentor, config, groups, make_policy(), steps=steps)


class SameBatch(unittest.TestCase):
    """The same step through the Rust plug-in and through the Python trainer."""

    def setUp(self):
        self.fakes = _fake_trl.installed()
        self.fakes.__enter__()
        self.addCleanup(self.fakes.__exit__, None, None, None)
        sys.modules.pop("mentor_rl.trl", None)
        self.Trainer = importlib.import_module("mentor_rl.trl").MentorGRPOTrainer

    def python_step(self, settings, mentor, steps=1):
        trainer = self.Trainer(
            reward_funcs=[mtrl.MathReward(threads=1)],
            num_generations=G,
            policy=make_policy(),
            mentor=mentor,
            intervention=dict(settings),
        )
        trainer._mentor_generate_and_score = lambda inputs, run: run()  # TRL's loss part needs torch
        generate = trainer._generate_single_turn

        def with_logprobs(prompt_ids, images, fields, n, has_tool_images=False):
            ids, _ = generate(prompt_ids, images, fields, n)
            return ids, [[-0.25] * len(c) for c in ids]  # as vLLM gives them: `stripped_is` reads them

        trainer._generate_single_turn = with_logprobs
        for _ in range(steps):
            calls = len(trainer.generated)
            out = trainer._generate_and_score_completions(dataset_rows())
        metrics = {k: v[-1] for k, v in trainer._metrics["train"].items()}
        trainer.last_step_calls = trainer.generated[calls:]
        return trainer, out, metrics

    def check(self, steps=1, **settings):
        rust = rust_step(settings, mentor_rl.Mentor("rules"), steps=steps)
        trainer, out, m = self.python_step(settings, mentor_rl.Mentor("rules"), steps=steps)
        decode = trainer._tokenizer.batch_decode
        # The same hinted prompts (and forced prefixes), in the same order (the last step's).
        want = [r["prompt"] + (r["assistant_prefix"] or "") for r in rust["requests"] for _ in range(r["n"])]
        got = [row for call in trainer.last_step_calls[1:] for row in call]
        self.assertEqual(got, want)
        # The same rows: prompt (with any forced prefix left in the context), completion, credit.
        plan = trainer._mentor_plan
        self.assertIsNotNone(plan, "a group was rescued")
        self.assertEqual(len(rust["rows"]), len(out["completion_ids"]))
        prompts, completions = decode(out["prompt_ids"]), decode(out["completion_ids"])
        for i, r in enumerate(rust["rows"]):
            with self.subTest(row=i):
                self.assertEqual(prompts[i], r["prompt"][-1]["content"] + r["context"])
                self.assertEqual(completions[i], r["completion"])
                self.assertEqual(plan[i].given_tokens, r["given_tokens"])
                self.assertEqual(plan[i].baseline, r["baseline"])
                self.assertEqual(plan[i].old_logps is not None, r["behaviour"])
                self.assertEqual(plan[i].reward, r["reward"])
                self.assertEqual(plan[i].hinted, r["hint_level"] is not None)
        rm = rust["metrics"]
        self.assertEqual((m["mentor/interventions"], m["mentor/rescued"]), (rm["intervened"], rm["rescued"]))
        levels = [m[f"mentor/level_{k}"] for k in (1, 2, 3)]
        self.assertEqual(levels, [float(rm["levels_used"].get(str(k), 0)) for k in (1, 2, 3)])
        return rust, plan

    def test_prefix_credit(self):
        rust, plan = self.check(credit="prefix")
        self.assertEqual(rust["metrics"]["levels_used"], {"1": 2, "2": 1, "3": 1})
        # Group 2 was rescued at level 3, whose worked steps are forced and credited as given.
        self.assertTrue(any(p.given_tokens > 0 for p in plan))
        self.assertEqual({p.baseline for p in plan if p.hinted}, {0.0})

    def test_in_context_credit(self):
        rust, plan = self.check(credit="in_context")
        self.assertIn("Hint:", rust["rows"][0]["prompt"][-1]["content"])

    def test_stripped_is_credit(self):
        rust, plan = self.check(credit="stripped_is")
        self.assertTrue(all((p.old_logps is not None) == p.hinted for p in plan))

    def test_stripped_credit_nurl(self):
        self.check(credit="stripped", assembly="nurl", keep_unhinted=1)

    def test_prefix_nurl_budgets_and_template(self):
        self.check(credit="prefix", assembly="nurl", keep_unhinted=2, max_groups=1, hint_template="Hint: {hint}\n{prompt}")

    def test_no_escalation_and_a_rollout_budget(self):
        self.check(credit="in_context", escalate=False, max_extra_rollouts=4)

    def test_hint_memory_carries_over_to_the_next_step(self):
        # Step 1 rescues t0 at level 1 and t2 at level 3 (after two failed rounds); both
        # collapse again in step 2, where t2 starts at its remembered level 3 (a fresh memory
        # would start it at 1, and the scripted policy would then be rescued at level 1).
        rust, _ = self.check(steps=2, credit="prefix")
        self.assertEqual(rust["metrics"]["levels_used"], {"1": 1, "3": 1})
        trainer, _, _ = self.python_step({"credit": "prefix"}, mentor_rl.Mentor("rules"), steps=2)
        memory = trainer._memory
        self.assertEqual((len(memory), memory.level("t0"), memory.level("t1"), memory.level("t2")), (2, 1, None, 3))


class Machine(unittest.TestCase):
    """:class:`mentor_rl.MentorStep` driven by hand."""

    def groups(self, prompt):
        verdicts = mentor_rl.verify_math(["5"] * G, ["\\boxed{4}"] * G)
        return [
            {"prompt": prompt, "rewards": [0.0] * G, "task": {"question": "2 + 3?", "answer": "5"},
             "attempts": ["\\boxed{4}"] * G, "verdicts": verdicts},
            {"prompt": prompt, "rewards": [1.0] * G},
        ]

    def test_rounds_and_plan(self):
        config = mtrl.Intervention(credit="in_context").step_config(G)
        step = mentor_rl.MentorStep(config, self.groups([{"role": "user", "content": "2 + 3?"}]), [0])
        self.assertEqual(step.need, "hints")
        (ask,) = step.asks()
        self.assertEqual((ask.group, ask.level, ask.previous_hints), (0, 1, []))
        hint = {"level": 1, "text": "add", "solution_prefix": None, "source": "mentor"}
        step.answer([{"hint": hint, "diagnosis": None, "guard": {"rejections": [], "redactions": []}}])
        self.assertEqual(step.need, "samples")
        (req,) = step.requests()
        # The hint placed by the Rust hint format, in the prompt's own shape (messages here).
        self.assertEqual(req.prompt, [{"role": "user", "content": "2 + 3?\n\nHint: add"}])
        step.feed([[0.0] * G], [[False] * G])  # still failing: round 2, one level up
        self.assertEqual((step.need, step.round), ("hints", 2))
        (ask,) = step.asks()
        self.assertEqual((ask.level, [h["text"] for h in ask.previous_hints]), (2, ["add"]))
        step.answer([None])  # nothing to say: round 3
        (ask,) = step.asks()
        self.assertEqual(ask.level, 3)
        step.answer([{"hint": dict(hint, level=3, text="")}])  # a blank hint: the prompt as it is
        (req,) = step.requests()
        self.assertEqual(req.prompt, [{"role": "user", "content": "2 + 3?"}])
        step.feed([[1.0, 0.0, 0.0, 0.0]], [[True, False, False, False]])
        self.assertEqual(step.need, "done")
        plan = step.finish()
        self.assertEqual((plan.groups, len(plan.rows), plan.rescued_groups), (2, 2 * G, [0]))
        self.assertEqual([(r.attempt, r.sample, r.hinted_prompt) for r in plan.rows[:G]], [(1, j, True) for j in range(G)])
        self.assertEqual(plan.counts["levels_used"], {"1": 1, "3": 1})
        self.assertEqual(plan.interventions[0]["rescued"], True)
        with self.assertRaisesRegex(ValueError, "finished"):
            step.finish()

    def test_memory_starts_levels_records_rescues_and_fades(self):
        config = mtrl.Intervention(credit="in_context", memory_fade_after=1).step_config(G)
        memory = mentor_rl.HintMemory(fade_after=1)
        groups = self.groups("2 + 3?")
        groups[0]["task"]["id"] = "two-plus-three"
        groups[1]["task"] = {"question": "1 + 1?", "answer": "2", "id": "one-plus-one"}

        def rescue_at(step, level):
            (ask,) = step.asks()
            self.assertEqual(ask.level, level)
            step.answer([{"hint": {"level": level, "text": "add", "solution_prefix": None, "source": "mentor"}}])
            step.feed([[1.0] + [0.0] * (G - 1)], [[True] + [False] * (G - 1)])
            return step.finish()

        step = mentor_rl.MentorStep(config, groups, [0], memory=memory, max_level=2)
        (ask,) = step.asks()
        step.answer([None])  # level 1 says nothing: level 2 rescues
        rescue_at(step, 2)
        self.assertEqual((len(memory), memory.level("two-plus-three")), (1, 2))
        # Collapsed again: it starts at the remembered level.
        rescue_at(mentor_rl.MentorStep(config, groups, [0], memory=memory), 2)
        # Solved unhinted once (not collapsed): with fade_after=1 the level drops to 1.
        solved = mentor_rl.MentorStep(config, groups, [], memory=memory)
        self.assertEqual(solved.need, "done")
        solved.finish()
        self.assertEqual(memory.level("two-plus-three"), 1)
        rescue_at(mentor_rl.MentorStep(config, groups, [0], memory=memory), 1)
        # The state round-trips.
        again = mentor_rl.HintMemory()
        again.restore(memory.state())
        self.assertEqual((len(again), again.level("two-plus-three")), (1, 1))

    def test_bad_input_is_a_value_error(self):
        config = mtrl.Intervention().step_config(G)
        with self.assertRaisesRegex(ValueError, "collapsed group 0 needs"):
            mentor_rl.MentorStep(config, [{"prompt": "x", "rewards": [0.0] * G}], [0])
        step = mentor_rl.MentorStep(config, self.groups("2 + 3?"), [0])
        with self.assertRaisesRegex(ValueError, "1 answers for 1 asks|not waiting"):
            step.feed([[0.0] * G], [[False] * G])
        with self.assertRaisesRegex(ValueError, "answers"):
            step.answer([None, None])


if __name__ == "__main__":
    unittest.main()
