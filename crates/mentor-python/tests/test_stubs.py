"""The typed stubs describe what the native module has: every class, function and method."""

import ast
import unittest
from pathlib import Path

import mentor_rl
from mentor_rl import _native


class Stubs(unittest.TestCase):
    def test_stubs_match_the_native_module(self):
        stub_path = Path(mentor_rl.__file__).with_name("_native.pyi")
        self.assertTrue(stub_path.is_file(), "the wheel ships _native.pyi")
        self.assertTrue(stub_path.with_name("py.typed").is_file(), "the wheel ships py.typed")
        tree = ast.parse(stub_path.read_text(encoding="utf-8"))
        defs = {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
        public = [n for n in dir(_native) if not n.startswith("_")]
        for name in public:
            with self.subTest(name=name):
                self.assertIn(name, defs)
                obj = getattr(_native, name)
                if isinstance(obj, type) and not issubclass(obj, BaseException):
                    methods = {m for m in dir(obj) if not m.startswith("_")}
                    stubbed = {x.name for x in defs[name].body if isinstance(x, ast.FunctionDef)}
                    self.assertEqual(methods - stubbed, set(), f"{name}: members missing from the stub")
                    # A stubbed special method (``__len__``) must exist too.
                    absent = {m for m in stubbed - methods - {"__init__", "__eq__"} if not hasattr(obj, m)}
                    self.assertEqual(absent, set(), f"{name}: stubbed but absent")
        self.assertEqual(sorted(mentor_rl.__all__), sorted(public + ["__version__"]))


if __name__ == "__main__":
    unittest.main()
