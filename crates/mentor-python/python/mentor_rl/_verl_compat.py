"""The one fence around verl: every private name of ``verl`` (and of TransferQueue's storage
layout) that :mod:`mentor_rl._verl_worker` relies on is named here, with what it relies on.

verl's V1 trainer has one public seam for what happens to a GRPO group while it is generated
(the agent-loop manager class, named by the config key
``actor_rollout_ref.rollout.agent.agent_loop_manager_class``) and none between "the n samples
of a group are scored" and "the group is finished". The mentor plug-in therefore subclasses the
TransferQueue worker and runs verl's own ``AgentLoopWorkerTQ._run_prompt`` (not a copy) with a
collector in the context its session tasks inherit, overriding the per-session methods it calls
(``_run_agent_loop``, ``_agent_loop_postprocess``): the last session of a group to be scored
runs the mentor round and stores the group's rows before it returns, and verl writes the
group's terminal status after all sessions returned. All of it was read in the verl 0.9.1 wheel
(``agent_loop_tq.py`` is the same in 0.9.0) and run against verl 0.9.1 with TransferQueue 0.1.11
by ``cargo xtask verl``.

A verl outside :data:`SUPPORTED` is refused (:func:`check_versions`), and :func:`worker_base`
checks that every private method is still there with the parameters used and that the source of
``_run_prompt``, whose order of events the plug-in relies on, is one this module was checked
against (:data:`RUN_PROMPT_SHA256`), so a verl release that changes it fails at import, not in
the middle of a rollout.

Importing this module needs neither verl nor torch (it is also the ``verl.plugins`` entry
point, which verl imports while ``verl`` itself is half initialised): the wrappers import what
they need when first called.
"""

import hashlib
import inspect
import os
import warnings
from typing import Any, Dict, Optional, Tuple

from ._trl_compat import installed_version, version_in_range

__all__ = ["SUPPORTED", "TESTED", "check_versions", "worker_base"]

SUPPORTED: Dict[str, Tuple[Tuple[int, ...], Tuple[int, ...]]] = {
    "verl": ((0, 9), (0, 10)),
    # verl 0.9's `verl-core` extra asks for TransferQueue>=0.1.10; the storage layout below was
    # read in 0.1.11.
    "transferqueue": ((0, 1, 10), (0, 2)),
}
"""Supported ranges, ``name: (lowest, first unsupported)``; pyproject.toml's ``verl`` extra
pins the same ranges (a test compares them)."""

TESTED = {"verl": "0.9.1", "transferqueue": "0.1.11"}
"""The versions ``cargo xtask verl`` runs the plug-in's tests with."""

UNCHECKED_ENV = "MENTOR_RL_UNCHECKED_VERL"
"""Set to ``1`` to import with an unsupported verl anyway (a warning instead of the
ImportError; the source check of `_run_prompt` still applies)."""


def _spec(name: str) -> str:
    low, high = SUPPORTED[name]
    return f">={'.'.join(map(str, low))},<{'.'.join(map(str, high))}"


def check_versions() -> None:
    """Raises ImportError unless verl and TransferQueue are installed in :data:`SUPPORTED`."""
    installed = {name: installed_version(name) for name in SUPPORTED}
    have = ", ".join(f"{n} {v if v is not None else '(not installed)'}" for n, v in installed.items())
    wanted = ", ".join(f"{n}{_spec(n)}" for n in SUPPORTED)
    missing = [n for n, v in installed.items() if v is None]
    if missing:
        raise ImportError(
            f"mentor_rl's verl plug-in needs {' and '.join(missing)}: installed {have}; supported {wanted}. "
            "Install them with: pip install \"mentor-rl[verl]\""
        )
    bad = [n for n, v in installed.items() if not version_in_range(str(v), SUPPORTED[n])]
    if not bad:
        return
    message = (
        f"mentor_rl's verl plug-in does not support the installed {', '.join(f'{n} {installed[n]}' for n in bad)}: "
        f"supported {wanted} (tested: verl {TESTED['verl']}, transferqueue {TESTED['transferqueue']}). It relies "
        f"on verl internals (mentor_rl/_verl_compat.py). Install a supported version with: "
        f"pip install \"mentor-rl[verl]\" (or set {UNCHECKED_ENV}=1 to try this one anyway)"
    )
    if os.environ.get(UNCHECKED_ENV) == "1":
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        return
    raise ImportError(message)


# ---- what is used of verl's agent loop ---------------------------------------------------

RUN_PROMPT_SHA256 = {
    # verl 0.9.0 and 0.9.1 (verl/trainer/ppo/v1/agent_loop_tq.py, identical in both).
    "3d9bca6b0ea5fe25f5f99d3d86ba874a87f649fe362d379dc434409228cd6d32",
}
"""sha256 of ``inspect.getsource(AgentLoopWorkerTQ._run_prompt)`` in the verl releases the
plug-in was checked against. What it relies on in that method: session ``i`` started as a task
(``asyncio.create_task``, which copies the caller's context) running
``_run_agent_loop(run_sampling_params, ..., session_id=i, **prompt)`` for ``i < n``, ``n`` the
prompt's ``__rollout_n__`` or ``rollout.n`` (it pops ``__rollout_n__`` and ``__do_sample__`` from
the row, the rest goes to every session); the terminal status (``finished``, or ``failure``
when a session raised) written on the prompt's key ``uid`` only after every session task
settled (the replay buffer samples a group only after that write)."""

PRIVATE_METHODS: Dict[str, Tuple[str, ...]] = {
    # Overridden around the base method, which runs unchanged (its source is checked, above).
    "_run_prompt": ("prompt", "sampling_params", "trajectory", "trace"),
    # Overridden around the base method. Relies on: `_compute_score` filling
    # `reward_score` and `extra_fields["reward_extra_info"]` of the last output in place; the
    # sample keys `{uid}_{session_id}_{index}`; every keyword becoming a stored field; the
    # server's `min_global_steps`/`max_global_steps` in `extra_fields`.
    "_agent_loop_postprocess": ("output", "validate"),
    # Overridden around the base method (to note the sampling parameters a group's sessions
    # ran with) and called for the hinted sessions: instantiates the registered agent loop with
    # `server_manager=self.llm_client`, runs it and passes its output (and the keywords, less
    # `agent_name`) to `_agent_loop_postprocess`.
    "_run_agent_loop": ("sampling_params", "trajectory", "agent_name", "trace"),
    # Called to score samples whose storage is deferred: computes the reward through the reward
    # loop workers (`reward_loop_worker_handles`) when `reward_score` is None, else does nothing.
    "_compute_score": ("outputs", "kwargs"),
}
"""The private methods of ``AgentLoopWorkerTQ``, with the leading parameters (after ``self``)
used; :func:`worker_base` checks them."""

PRIVATE_ATTRIBUTES = ("config", "llm_client", "tokenizer", "reward_loop_worker_handles")
"""Worker attributes read (set by ``AgentLoopWorker.__init__``, undocumented):
``config`` (the whole trainer config, where ``+mentor.*`` is read), ``llm_client`` (the
rollout server's client; wrapped to force the ``prefix`` credit's hint steps),
``tokenizer`` (decoding attempts for the verifier, encoding the forced steps) and
``reward_loop_worker_handles`` (None when rewards are computed in the trainer: refused)."""

MANAGER_ATTRIBUTE = "agent_loop_workers_class"
"""``AgentLoopManagerTQ.__init__`` sets this attribute to ``AgentLoopWorkerTQ``
unconditionally; :class:`mentor_rl._verl_worker.MentorAgentLoopManager` sets its own after
``super().__init__()``; ``AgentLoopManager._init_agent_loop_workers`` (private) constructs it
with ``(config, llm_client, teacher_client, reward_loop_worker_handles)``."""

RAY_ACTOR_CLASS = "__ray_actor_class__"
"""Ray's attribute holding the class a ``@ray.remote`` class wraps (``AgentLoopWorkerTQ`` is
one; a Ray actor class cannot be subclassed, its wrapped class can). verl reads it too."""

TQ_LAYOUT = {
    "sample_key": "{uid}_{session_id}_{index}",
    "prompt_key": "{uid}",
    "fields": ("prompts", "responses", "response_mask", "rollout_log_probs", "rm_scores", "extra_fields", "uid"),
}
"""TransferQueue's layout of a group, as ``agent_loop_tq.py`` writes it and ``replay_buffer.py``
reads it: samples keyed ``{uid}_{session_id}_{index}`` (the replay buffer groups by the part
before the first ``_``; GRPO by the stored ``uid`` field), the prompt's status tag on the key
``uid``. The plug-in stores a group's rows under session ids ``0..rows-1`` and adds
``extra_fields["mentor"]`` (read back by :class:`mentor_rl._verl_worker.MentorReplayBuffer`)."""

REPLAY_BUFFER_API = ("sample", ("global_steps", "partition_id", "batch_size"))
"""``ReplayBuffer.sample(...) -> (KVBatchMeta, metrics)``, the documented custom-sampler seam
(``trainer.v1.sampler.custom_sampler``); a custom sampler is constructed with
``trainer_mode, trainer_config, max_off_policy_threshold, max_off_policy_strategy,
sampler_kwargs, refill_fn`` only (no DAPO settings: see the README)."""


def _params(method: Any) -> Tuple[str, ...]:
    # Ray wraps actor methods for tracing and adds a `_ray_trace_ctx` keyword.
    return tuple(
        name
        for name, p in inspect.signature(method).parameters.items()
        if name not in ("self", "_ray_trace_ctx") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    )


def run_prompt_source(base: type) -> str:
    return inspect.getsource(base._run_prompt)


def check_api(base: type, *, hashes: Optional[set] = None) -> None:
    """Raises ImportError naming every private method of :data:`PRIVATE_METHODS` that ``base``
    (the unwrapped ``AgentLoopWorkerTQ``) lacks or whose leading parameters differ, and when
    the source of ``_run_prompt`` is not one of :data:`RUN_PROMPT_SHA256` (``hashes``)."""
    problems = []
    for name, params in PRIVATE_METHODS.items():
        method = getattr(base, name, None)
        if not callable(method):
            problems.append(f"{name} is missing")
            continue
        have = _params(method)
        if have[: len(params)] != params:
            problems.append(f"{name}{params} became {name}{have}")
    if not problems:
        digest = hashlib.sha256(run_prompt_source(base).encode("utf-8")).hexdigest()
        if digest not in (RUN_PROMPT_SHA256 if hashes is None else hashes):
            problems.append(
                f"the source of AgentLoopWorkerTQ._run_prompt changed (sha256 {digest}); the plug-in relies on its order of events "
                "(mentor_rl/_verl_worker.py) and must be checked against this verl release"
            )
    if problems:
        raise ImportError("mentor_rl's verl plug-in: verl's internals differ from the checked ones: " + "; ".join(problems))


def worker_base() -> type:
    """``AgentLoopWorkerTQ``'s own class (unwrapped from its Ray actor class), checked."""
    check_versions()
    from verl.trainer.ppo.v1 import agent_loop_tq

    base = getattr(agent_loop_tq.AgentLoopWorkerTQ, RAY_ACTOR_CLASS)
    check_api(base)
    return base
