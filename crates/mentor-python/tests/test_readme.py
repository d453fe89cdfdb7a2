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


if __name__ == "__main__":
    unittest.main()
