"""A custom reward function for verl, backed by MENTOR's verifiers.

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info)`` once per
response. Point its config at this module::

    custom_reward_function:
      path: /path/to/site-packages/mentor_rl/verl.py   # python -c "import mentor_rl.verl as v; print(v.__file__)"
      name: compute_score

The kind of check follows ``ground_truth``:

- a string or number: a math answer (GSM8K ``18``, a GSM8K ``... #### 18`` rationale, or MATH
  LaTeX such as ``\\frac{1}{2}``), judged by :func:`mentor_rl.verify_math`;
- a dict (or its JSON text) holding ``tests``: code, run in :class:`mentor_rl.CodeSandbox` with
  ``format`` (``"humaneval"``, ``"mbpp"`` or ``"stdio"``; default ``"mbpp"`` for a list of
  tests, ``"humaneval"`` for a test string), ``entry_point`` and ``prompt`` (HumanEval: both
  required; the prompt holds the helpers its tests call), ``setup_code`` and ``imports`` (MBPP's
  ``test_setup_code`` and ``test_imports``), as :meth:`mentor_rl.CodeSandbox.verify` takes them.

The score is the verdict's reward in [0, 1]. The sandbox is started once per process, on the
first code response (it needs the runtime ``cargo xtask setup`` installs; see
:class:`mentor_rl.CodeSandbox`). A sandbox failure scores 0, as the Rust trainer does, so one
unjudgeable task does not stop a run; bad ground truth raises ValueError.

The MENTOR step inside verl (``>=0.9,<0.10``) is named from here too, loaded only when asked
for (``mentor_rl._verl_worker``, which needs verl): ``MentorAgentLoopManager`` (the agent-loop
manager class of ``+actor_rollout_ref.rollout.agent.agent_loop_manager_class``) and
``MentorReplayBuffer`` / ``MentorReplayBufferAsync`` (the ``mentor/*`` metrics, a custom
sampler). See the package README, "verl".
"""

import json
import threading
from typing import Any, Dict, Optional

# Absolute, not relative: verl loads this file by path as a top-level module.
from mentor_rl._native import CodeSandbox, Verdict, verify_math

__all__ = ["compute_score", "verdict"]

_PLUGIN = ("MentorAgentLoopManager", "MentorAgentLoopWorker", "MentorReplayBuffer", "MentorReplayBufferAsync", "MentorSettings")


def __getattr__(name: str) -> Any:
    # The plug-in's classes, imported on first use: computing a reward needs no verl.
    if name in _PLUGIN:
        from mentor_rl import _verl_worker

        return getattr(_verl_worker, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_SANDBOX: Optional[CodeSandbox] = None
_LOCK = threading.Lock()


def _sandbox() -> CodeSandbox:
    global _SANDBOX
    with _LOCK:
        if _SANDBOX is None:
            _SANDBOX = CodeSandbox()
        return _SANDBOX


def _code_spec(ground_truth: Any) -> Optional[Dict[str, Any]]:
    """The code spec in ``ground_truth``, or None when it is a math answer."""
    if isinstance(ground_truth, dict):
        spec = ground_truth
    elif isinstance(ground_truth, str) and ground_truth.lstrip().startswith("{"):
        try:
            spec = json.loads(ground_truth)
        except ValueError:
            return None
    else:
        return None
    return spec if isinstance(spec, dict) and "tests" in spec else None


def verdict(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Optional[Dict[str, Any]] = None
) -> Verdict:
    """The full :class:`mentor_rl.Verdict` behind :func:`compute_score` (with its feedback)."""
    if hasattr(ground_truth, "item") and callable(ground_truth.item):
        ground_truth = ground_truth.item()  # a numpy scalar, as parquet columns give them
    spec = _code_spec(ground_truth)
    if spec is None:
        if isinstance(ground_truth, bool) or not isinstance(ground_truth, (str, int, float)):
            raise ValueError(
                f"ground_truth: expected a math answer (str or number) or a dict with tests, got {type(ground_truth).__name__}"
            )
        return verify_math([str(ground_truth)], [solution_str])[0]
    tests = spec["tests"]
    fmt = spec.get("format") or ("humaneval" if isinstance(tests, str) else "mbpp")
    return _sandbox().verify(
        solution_str,
        tests=tests,
        format=fmt,
        entry_point=spec.get("entry_point"),
        prompt=spec.get("prompt"),
        setup_code=spec.get("setup_code"),
        imports=spec.get("imports"),
        errors="verdict",
    )


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Optional[Dict[str, Any]] = None
) -> float:
    """verl's custom reward function: the reward in [0, 1] of ``solution_str``."""
    return verdict(data_source, solution_str, ground_truth, extra_info).reward
