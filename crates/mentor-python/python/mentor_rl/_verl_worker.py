"""The MENTOR step inside verl's V1 trainer (``>=0.9,<0.10``), without a fork.

Switched on by config (see the package README, "verl"):

- ``+actor_rollout_ref.rollout.agent.agent_loop_manager_class=mentor_rl.verl.MentorAgentLoopManager``
  makes every agent-loop worker a :class:`MentorAgentLoopWorker`;
- ``+mentor.*`` holds the settings (:class:`MentorSettings`);
- optionally ``trainer.v1.sampler.custom_sampler.{path=pkg://mentor_rl.verl,name=MentorReplayBuffer}``
  logs the ``mentor/*`` metrics.

One ``_run_prompt`` call of the worker owns one GRPO group; the plug-in runs verl's own method
(no copy of it) with a collector in the context its session tasks copy. With the mentor on
(training, not validation), the sessions are generated and scored as verl does, but kept
instead of stored; when the last one is scored, one :class:`mentor_rl.MentorStep` (the Rust
trainer's step, the same one ``MentorGRPOTrainer`` drives) runs on the group: when no attempt is
correct it asks the mentor for a hint, has the hinted prompts sampled through the same rollout
server and agent loop and scored by the same reward workers, escalates, and plans the group's
rows; the rows are stored under the group's ``uid`` (the replay buffer and GRPO group by it)
before that last session returns, and verl writes the group's terminal status only after every
session has returned, so the trainer never sees a group before its mentor round is over. Every
private name of verl used here goes through :mod:`mentor_rl._verl_compat`.

Credit modes (``mentor.credit``), as stored rows:

- ``in_context``: the hinted prompt's ids, the sampled response, its log-probs;
- ``stripped``: the original prompt's ids with the response sampled under the hint, and the
  hinted sampling log-probs as ``rollout_log_probs`` (leave rollout correction off);
- ``stripped_is``: as ``stripped``, with ``algorithm.rollout_correction.rollout_is`` required
  (``token`` or ``sequence``): verl's importance weights ``exp(old_log_prob - rollout_log_prob)``
  then correct for the hint;
- ``prefix``: the original prompt; the hint's worked steps (the level-3 hint's solution start)
  forced as the response's first tokens, with response mask ``mentor.prefix_mask`` (1: trained,
  0: excluded from the loss) and log-prob 0.0, then the sampled continuation. A hint without
  worked steps gives a ``stripped`` row.

Differences from the Rust trainer, where verl's design decides: each group is its own step (the
per-step budget ``max_groups`` is one group; the ``on_collapse_event`` trigger is not offered);
``augment``'s extra group and the hinted rows of ``replace`` and ``nurl`` are stored under the
collapsed group's ``uid``, so verl's GRPO normalises the whole group together (``prefix``'s fixed
baseline is not used: verl computes the advantages); ``Mentor("self")`` is not offered; the hint
memory (:class:`mentor_rl.HintMemory`) lives in each agent-loop worker and is not checkpointed.
Correctness (what collapses and rescues a group) is judged in the worker by
:func:`mentor_rl.verl.verdict` on the decoded response (so the mentor reads verdicts whatever
reward function verl uses); the reward workers' scores are the rewards.
"""

import asyncio
import contextvars
import logging
import os
import time
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

from . import _verl_compat as compat

# Before anything of verl is imported: a verl outside the checked range fails here, and a
# `_run_prompt` other than the checked one fails in `worker_base()`.
compat.check_versions()

import ray  # noqa: E402
import transfer_queue as tq  # noqa: E402
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ  # noqa: E402
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync  # noqa: E402

from ._native import HintMemory, Mentor, MentorStep, Refinement, StaticHints  # noqa: E402
from ._trl_rewards import Intervention, prompt_text, task_key  # noqa: E402
from .verl import _code_spec, verdict  # noqa: E402

_Base = compat.worker_base()

logger = logging.getLogger(__name__)
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "INFO"))

__all__ = [
    "MentorAgentLoopManager",
    "MentorAgentLoopWorker",
    "MentorReplayBuffer",
    "MentorReplayBufferAsync",
    "MentorSettings",
    "check_config",
]

_CREDITS = ("in_context", "stripped", "stripped_is", "prefix")
_ASSEMBLIES = ("replace", "augment", "nurl")
_MENTORS = ("rules", "llm", "static", "refinement")


@dataclass
class MentorSettings:
    """The ``+mentor.*`` config keys: the Rust trainer's ``[strategy.intervention]`` names
    (:class:`mentor_rl.trl.Intervention`'s), plus ``enable``, the mentor (``mentor``:
    ``rules``, ``llm`` with ``base_url``/``model``/``api_key_env``, ``static``,
    ``refinement``), ``hinted_samples`` (completions per hint; default ``rollout.n``) and
    ``prefix_mask`` (``prefix`` credit: 1 trains the forced steps, 0 excludes them)."""

    enable: bool = True
    mentor: str = "rules"
    base_url: Optional[str] = None
    model: Optional[str] = None
    api_key_env: Optional[str] = None
    seed: int = 0
    credit: str = "in_context"
    assembly: str = "replace"
    keep_unhinted: int = 0
    start_level: int = 1
    escalate: bool = True
    max_level: int = 3
    hint_template: str = "\n\nHint: {hint}"
    max_extra_rollouts: Optional[int] = None
    memory_fade_after: int = 1
    hinted_samples: Optional[int] = None
    prefix_mask: int = 1

    def __post_init__(self) -> None:
        if self.credit not in _CREDITS:
            raise ValueError(f"mentor.credit: expected one of {_CREDITS}, got {self.credit!r}")
        if self.assembly not in _ASSEMBLIES:
            raise ValueError(f"mentor.assembly: expected one of {_ASSEMBLIES}, got {self.assembly!r}")
        if self.mentor not in _MENTORS:
            raise ValueError(f"mentor.mentor: expected one of {_MENTORS}, got {self.mentor!r}")
        if self.prefix_mask not in (0, 1):
            raise ValueError(f"mentor.prefix_mask: expected 0 or 1, got {self.prefix_mask!r}")
        if self.hinted_samples is not None and self.hinted_samples < 1:
            raise ValueError("mentor.hinted_samples: expected >= 1")
        self.intervention()  # the shared checks

    @classmethod
    def from_config(cls, config: Any) -> Optional["MentorSettings"]:
        """The settings under the config's top-level ``mentor`` key; None when it is absent or
        ``enable`` is false. Unknown keys raise ValueError naming them."""
        section = config.get("mentor") if hasattr(config, "get") else None
        if section is None:
            return None
        try:
            from omegaconf import OmegaConf

            data = OmegaConf.to_container(section, resolve=True) if OmegaConf.is_config(section) else dict(section)
        except ImportError:  # pragma: no cover - verl brings omegaconf
            data = dict(section)
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"mentor: unknown settings {unknown}")
        settings = cls(**data)
        return settings if settings.enable else None

    def intervention(self) -> Intervention:
        return Intervention(
            max_groups=1,
            start_level=self.start_level,
            escalate=self.escalate,
            max_level=self.max_level,
            assembly="replace" if self.assembly == "augment" else self.assembly,
            keep_unhinted=self.keep_unhinted,
            credit=self.credit,
            hint_template=self.hint_template,
            max_extra_rollouts=self.max_extra_rollouts,
            memory_fade_after=self.memory_fade_after,
        )

    def step_config(self, hinted_samples: int) -> Dict[str, Any]:
        config = self.intervention().step_config(hinted_samples)
        if self.assembly == "augment":  # the Rust step's own mode (TRL's fixed batch has no room for it)
            config["assembly"] = {"mode": "augment"}
        return config

    def make_mentor(self) -> Any:
        if self.mentor == "rules":
            return Mentor("rules")
        if self.mentor == "llm":
            return Mentor("llm", base_url=self.base_url, model=self.model, api_key_env=self.api_key_env)
        if self.mentor == "static":
            return StaticHints(self.seed)
        return Refinement()


def check_config(config: Any) -> Optional[MentorSettings]:
    """Raises ValueError when the trainer config cannot run the mentor: rewards computed in the
    trainer (a colocated reward model: the worker never sees them), or ``stripped_is`` without
    rollout correction's importance weights (or with ``bypass_mode``, where the hinted log-probs
    would become the PPO ratio's denominator). Returns the settings (None: mentor off)."""
    settings = MentorSettings.from_config(config)
    if settings is None:
        return None
    reward_model = config.get("reward", {}).get("reward_model", {}) or {}
    if reward_model.get("enable", False) and not reward_model.get("enable_resource_pool", False):
        raise ValueError(
            "mentor: the rewards must be computed in the rollout (reward.reward_model.enable_resource_pool=true, "
            "or a rule-based reward); with a colocated reward model the agent-loop workers never see them"
        )
    if settings.credit == "stripped_is":
        rc = config.get("algorithm", {}).get("rollout_correction", {}) or {}
        if rc.get("rollout_is") not in ("token", "sequence") or rc.get("bypass_mode", False):
            raise ValueError(
                "mentor.credit=stripped_is needs algorithm.rollout_correction.rollout_is=token or sequence "
                "(and bypass_mode=false): the importance weights are what correct for the hint"
            )
        if not config.actor_rollout_ref.rollout.get("calculate_log_probs", True):
            raise ValueError("mentor.credit=stripped_is needs actor_rollout_ref.rollout.calculate_log_probs=true")
    return settings


# ---- the worker -----------------------------------------------------------------------------


@dataclass
class _Sessions:
    """Where the sessions started under it put their scored outputs instead of storing them
    (``session_id -> (outputs, kwargs)``), and the tokens each session's first generate call is
    forced to continue (``prefix`` credit). A group's own sessions also carry what its mentor
    round needs: how many sessions it has (``expected``; the round starts when the last one is
    scored), the prompt row, the sampling parameters its sessions ran with, the trajectory and
    the trace flag."""

    sink: Dict[int, Tuple[List[Any], Dict[str, Any]]] = field(default_factory=dict)
    forced: List[int] = field(default_factory=list)
    forced_mask: int = 1
    expected: Optional[int] = None
    prompt: Dict[str, Any] = field(default_factory=dict)
    sampling_params: Optional[Dict[str, Any]] = None
    trajectory: Optional[Dict[str, Any]] = None
    trace: bool = False
    started: bool = False


@dataclass
class _SessionState:
    group: _Sessions
    forced_sent: bool = False


# The collector of the session running in this task (a task copies the context it is created in).
_SESSION: contextvars.ContextVar = contextvars.ContextVar("mentor_rl_verl_session", default=None)


class _ForcingClient:
    """The rollout server's client, forcing a session's first generation to continue its
    ``prefix`` credit tokens (the prompt is sent with them appended); otherwise the client."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def generate(self, request_id: Any, *, prompt_ids: List[int], **kwargs: Any) -> Any:
        state = _SESSION.get()
        if state is not None and state.group.forced and not state.forced_sent:
            state.forced_sent = True
            prompt_ids = list(prompt_ids) + list(state.group.forced)
        return await self._inner.generate(request_id, prompt_ids=prompt_ids, **kwargs)


async def _settle(tasks: List[Any]) -> List[BaseException]:
    """Waits for every task; returns the exceptions they raised."""
    results = await asyncio.gather(*tasks, return_exceptions=True)
    return [r for r in results if isinstance(r, BaseException)]


def _messages(raw_prompt: Any) -> List[Dict[str, Any]]:
    return [dict(m) for m in list(raw_prompt)]


def _task(prompt: Dict[str, Any]) -> Dict[str, Any]:
    """The mentor's task from a verl prompt row: the question (``extra_info.question``, else the
    last user message), the gold (``reward_model.ground_truth``: a math answer or a code spec,
    as :func:`mentor_rl.verl.compute_score` reads it) and the hint memory's key
    (``extra_info.id``, else the question's hash)."""
    extra = prompt.get("extra_info") or {}
    question = extra.get("question") if isinstance(extra, dict) else None
    if not isinstance(question, str) or not question:
        question = prompt_text(_messages(prompt["raw_prompt"])) or ""
    task: Dict[str, Any] = {"question": question}
    key = extra.get("id") if isinstance(extra, dict) else None
    task["id"] = str(key) if key is not None else task_key(question)
    gold = (prompt.get("reward_model") or {}).get("ground_truth")
    if hasattr(gold, "item") and callable(gold.item):
        gold = gold.item()
    spec = _code_spec(gold)
    if spec is not None:
        task["tests"] = spec["tests"]
        for k in ("format", "entry_point", "prompt", "setup_code", "imports", "reference_solution"):
            if spec.get(k) is not None:
                task[k] = spec[k]
    else:
        task["answer"] = str(gold)
    return task


class MentorAgentLoopWorker(_Base):
    """verl's ``AgentLoopWorkerTQ`` plus the MENTOR step on each training group (the class Ray
    runs is :data:`MentorAgentLoopWorkerActor`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._mentor_setup()

    def _mentor_setup(self) -> None:
        """Reads ``+mentor.*``; builds the mentor, the hint memory and the forcing client."""
        self.mentor_settings = check_config(self.config)
        if self.mentor_settings is None:
            return
        if self.reward_loop_worker_handles is None:
            raise ValueError("mentor: no reward loop workers in the rollout (see check_config)")
        self.mentor = self.mentor_settings.make_mentor()
        self.mentor_memory = HintMemory(self.mentor_settings.memory_fade_after)
        rollout = self.config.actor_rollout_ref.rollout
        self.mentor_step_config = self.mentor_settings.step_config(self.mentor_settings.hinted_samples or rollout.n)
        self.llm_client = _ForcingClient(self.llm_client)

    async def _run_prompt(self, prompt: dict, sampling_params: dict, trajectory: dict, trace: bool = False) -> None:
        """verl's own ``_run_prompt``, run with this group's collector in the context its
        session tasks copy: each session's output is scored and kept instead of stored, and
        the last one to be scored runs the mentor round (:meth:`_agent_loop_postprocess`), all
        before verl writes the group's terminal status."""
        if self.mentor_settings is None or trajectory["validate"]:
            return await super()._run_prompt(prompt, sampling_params, trajectory, trace)
        group = _Sessions(
            expected=prompt.get("__rollout_n__", self.config.actor_rollout_ref.rollout.n),
            # The row as verl's sessions get it (it pops these two before starting them).
            prompt={k: v for k, v in prompt.items() if k not in ("__rollout_n__", "__do_sample__")},
            trajectory=trajectory,
            trace=trace,
        )
        token = _SESSION.set(_SessionState(group))
        try:
            return await super()._run_prompt(prompt, sampling_params, trajectory, trace)
        finally:
            _SESSION.reset(token)

    async def _run_agent_loop(self, sampling_params: dict, *args: Any, **kwargs: Any) -> Any:
        state = _SESSION.get()
        if state is not None and state.group.sampling_params is None:
            # What verl's `_run_prompt` made of them (greedy for `__do_sample__ = False`): the
            # hinted sessions run with the same.
            state.group.sampling_params = dict(sampling_params)
        return await super()._run_agent_loop(sampling_params, *args, **kwargs)

    def _start_session(self, group: Optional[_Sessions], sampling_params, trajectory, trace, session_id, prompt):
        token = _SESSION.set(None if group is None else _SessionState(group))
        try:
            return asyncio.create_task(
                self._run_agent_loop(sampling_params, trajectory=trajectory, trace=trace, session_id=session_id, **prompt)
            )
        finally:
            _SESSION.reset(token)

    async def _agent_loop_postprocess(self, output: Any, validate: bool, **kwargs: Any) -> None:
        state = _SESSION.get()
        if state is None:
            return await super()._agent_loop_postprocess(output, validate, **kwargs)
        outputs = output if isinstance(output, list) else [output]
        if not outputs:
            return None
        forced = state.group.forced
        if forced:  # `prefix`: the forced steps are the response's start (judged with it)
            first = outputs[0]
            limit = self.config.actor_rollout_ref.rollout.get("response_length") or None
            first.response_ids = (list(forced) + list(first.response_ids))[:limit]
            first.response_mask = ([state.group.forced_mask] * len(forced) + list(first.response_mask))[:limit]
            if first.response_logprobs is not None:
                first.response_logprobs = ([0.0] * len(forced) + list(first.response_logprobs))[:limit]
        await self._compute_score(outputs, kwargs=kwargs)
        group = state.group
        group.sink[kwargs["session_id"]] = (outputs, kwargs)
        if group.expected is not None and len(group.sink) == group.expected and not group.started:
            # The group's last session: every attempt is scored, none is stored yet, and verl
            # writes the terminal status only after this returns. An error fails the group.
            group.started = True
            errors = await self._mentor_round(group, group.prompt, group.sampling_params, group.trajectory, group.trace)
            if errors:
                raise errors[0]
        return None

    def _judge(self, sessions: List[Tuple[List[Any], Dict[str, Any]]]) -> Tuple[List[str], List[Any], List[bool], List[float]]:
        texts, verdicts, passed, rewards = [], [], [], []
        for outputs, kw in sessions:
            last = outputs[-1]
            text = self.tokenizer.decode(last.response_ids, skip_special_tokens=True)
            v = verdict(kw.get("data_source", ""), text, (kw.get("reward_model") or {}).get("ground_truth"), kw.get("extra_info"))
            texts.append(text)
            verdicts.append(v)
            passed.append(bool(v.correct))
            rewards.append(float(last.reward_score) if last.reward_score is not None else 0.0)
        return texts, verdicts, passed, rewards

    async def _mentor_round(self, group: _Sessions, prompt, sampling_params, trajectory, trace) -> List[BaseException]:
        """The MENTOR step on this group's scored sessions; stores the planned rows. Returns the
        errors of hinted sessions (the group then fails, as any failed session makes it)."""
        t0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        settings = self.mentor_settings
        ordered = [group.sink[i] for i in sorted(group.sink)]
        texts, verdicts, passed, rewards = await loop.run_in_executor(None, self._judge, ordered)
        task = _task(prompt)
        collapsed = [] if any(passed) else [0]
        fallbacks = getattr(self.mentor, "fallbacks", 0)
        step = MentorStep(
            self.mentor_step_config,
            [
                {
                    "prompt": _messages(prompt["raw_prompt"]),
                    "rewards": rewards,
                    "task": task,
                    "attempts": texts if collapsed else None,
                    "verdicts": verdicts if collapsed else None,
                }
            ],
            collapsed,
            max_level=settings.max_level,
            memory=self.mentor_memory,
        )
        attempts: List[Tuple[_Sessions, List[int]]] = []  # per hinted attempt: its sessions, forced ids
        next_session = len(ordered)
        while step.need != "done":
            if step.need == "hints":
                asks = step.asks()
                answers = await loop.run_in_executor(
                    None,
                    lambda: [
                        self.mentor.intervene(task, texts, verdicts, level=a.level, previous_hints=a.previous_hints)
                        for a in asks
                    ],
                )
                step.answer(answers)
                continue
            requests = step.requests()
            tasks, started = [], []
            for r in requests:
                forced = (
                    self.tokenizer(r.assistant_prefix, add_special_tokens=False)["input_ids"] if r.assistant_prefix else []
                )
                sessions = _Sessions(forced=list(forced), forced_mask=settings.prefix_mask)
                hinted = dict(prompt, raw_prompt=_messages(r.prompt))
                for _ in range(r.n):
                    tasks.append(self._start_session(sessions, sampling_params, trajectory, trace, next_session, hinted))
                    next_session += 1
                started.append((sessions, list(forced)))
            errors = await _settle(tasks)
            if errors:
                return errors
            fed_rewards, fed_passed = [], []
            for sessions, _ in started:
                _, _, p, r = await loop.run_in_executor(None, self._judge, [sessions.sink[i] for i in sorted(sessions.sink)])
                fed_rewards.append(r)
                fed_passed.append(p)
            attempts.extend(started)
            step.feed(fed_rewards, fed_passed)
        plan = step.finish()
        counts = dict(plan.counts)
        record = {
            "collapsed": len(collapsed),
            "interventions": int(counts.get("intervened", 0)),
            "rescued": int(counts.get("rescued", 0)),
            "hinted_rollouts": int(counts.get("extra_rollouts", 0)),
            "guard_rejections": int(counts.get("guard_rejections", 0)),
            "fallbacks": int(getattr(self.mentor, "fallbacks", 0) - fallbacks),
            "seconds": time.perf_counter() - t0,
        }
        await self._store_plan(plan, ordered, attempts, prompt, record)
        return []

    async def _store_plan(self, plan, ordered, attempts, prompt, record) -> None:
        """Stores the plan's rows under the group's uid, as sessions ``0..rows-1``, each with
        ``extra_fields["mentor"]`` (``hinted``, ``hint_tokens``; the first row also the group's
        ``record``)."""
        original_ids = list(ordered[0][0][0].prompt_ids)
        stores = []
        for index, row in enumerate(plan.rows):
            hint_tokens = 0
            if row.attempt is None:
                outputs, kwargs = ordered[row.sample]
            else:
                sessions, forced = attempts[row.attempt]
                outputs, kwargs = sessions.sink[sorted(sessions.sink)[row.sample]]
                hinted_ids = list(outputs[0].prompt_ids)
                hint_tokens = len(hinted_ids) - len(original_ids) + len(forced)
                if not row.hinted_prompt:  # stripped, stripped_is, prefix: under the original prompt
                    for o in outputs:
                        if list(o.prompt_ids[: len(hinted_ids)]) == hinted_ids:
                            o.prompt_ids = original_ids + list(o.prompt_ids[len(hinted_ids) :])
                    kwargs = dict(kwargs, raw_prompt=prompt["raw_prompt"])
            note: Dict[str, Any] = {"hinted": int(row.attempt is not None), "hint_tokens": hint_tokens}
            if index == 0:
                note["group"] = record
            for o in outputs:
                o.extra_fields["mentor"] = note
            stores.append(_Base._agent_loop_postprocess(self, outputs, False, **dict(kwargs, session_id=index)))
        await asyncio.gather(*stores)


MentorAgentLoopWorkerActor = ray.remote(MentorAgentLoopWorker)
"""The Ray actor class :class:`MentorAgentLoopManager` starts."""


class MentorAgentLoopManager(AgentLoopManagerTQ):
    """verl's ``AgentLoopManagerTQ`` with :class:`MentorAgentLoopWorker` workers; the config is
    checked (:func:`check_config`) before any worker starts."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        config = kwargs["config"] if "config" in kwargs else args[0]
        check_config(config)
        super().__init__(*args, **kwargs)
        setattr(self, compat.MANAGER_ATTRIBUTE, MentorAgentLoopWorkerActor)


# ---- metrics --------------------------------------------------------------------------------

# ReplayBuffer keyword arguments verl does not pass to a custom sampler; read from
# `trainer.v1.sampler.sampler_kwargs` (DAPO's group filter among them).
_FORWARDED = ("filter_groups_metric", "train_batch_size", "gen_batch_size", "max_inflight_gen_batches", "sync_refill_failed_groups")


def mentor_metrics(notes: List[Any]) -> Dict[str, float]:
    """The ``mentor/*`` metrics of one sampled batch from its rows' ``extra_fields["mentor"]``:
    ``zrf`` (groups with no correct unhinted attempt, of the mentored groups), ``interventions``,
    ``rescued``, ``hinted_rows``, ``hinted_rollouts``, ``hint_tokens`` (what the hints added to
    the stored hinted rows' generation contexts), ``guard_rejections``, ``fallbacks`` (mentor
    replies the rules answered) and ``seconds`` (the mentor rounds' wall time, summed over
    groups). Empty when no row was mentored."""
    groups = [n["group"] for n in notes if isinstance(n, dict) and isinstance(n.get("group"), dict)]
    rows = [n for n in notes if isinstance(n, dict) and "hinted" in n]
    if not groups:
        return {}
    total = lambda k: float(sum(g.get(k, 0) for g in groups))  # noqa: E731
    return {
        "mentor/zrf": total("collapsed") / len(groups),
        "mentor/interventions": total("interventions"),
        "mentor/rescued": total("rescued"),
        "mentor/hinted_rows": float(sum(n["hinted"] for n in rows)),
        "mentor/hinted_rollouts": total("hinted_rollouts"),
        "mentor/hint_tokens": float(sum(n.get("hint_tokens", 0) for n in rows)),
        "mentor/guard_rejections": total("guard_rejections"),
        "mentor/fallbacks": total("fallbacks"),
        "mentor/seconds": total("seconds"),
    }


class _MentorMetricsMixin:
    def __init__(self, *args: Any, sampler_kwargs: Any = None, **kwargs: Any) -> None:
        for key in _FORWARDED:
            if sampler_kwargs is not None and key in sampler_kwargs and key not in kwargs:
                kwargs[key] = sampler_kwargs[key]
        super().__init__(*args, sampler_kwargs=sampler_kwargs, **kwargs)

    def sample(self, global_steps: int, partition_id: str, batch_size: int):
        batch, metrics = super().sample(global_steps=global_steps, partition_id=partition_id, batch_size=batch_size)
        keys = list(getattr(batch, "keys", None) or [])
        if keys and partition_id == "train":
            data = tq.kv_batch_get(keys=keys, partition_id=partition_id, select_fields=["extra_fields"])
            extra = data["extra_fields"]
            notes = [extra[i] for i in range(len(keys))]
            notes = [e.get("mentor") if isinstance(e, dict) else None for e in notes]
            metrics = dict(metrics)
            metrics.update(mentor_metrics(notes))
        return batch, metrics


class MentorReplayBuffer(_MentorMetricsMixin, ReplayBuffer):
    """verl's sync ``ReplayBuffer`` adding the ``mentor/*`` metrics to what ``sample`` returns
    (verl logs them with the step); DAPO's settings are read from ``sampler_kwargs``."""


class MentorReplayBufferAsync(_MentorMetricsMixin, ReplayBufferAsync):
    """The same over ``ReplayBufferAsync`` (verl's async trainer modes)."""
