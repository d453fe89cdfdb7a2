"""`CodeReward`, the path TRL users take, against the datasets: every HumanEval canonical
solution and every MBPP reference (974 full, 427 sanitized) passes at the default limits with
the datasets' own columns; programs that patch a module the tests read, or define one, score 0
on every task whose tests read it, with the imports column given or not; a row that lacks a
column its tests need raises ValueError naming the column."""

import json
import unittest

from _support import code_reward, datasets_dir, read_jsonl

FAKE_MATH = (
    "import sys\nclass _Yes:\n    def __getattr__(self, name):\n        return lambda *a, **k: True\n"
    "math = _Yes()\nsys.modules['math'] = math\n"
)


def sanitized():
    with open(datasets_dir() / "mbpp/sanitized-mbpp.json", encoding="utf-8") as f:
        return json.load(f)


def full():
    return read_jsonl(datasets_dir() / "mbpp/mbpp.jsonl")


def stubs(reference: str) -> str:
    """Every function the reference defines, returning 0."""
    names = [l[4:].split("(")[0] for l in reference.split("\n") if l.startswith("def ")]
    return "".join(f"def {n}(*a, **k):\n    return 0\n" for n in names)


class Datasets(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.reward = code_reward()

    def assert_all_pass(self, rewards, ids):
        failed = [(i, v.outcome, v.feedback) for i, r, v in zip(ids, rewards, self.reward.last_verdicts) if r != 1.0]
        self.assertEqual(failed, [], f"{len(failed)} references failed")

    def test_humaneval_canonical_solutions(self):
        rows = read_jsonl(datasets_dir() / "humaneval/HumanEval.jsonl")
        rewards = self.reward(
            [r["prompt"] + r["canonical_solution"] for r in rows],
            tests=[r["test"] for r in rows],
            entry_point=[r["entry_point"] for r in rows],
            code_prompt=[r["prompt"] for r in rows],
        )
        self.assert_all_pass(rewards, [r["task_id"] for r in rows])

    def test_full_and_sanitized_mbpp_references(self):
        # Each set with the columns its file has: full MBPP's test_setup_code, sanitized MBPP's
        # test_imports.
        for rows, count, column in ((full(), 974, "test_setup_code"), (sanitized(), 427, "test_imports")):
            with self.subTest(column=column):
                self.assertEqual(len(rows), count)
                rewards = self.reward(
                    [r["code"] for r in rows], tests=[r["test_list"] for r in rows], **{column: [r[column] for r in rows]}
                )
                self.assert_all_pass(rewards, [r["task_id"] for r in rows])

    def test_patching_a_module_the_tests_read_scores_zero_with_or_without_the_imports_column(self):
        rows = [r for r in sanitized() if r["test_imports"]]
        self.assertEqual(len(rows), 13)
        attacks = [stubs(r["code"]) + FAKE_MATH for r in rows]
        tests = [r["test_list"] for r in rows]
        for imports in ([r["test_imports"] for r in rows], None):
            with self.subTest(imports_column=imports is not None):
                rewards = self.reward(attacks, tests=tests, test_imports=imports)
                self.assertEqual(rewards, [0.0] * len(rows), [r["task_id"] for r, x in zip(rows, rewards) if x])
                # ... while the references pass either way: the tests import what they read.
                rewards = self.reward([r["code"] for r in rows], tests=tests, test_imports=imports)
                self.assertEqual(rewards, [1.0] * len(rows))

    def test_a_module_the_tests_read_never_comes_from_the_program(self):
        # MBPP 596 reads `sys`; a program with its own `class sys` gains nothing (natively it passes).
        row = next(r for r in sanitized() if r["task_id"] == 596)
        own_sys = "class sys:\n    @staticmethod\n    def getsizeof(x):\n        return 0\n\ndef tuple_size(t):\n    return 0\n"
        self.assertEqual(self.reward([own_sys], tests=[row["test_list"]], test_imports=[[]]), [0.0])
        self.assertEqual(self.reward([row["code"]], tests=[row["test_list"]], test_imports=[[]]), [1.0])

    def test_a_missing_column_is_named(self):
        he = read_jsonl(datasets_dir() / "humaneval/HumanEval.jsonl")[32]
        with self.assertRaisesRegex(ValueError, "code_prompt"):
            self.reward([he["prompt"] + he["canonical_solution"]], tests=[he["test"]], entry_point=[he["entry_point"]])
        row = next(r for r in full() if r["task_id"] == 367)
        with self.assertRaisesRegex(ValueError, "test_setup_code"):
            self.reward([row["code"]], tests=[row["test_list"]])


if __name__ == "__main__":
    unittest.main()
