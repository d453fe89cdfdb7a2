"""MENTOR in TRL: reward functions with TRL's signature and :class:`MentorGRPOTrainer`.

Supported: trl>=1.15,<1.17 with transformers>=4.56.2,<6 (``pip install "mentor-rl[trl]"``;
tested with trl 1.16.0, transformers 5.24, torch 2.15 on CPU). Importing this module with a trl
outside that range installed raises ImportError naming the installed and the supported
versions; every private TRL name the trainer uses is in ``mentor_rl/_trl_compat.py``.

Reward functions (no torch needed to import or call them)::

    from mentor_rl.trl import math_reward, code_reward

    trainer = GRPOTrainer(model=..., reward_funcs=[math_reward], train_dataset=ds, ...)

- :data:`math_reward` reads the dataset column ``answer`` (a GSM8K ``... #### 18`` answer, a
  number, or MATH LaTeX) and judges each completion with :func:`mentor_rl.verify_math`.
- :data:`code_reward` reads ``tests`` (HumanEval test code defining ``check``, a list of MBPP
  ``assert`` lines, or stdin/stdout cases), ``format``, ``entry_point`` and ``code_prompt``
  (HumanEval's prompt: required for HumanEval rows) and MBPP's ``test_imports`` and
  ``test_setup_code``, and runs each completion in :class:`mentor_rl.CodeSandbox`.

Both accept plain and conversational completions and keep the verdicts of their last call in
``last_verdicts`` (one :class:`mentor_rl.Verdict` per completion, with the verifier's
feedback), which is what the mentor reads. Build your own instances (``MathReward(threads=4)``,
``CodeReward(sandbox=...)``) to change their settings.

:class:`MentorGRPOTrainer` (imported from here; it needs torch and trl) adds the MENTOR step
between TRL's generation and its loss; :class:`Intervention` holds its settings.
"""

from typing import Any

from . import _trl_compat

# Before anything else: a TRL outside the tested range fails here, not inside a training step.
_trl_compat.check_versions(required=False)

from ._trl_rewards import (  # noqa: E402, F401  (the private names: importable from here as before)
    CodeReward,
    Intervention,
    MathReward,
    _Correctness,
    _is_correct,
    _resolve_correctness,
    code_reward,
    completion_text,
    math_reward,
    prompt_text,
)

__all__ = [
    "CodeReward",
    "Intervention",
    "MathReward",
    "MentorGRPOTrainer",
    "code_reward",
    "completion_text",
    "math_reward",
]


def __getattr__(name: str) -> Any:
    # The trainer imports torch and trl: only when asked for. (It imports what it shares with
    # this module from mentor_rl._trl_rewards, never this module.)
    if name == "MentorGRPOTrainer":
        from ._trl_trainer import MentorGRPOTrainer

        return MentorGRPOTrainer
    raise AttributeError(f"module 'mentor_rl.trl' has no attribute {name!r}")
