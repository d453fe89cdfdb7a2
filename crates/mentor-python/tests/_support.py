"""Shared helpers of the binding tests: where the repository, the data and the CLI are."""

import json
import os
import subprocess
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The repository root (crates/mentor-python/tests -> ../../..), or MENTOR_REPO.
REPO = Path(os.environ.get("MENTOR_REPO") or HERE.parents[2])


def math_cases_path() -> Path:
    """The labelled equivalence cases (a copy of shared/fixtures/math_equiv_cases.jsonl)."""
    return REPO / "crates/mentor-verify-math/tests/data/math_equiv_cases.jsonl"


def read_jsonl(path: Path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def datasets_dir() -> Path:
    """The benchmark sets, found as the Rust tests find them (mentor_core::assets::locate_datasets):
    $MENTOR_DATASETS, else <assets>/datasets, else a shared/datasets beside an ancestor."""
    env = os.environ.get("MENTOR_DATASETS")
    if env:
        return Path(env)
    home = os.environ.get("MENTOR_HOME")
    if home and (Path(home) / "datasets").is_dir():
        return Path(home) / "datasets"
    for d in [REPO, *REPO.parents]:
        for c in (d / "shared/datasets", d.parent / "shared/datasets"):
            if c.is_dir():
                return c
    raise unittest.SkipTest("benchmark data not found: set MENTOR_DATASETS or run `cargo xtask datasets`")


def mentor_bin() -> str:
    """The `mentor` CLI to compare with ($MENTOR_BIN, set by `cargo xtask python` / `test`)."""
    path = os.environ.get("MENTOR_BIN")
    if not path or not os.path.isfile(path):
        raise unittest.SkipTest("MENTOR_BIN is not set: the CLI comparison needs the `mentor` binary")
    return path


def run_cli(args, lines):
    """Runs `mentor <args>` on JSONL `lines` (dicts) and returns its output lines as dicts."""
    text = "".join(json.dumps(line) + "\n" for line in lines)
    out = subprocess.run(
        [mentor_bin(), *args, "--input", "-"],
        input=text.encode(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        check=False,
    )
    if out.returncode != 0:
        raise AssertionError(f"mentor {' '.join(args)} failed: {out.stderr.decode(errors='replace')}")
    return [json.loads(line) for line in out.stdout.decode().splitlines() if line.strip()]


def code_reward():
    """A `mentor_rl.trl.CodeReward` on its own sandbox, or SkipTest when the runtime is missing."""
    import mentor_rl
    import mentor_rl.trl as mtrl

    try:
        return mtrl.CodeReward(sandbox=mentor_rl.CodeSandbox())
    except mentor_rl.RuntimeMissingError as e:
        raise unittest.SkipTest(str(e))
