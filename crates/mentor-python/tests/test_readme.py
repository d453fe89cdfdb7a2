"""The README's Python example runs as written."""

import contextlib
import io
import re
import unittest

from _support import REPO


class Readme(unittest.TestCase):
    def test_the_readme_example_runs(self):
        text = (REPO / "README.md").read_text(encoding="utf-8")
        section = text.split("## Use the verifiers from Python", 1)[1]
        code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "True 1.0 18")
        self.assertEqual(lines[1], "wrong_value")
        self.assertEqual(lines[2], "False assert add(1, 2) == 3")
        self.assertEqual(lines[-1], "0.5")

    def test_the_trl_example_is_valid_python_with_valid_settings(self):
        # It needs torch, trl and the hub to run; `cargo xtask trl` runs the same API on the CPU.
        text = (REPO / "README.md").read_text(encoding="utf-8")
        section = text.split("## Use MENTOR in TRL", 1)[1]
        code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
        compile(code, "README.md", "exec")
        self.assertIn("from mentor_rl.trl import Intervention, MentorGRPOTrainer, math_reward", code)
        call = re.search(r"intervention=(Intervention\(.*?\)),\n", code).group(1)
        from mentor_rl.trl import Intervention  # noqa: F401  (used by eval)

        settings = eval(call)
        self.assertEqual((settings.credit, settings.start_level, settings.max_groups), ("prefix", 1, 8))


if __name__ == "__main__":
    unittest.main()
