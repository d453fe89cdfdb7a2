"""MENTOR's verifiers, mentor and collapse monitor for Python RLVR pipelines.

Everything here is the Rust workspace's own implementation (the crates mentor-verify-math,
mentor-verify-code, mentor-agents and mentor-integration), compiled into ``mentor_rl._native``:

- :func:`verify_math` judges completions against gold answers (GIL released, all cores);
- :class:`CodeSandbox` runs Python programs in a wasmtime sandbox against HumanEval, MBPP or
  stdin/stdout tests;
- :class:`Mentor`, :class:`StaticHints` and :class:`Refinement` turn a failed group into a
  guarded hint; ``Mentor("self")`` lets your own model (the learner) write it, one
  :class:`MentorSession` per group;
- :class:`CollapseMonitor` tracks collapse over training steps, and :func:`is_collapsed` is
  its rule: a group collapsed when none of its attempts passed (correctness, not reward);
- :class:`MentorStep` is the Rust trainer's MENTOR step as a state machine (which groups get
  hints, the hinted prompts, escalation, assembly and credit), for a trainer that generates
  on its own (``mentor_rl.trl.MentorGRPOTrainer`` drives it through TRL), with a
  :class:`HintMemory` kept across steps for the levels each task starts at.

Each verdict's ``feedback`` is the dict ``mentor verify math`` / ``mentor verify code`` print.
"""

from ._native import (
    CodeSandbox,
    CollapseMonitor,
    HintMemory,
    HintedRequest,
    Mentor,
    MentorError,
    MentorRlError,
    MentorSession,
    MentorStep,
    PlanRow,
    Refinement,
    RuntimeMissingError,
    SandboxError,
    StaticHints,
    StepAsk,
    StepPlan,
    Verdict,
    __version__,
    is_collapsed,
    math_equivalent,
    verify_math,
)

__all__ = [
    "CodeSandbox",
    "CollapseMonitor",
    "HintMemory",
    "HintedRequest",
    "Mentor",
    "MentorError",
    "MentorRlError",
    "MentorSession",
    "MentorStep",
    "PlanRow",
    "Refinement",
    "RuntimeMissingError",
    "SandboxError",
    "StaticHints",
    "StepAsk",
    "StepPlan",
    "Verdict",
    "__version__",
    "is_collapsed",
    "math_equivalent",
    "verify_math",
]
