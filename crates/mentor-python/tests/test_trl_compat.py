"""The fence around TRL (mentor_rl/_trl_compat.py): the version check at import, with fake
trl / transformers modules (no torch needed), and that the trainer uses TRL's private names
only through the fence."""

import importlib
import os
import re
import sys
import unittest
import warnings
from pathlib import Path
from unittest import mock

import mentor_rl
from mentor_rl import _trl_compat as compat

import _fake_trl
from _support import REPO


def _import_trl():
    sys.modules.pop("mentor_rl.trl", None)
    return importlib.import_module("mentor_rl.trl")


class VersionCheck(unittest.TestCase):
    def test_supported_ranges(self):
        self.assertEqual(compat.supported_spec("trl"), ">=1.15,<1.17")
        self.assertEqual(compat.supported_spec("transformers"), ">=4.56.2,<6")
        for version, ok in [
            ("1.15.0", True),
            ("1.15", True),
            ("1.16.0", True),
            ("1.16.7", True),
            ("1.16.0.post1", True),
            ("1.16.0+local", True),
            ("1.15.0rc1", False),  # a pre-release of 1.15.0 is below 1.15.0
            ("1.14.9", False),
            ("1.17.0", False),
            ("1.17.0.dev0", False),
            ("2.0.0", False),
            ("unknown", False),
            ("", False),
        ]:
            with self.subTest(version=version):
                self.assertEqual(compat.version_in_range(version, compat.SUPPORTED["trl"]), ok)
        self.assertTrue(compat.version_in_range("4.56.2", compat.SUPPORTED["transformers"]))
        self.assertTrue(compat.version_in_range("5.24.0", compat.SUPPORTED["transformers"]))
        self.assertFalse(compat.version_in_range("4.56.1", compat.SUPPORTED["transformers"]))
        self.assertFalse(compat.version_in_range("6.0.0", compat.SUPPORTED["transformers"]))

    def test_an_unsupported_trl_names_both_versions(self):
        for trl_version in ("1.14.0", "1.17.0", "2.0.0"):
            with self.subTest(trl=trl_version), _fake_trl.installed(trl_version, "5.24.0"):
                with self.assertRaises(ImportError) as e:
                    compat.check_versions()
                msg = str(e.exception)
                self.assertIn(f"trl {trl_version}", msg)
                self.assertIn("trl>=1.15,<1.17", msg)
                self.assertIn("transformers 5.24.0", msg)
                self.assertIn('pip install "mentor-rl[trl]"', msg)

    def test_an_unsupported_transformers_names_both_versions(self):
        with _fake_trl.installed("1.16.0", "6.1.0"):
            with self.assertRaises(ImportError) as e:
                compat.check_versions(required=False)
        msg = str(e.exception)
        self.assertIn("does not support the installed transformers 6.1.0", msg)
        self.assertIn("transformers>=4.56.2,<6", msg)

    def test_supported_versions_pass(self):
        for trl_version, tf in (("1.15.0", "4.56.2"), ("1.16.0", "5.24.0"), ("1.16.2", "5.30.1")):
            with self.subTest(trl=trl_version, transformers=tf), _fake_trl.installed(trl_version, tf):
                compat.check_versions()
                compat.check_versions(required=False)

    def test_without_trl_only_the_trainer_needs_it(self):
        with _fake_trl.installed(trl=False, transformers=False):
            self.assertIsNone(compat.installed_version("trl"))
            compat.check_versions(required=False)  # the reward functions need no trl
            with self.assertRaises(ImportError) as e:
                compat.check_versions(required=True)
            self.assertIn("needs trl and transformers", str(e.exception))
            self.assertIn("trl (not installed)", str(e.exception))

    def test_the_check_can_be_turned_into_a_warning(self):
        with _fake_trl.installed("1.17.0"), mock.patch.dict(os.environ, {compat.UNCHECKED_ENV: "1"}):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                compat.check_versions()
        self.assertTrue(any("trl 1.17.0" in str(w.message) for w in caught))


class ImportTime(unittest.TestCase):
    def test_importing_mentor_rl_trl_with_an_unsupported_trl_fails(self):
        with _fake_trl.installed("1.13.2", "5.24.0"):
            with self.assertRaises(ImportError) as e:
                _import_trl()
        msg = str(e.exception)
        self.assertIn("trl 1.13.2", msg)
        self.assertIn("trl>=1.15,<1.17", msg)
        # The real module is back for the other tests.
        self.assertTrue(callable(mentor_rl.trl.math_reward))

    def test_a_supported_trl_gets_past_the_check(self):
        with _fake_trl.installed("1.15.3", "4.57.0"):
            module = _import_trl()
            self.assertTrue(callable(module.math_reward))
            # The trainer module checks again, then imports torch and trl: here the fakes.
            trainer = module.MentorGRPOTrainer
            self.assertTrue(issubclass(trainer, _fake_trl.FakeGRPOTrainer))
            self.assertEqual(trainer.__mro__[1].__name__, "FencedGRPOTrainer")

    def test_the_trainer_checks_before_importing_trl(self):
        # An out-of-range trl whose GRPOTrainer does not even exist: the version error comes first.
        fakes = _fake_trl.modules("1.18.0")
        del fakes["trl"].GRPOTrainer
        with _fake_trl.installed("1.16.0"):
            module = _import_trl()
            with mock.patch.dict(sys.modules, {"trl": fakes["trl"]}):
                with self.assertRaisesRegex(ImportError, r"trl 1\.18\.0"):
                    module.MentorGRPOTrainer  # noqa: B018

    def test_a_changed_private_api_is_refused_at_import(self):
        class Renamed(_fake_trl.FakeGRPOTrainer):
            _generate_single_turn = None  # type: ignore[assignment]

            def _tokenize_prompts(self, texts):  # a renamed parameter
                return super()._tokenize_prompts(texts)

        with _fake_trl.installed():
            with self.assertRaises(ImportError) as e:
                compat.trainer_base(Renamed)
        msg = str(e.exception)
        self.assertIn("_generate_single_turn is missing", msg)
        self.assertIn("_tokenize_prompts", msg)
        compat.check_api(_fake_trl.FakeGRPOTrainer)  # the fake matches trl 1.16


class OneFence(unittest.TestCase):
    PRIVATE = re.compile(
        r"\.(" + "|".join(map(re.escape, [*compat.PRIVATE_METHODS, *compat.PRIVATE_ATTRIBUTES])) + r")\b"
        r"|trl\.trainer\.utils|_mentor_inputs"
    )

    def test_the_trainer_touches_trl_internals_only_through_the_fence(self):
        source = Path(mentor_rl.__file__).with_name("_trl_trainer.py").read_text(encoding="utf-8")
        code = re.sub(r'"""(.*?)"""', "", source, flags=re.S)  # docstrings may name them
        self.assertEqual(self.PRIVATE.findall(code), [])
        self.assertIn("compat.check_versions(required=True)", code)
        first_trl_import = min(code.index("import torch"), code.index("from trl"))
        self.assertLess(code.index("compat.check_versions(required=True)"), first_trl_import)

    def test_the_extra_pins_the_supported_ranges(self):
        path = REPO / "crates/mentor-python/pyproject.toml"
        if not path.is_file():
            self.skipTest(f"{path} not found (set MENTOR_REPO)")
        text = path.read_text(encoding="utf-8")
        extra = re.search(r"^\[project\.optional-dependencies\]\n(.*?)(?:\n\[|\Z)", text, re.S | re.M)
        self.assertIsNotNone(extra, "pyproject.toml has [project.optional-dependencies]")
        trl = re.search(r"^trl\s*=\s*\[(.*?)\]", extra.group(1), re.S | re.M)
        self.assertIsNotNone(trl, "an extra named trl")
        pins = re.findall(r'"([^"]+)"', trl.group(1))
        self.assertEqual(pins, [f"{name}{compat.supported_spec(name)}" for name in compat.SUPPORTED])

    def test_the_readme_lists_the_versions_and_every_private_name(self):
        path = REPO / "crates/mentor-python/README.md"
        if not path.is_file():
            self.skipTest(f"{path} not found (set MENTOR_REPO)")
        text = path.read_text(encoding="utf-8")
        for name in (*compat.PRIVATE_METHODS, *compat.PRIVATE_ATTRIBUTES, *compat.PRIVATE_FUNCTIONS):
            self.assertRegex(text, r"`[\w.]*" + re.escape(name) + "`")
        for name in compat.SUPPORTED:
            self.assertIn(f"{name}{compat.supported_spec(name)}", text)
        self.assertIn('pip install "<wheel>[trl]"', text)


if __name__ == "__main__":
    unittest.main()
