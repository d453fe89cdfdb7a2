"""mentor_rl.verl.compute_score, verl's custom reward function (no verl needed)."""

import json
import re
import unittest

import mentor_rl
from mentor_rl import _verl_compat, verl

from _support import REPO


class ComputeScore(unittest.TestCase):
    def test_math_ground_truths(self):
        self.assertEqual(verl.compute_score("openai/gsm8k", "so the answer is #### 18", "18"), 1.0)
        self.assertEqual(verl.compute_score("openai/gsm8k", "The answer is 20.", "18"), 0.0)
        self.assertEqual(verl.compute_score("lighteval/MATH", "$\\boxed{0.5}$", "\\frac{1}{2}"), 1.0)
        self.assertEqual(verl.compute_score("gsm8k", "#### 18", "9 * 2 = 18\n#### 18"), 1.0)
        self.assertEqual(verl.compute_score("x", "\\boxed{7}", 7), 1.0)

        class Scalar:  # what a numpy scalar looks like to compute_score
            def item(self):
                return 7

        self.assertEqual(verl.compute_score("x", "\\boxed{7}", Scalar()), 1.0)
        v = verl.verdict("openai/gsm8k", "The answer is 20.", "18")
        self.assertEqual(v.feedback["outcome"], "wrong_value")

    def test_code_ground_truths(self):
        try:
            mentor_rl.CodeSandbox()
        except mentor_rl.RuntimeMissingError as e:
            self.skipTest(str(e))
        tests = {"tests": ["assert add(1, 2) == 3"]}
        good = "```python\ndef add(a, b):\n    return a + b\n```"
        bad = "def add(a, b):\n    return a - b\n"
        self.assertEqual(verl.compute_score("mbpp", good, tests), 1.0)
        self.assertEqual(verl.compute_score("mbpp", bad, tests), 0.0)
        self.assertEqual(verl.compute_score("mbpp", good, json.dumps(tests)), 1.0)
        he = {"tests": "def check(candidate):\n    assert candidate(2) == 4\n", "entry_point": "sq", "prompt": 'def sq(x):\n    """x squared."""\n'}
        self.assertEqual(verl.compute_score("humaneval", "def sq(x):\n    return x * x\n", he), 1.0)
        io = {"format": "stdio", "tests": [{"input": "2\n", "output": "4"}]}
        self.assertEqual(verl.compute_score("io", "print(int(input()) ** 2)\n", io), 1.0)
        # An unjudgeable task scores 0 instead of stopping the run.
        broken = {"tests": "def check(candidate) oops", "entry_point": "sq", "prompt": ""}
        self.assertEqual(verl.compute_score("humaneval", "def sq(x):\n    return x\n", broken), 0.0)

    def test_verl_can_load_the_file_by_path(self):
        # What verl's custom_reward_function does with `path`.
        import importlib.util

        spec = importlib.util.spec_from_file_location("custom_module", verl.__file__)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.assertEqual(module.compute_score("openai/gsm8k", "#### 18", "18"), 1.0)

    def test_bad_ground_truth(self):
        with self.assertRaises(ValueError):
            verl.compute_score("x", "1", None)
        with self.assertRaises(ValueError):
            verl.compute_score("x", "1", {"tests": "t", "format": "junit", "entry_point": "f"})


class PluginFence(unittest.TestCase):
    """The verl plug-in's fence, without verl (its own tests, tests/verl_plugin/, run in the verl venv
    by `cargo xtask verl`)."""

    def test_computing_a_reward_imports_no_verl(self):
        import sys

        verl.compute_score("gsm8k", "#### 18", "18")
        self.assertNotIn("mentor_rl._verl_worker", sys.modules)

    def test_the_plugin_needs_verl(self):
        if _verl_compat.installed_version("verl") is not None:
            self.skipTest("verl is installed here")
        with self.assertRaisesRegex(ImportError, r'verl.*pip install "mentor-rl\[verl\]"'):
            _verl_compat.check_versions()
        with self.assertRaises(ImportError):
            verl.MentorAgentLoopManager  # noqa: B018
        with self.assertRaises(AttributeError):
            verl.NoSuchName  # noqa: B018

    def test_another_verl_is_refused_with_what_to_install(self):
        from unittest import mock

        for have in ("0.8.5", "0.10.0"):
            versions = {"verl": have, "transferqueue": "0.1.11"}
            with mock.patch.object(_verl_compat, "installed_version", versions.get):
                with self.assertRaisesRegex(ImportError, rf"verl {have}.*verl>=0\.9,<0\.10.*mentor-rl\[verl\]"):
                    _verl_compat.check_versions()
                with mock.patch.dict("os.environ", {_verl_compat.UNCHECKED_ENV: "1"}):
                    with self.assertWarns(RuntimeWarning):
                        _verl_compat.check_versions()
        with mock.patch.object(_verl_compat, "installed_version", {"verl": "0.9.1", "transferqueue": "0.1.11"}.get):
            _verl_compat.check_versions()  # the tested pair passes

    def test_the_verl_extra_and_entry_point_match_the_fence(self):
        path = REPO / "crates/mentor-python/pyproject.toml"
        if not path.is_file():
            self.skipTest(f"{path} not found (set MENTOR_REPO)")
        text = path.read_text(encoding="utf-8")
        extra = re.search(r"^verl\s*=\s*\[(.*?)\]", text, re.S | re.M)
        self.assertIsNotNone(extra, "an extra named verl")
        pins = re.findall(r'"([^"]+)"', extra.group(1))
        self.assertEqual(pins, [f"{name}{_verl_compat._spec(name)}" for name in _verl_compat.SUPPORTED])
        self.assertRegex(text, r'\[project\.entry-points\."verl\.plugins"\]\nmentor_rl = "mentor_rl\._verl_compat"')

    def test_the_readme_lists_every_private_name(self):
        path = REPO / "crates/mentor-python/README.md"
        if not path.is_file():
            self.skipTest(f"{path} not found (set MENTOR_REPO)")
        text = path.read_text(encoding="utf-8")
        names = [*_verl_compat.PRIVATE_METHODS, *_verl_compat.PRIVATE_ATTRIBUTES, _verl_compat.MANAGER_ATTRIBUTE]
        names += [_verl_compat.RAY_ACTOR_CLASS]
        for name in names:
            self.assertIn(f"`{name}`", text)
        for name in _verl_compat.SUPPORTED:
            self.assertIn(f"{name}{_verl_compat._spec(name)}", text)


if __name__ == "__main__":
    unittest.main()
