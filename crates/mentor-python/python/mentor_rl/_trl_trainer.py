"""``MentorGRPOTrainer``: TRL's ``GRPOTrainer`` plus the MENTOR step for collapsed groups.

Built on TRL's ``rollout_func`` extension point, plus the smallest overrides TRL leaves no
public hook for; every private TRL name goes through ``_trl_compat`` (the fence), which
checks the TRL version before anything of trl is imported here. Per training step, on each
process:

1. the group is sampled through TRL's own generation path (``_generate_single_turn``:
   transformers ``generate``, or vLLM with ``use_vllm``) and scored with the trainer's own
   reward functions;
2. the collapse monitor flags the groups in which no completion is correct (the
   ``Intervention.correctness`` function's verdict, whatever partial credit the shaped reward
   gives) and the collapse event;
3. for each collapsed group (within the budget) the mentor diagnoses the failed attempts with
   the verdicts a verdict-keeping reward function (``mentor_rl.trl.math_reward`` /
   ``code_reward``) kept, and writes a guarded hint; with ``Mentor("self")`` the model being
   trained writes them, its prompts answered through the same generation path, in lockstep;
4. the hinted attempts are sampled on-policy, from the current weights, through the same
   generation path, and scored; a group with no correct hinted attempt escalates to the next
   level;
5. the rows handed back to TRL follow the assembly and credit settings.

Steps 3 to 5 are the Rust trainer's own: a :class:`mentor_rl.MentorStep`
(``mentor_integration::MentorStep``) decides which groups get hints, places the hint in the
prompt, escalates, rescues, assembles the rows and assigns their credit, from the settings of
:class:`mentor_rl.trl.Intervention` (the Rust ``[strategy.intervention]``); this module only
asks the mentor, generates, tokenises and scores what the step asks for, and maps its plan onto
TRL's batch. Credit modes in TRL's terms:

- ``prefix``: the row is (original prompt -> the hint's worked steps + the sampled
  continuation) and its advantage is ``r - mean(failed group)``, unscaled, as in the Rust
  trainer. TRL's own group normalisation is replaced for those rows after it ran.
- ``in_context``: the row's prompt is the hinted prompt; TRL normalises in the group as usual.
- ``stripped_is``: the row's prompt is the original one and the hinted context's log-probs of
  the sampled tokens become TRL's ``old_per_token_logps`` for that row, so its clipped ratio
  ``pi(y|x) / pi(y|x, hint)`` corrects for the hint (Guide-GRPO). The other rows get the
  current policy's log-probs, which is what TRL uses when it has none (one extra no-grad
  forward pass over the batch, only in steps that have such rows).
- ``stripped``: the original prompt, no ratio.

With several processes (DDP, DeepSpeed, FSDP; vLLM in server or colocate mode) each process
runs its own step on its own groups, but every collective step runs in lockstep: each hinted
round samples the same number of rows on every process (a process with fewer hints pads with
copies of its first prompt and drops their outputs), so vLLM's gather-and-slice and ZeRO-3's
parameter gathering see equal calls; the extra behaviour-log-prob pass runs on every process
when any needs it; and the mentor metrics are summed (counts) or averaged (rates) over the
processes before they are logged.

Differences from the Rust trainer, where TRL's batch cannot express it: the hinted group has
``num_generations`` attempts (TRL's groups have a fixed size); ``augment`` and
``hinted_in_context`` are not offered (the batch size is fixed); the per-task hint memory
(:class:`mentor_rl.HintMemory`, keyed by the dataset's ``id`` column, else by the question's
text) lives on each process for its own groups and is not saved in TRL's checkpoints, so a
resumed run starts it empty; rewards are scored once inside the rollout (to find collapsed
groups) and again by TRL for the final rows, so a reward function runs twice on the unhinted
rows it keeps.
"""

import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _trl_compat as compat

# Before anything of trl (or torch) is imported: a TRL outside the tested range fails here.
compat.check_versions(required=True)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from accelerate.utils import gather_object  # noqa: E402
from trl import GRPOTrainer  # noqa: E402
from trl.data_utils import is_conversational  # noqa: E402

from ._native import CollapseMonitor, HintedRequest, HintMemory, MentorStep, StepAsk  # noqa: E402
from ._trl_rewards import Intervention, _resolve_correctness, prompt_text, task_key  # noqa: E402

__all__ = ["MentorGRPOTrainer"]

# What a process whose step is asking its mentor says in the per-turn collective (above any
# number of hinted prompts a process samples at once).
_ASKING = 1 << 30


@dataclass
class _Row:
    """One row handed back to TRL, with what its credit needs after TRL scored it."""

    prompt_ids: List[int]
    completion_ids: List[int]
    logprobs: Optional[List[float]]
    hinted: bool = False
    # Leading completion tokens the policy did not sample (the hint's forced steps, `prefix`).
    given_tokens: int = 0
    # The fixed baseline of the row's advantage (`prefix` credit), or None (TRL's own).
    baseline: Optional[float] = None
    # The behaviour log-probs of TRL's clipped ratio (`stripped_is`), or None.
    old_logps: Optional[List[float]] = None
    reward: float = 0.0


@dataclass
class _Attempt:
    """One hinted prompt of the step, sampled: ``n`` completions after ``context_ids`` (the
    hinted prompt's ids), each forced to start with ``forced_ids``."""

    context_ids: List[int]
    forced_ids: List[int]
    sampled: List[List[int]] = field(default_factory=list)
    logprobs: Optional[List[List[float]]] = None
    behaviour: Optional[List[List[float]]] = None


class MentorGRPOTrainer(compat.trainer_base(GRPOTrainer)):
    """``trl.GRPOTrainer`` plus the MENTOR step.

    Takes every argument ``GRPOTrainer`` takes (except ``rollout_func``, which it supplies),
    plus:

    - ``mentor``: a :class:`mentor_rl.Mentor` (``Mentor("self")``: the model being trained
      writes the diagnosis and the hint, through TRL's generation path, with the trainer's
      sampling settings and ``max_completion_length``), :class:`mentor_rl.StaticHints`,
      :class:`mentor_rl.Refinement`, or ``None`` (vanilla GRPO, with the collapse metrics);
    - ``intervention``: an :class:`mentor_rl.trl.Intervention` or a dict of its fields.

    With a mentor, one reward function must keep its verdicts (``last_verdicts``, as
    ``mentor_rl.trl.math_reward`` and ``code_reward`` do): the mentor reads their feedback.
    Collapse and rescue are judged on correctness (``Intervention.correctness``; by default
    ``math_reward`` / ``code_reward``): construction raises ValueError when no reward function
    says what is correct.
    The dataset's columns make the mentor's task: ``answer`` (and ``solution``) for math;
    ``tests``, ``format``, ``entry_point``, ``code_prompt``, ``test_setup_code``, ``test_imports``
    and ``reference_solution`` for code;
    ``question`` (default: the prompt's last user message) and ``id``.

    Metrics (through TRL's logging, so every ``report_to`` gets them): ``mentor/zrf``,
    ``mentor/collapse_event``, ``mentor/interventions``, ``mentor/rescued``,
    ``mentor/hinted_rows``, ``mentor/hinted_reward``, ``mentor/guard_rejections``,
    ``mentor/level_1`` .. ``mentor/level_3`` (hinted rounds per level) and ``mentor/seconds``
    (the whole MENTOR step, per process); with ``Mentor("self")`` also ``mentor/self_tokens``
    (tokens the learner generated as its mentor), ``mentor/self_turns`` and
    ``mentor/self_fallbacks`` (replies without a usable JSON object, replaced by the rules
    agent's step).
    """

    def __init__(self, *args: Any, mentor: Any = None, intervention: Any = None, **kwargs: Any) -> None:
        if kwargs.get("rollout_func") is not None:
            raise ValueError("rollout_func: MentorGRPOTrainer supplies its own rollout function")
        if intervention is None:
            intervention = Intervention()
        elif isinstance(intervention, dict):
            intervention = Intervention.from_dict(intervention)
        elif not isinstance(intervention, Intervention):
            raise ValueError("intervention: expected an Intervention, a dict of its fields, or None")
        if mentor is not None and not callable(getattr(mentor, "intervene", None)):
            raise ValueError("mentor: expected a Mentor, StaticHints, Refinement (anything with .intervene) or None")
        funcs = kwargs.get("reward_funcs")
        if funcs is not None:  # fail before TRL loads the model; checked again on TRL's list below
            _resolve_correctness(intervention.correctness, funcs if isinstance(funcs, (list, tuple)) else [funcs])
        self.mentor = mentor
        self.intervention = intervention
        self._collapse = CollapseMonitor(
            window=intervention.window, raise_above=intervention.raise_above, clear_below=intervention.clear_below
        )
        # The level each task's next intervention starts at, kept across steps as the Rust
        # trainer's plugin keeps it (the step reads and records it).
        self._memory = HintMemory(intervention.memory_fade_after)
        self._mentor_plan: Optional[List[_Row]] = None
        self._mentor_last_rewards: Optional[torch.Tensor] = None
        # Rows of each hinted generate call on this process (padding included): the same list
        # on every process, or collective generation would hang (checked by `cargo xtask trl`).
        self._mentor_hinted_calls: List[int] = []
        # Rows of each generate call that answered Mentor("self")'s prompts (the same rule).
        self._mentor_self_calls: List[int] = []
        # This step's Mentor("self") cost on this process: tokens generated, turns, fallbacks.
        self._mentor_self_cost: List[int] = [0, 0, 0]
        super().__init__(*args, rollout_func=self._mentor_rollout, **kwargs)
        for func in self.reward_funcs:
            if isinstance(func, nn.Module):
                raise ValueError(
                    "reward_funcs: MentorGRPOTrainer scores attempts inside the rollout and supports reward "
                    "functions (callables), not reward models"
                )
        self._correctness = _resolve_correctness(intervention.correctness, self.reward_funcs)
        if mentor is not None and self._verdict_source() is None:
            raise ValueError(
                "reward_funcs: the mentor reads verdicts; add mentor_rl.trl.math_reward or code_reward (or any "
                "reward function with a `last_verdicts` list) to reward_funcs"
            )
        if intervention.assembly == "nurl" and intervention.keep_unhinted >= self.num_generations:
            raise ValueError(
                f"intervention.keep_unhinted ({intervention.keep_unhinted}) leaves no hinted row in a group of "
                f"num_generations={self.num_generations}"
            )

    # ---- the hooks of the fence's two overrides of TRL ----------------------------------

    def _mentor_generate_and_score(self, inputs: List[Dict[str, Any]], run) -> Dict[str, Any]:
        self._mentor_plan = None
        self._mentor_last_rewards = None
        try:
            out = run()
            if self.model.training:
                plan = self._mentor_plan
                # The behaviour pass is a forward of the model: a collective under ZeRO-3/FSDP,
                # so every process runs it when any process needs it.
                need_old = self._any(plan is not None and any(r.old_logps is not None for r in plan))
                if plan is not None or need_old:
                    self._apply_credit(out, plan or [], need_old)
                if need_old:
                    (behaviour,) = self._sum([float(sum(1 for r in plan or [] if r.old_logps is not None))])
                    compat.metrics(self)["mentor/behaviour_rows"].append(behaviour)
                advantages = out[compat.ADVANTAGES]
                adv = advantages.reshape(advantages.size(0), -1)
                (nonzero,) = self._sum([float((adv != 0).any(dim=1).sum().item())])
                compat.metrics(self)["mentor/nonzero_advantage_rows"].append(nonzero)
            return out
        finally:
            self._mentor_plan = None

    def _mentor_rewards_gathered(self, rewards_per_func: Any) -> None:
        self._mentor_last_rewards = rewards_per_func

    # ---- the rollout ---------------------------------------------------------------------

    def _mentor_rollout(self, prompts: List[Any], trainer: Any) -> Dict[str, Any]:
        inputs = compat.rollout_inputs(self)
        training = self.model.training
        g = self.num_generations if training else self.num_generations_eval
        prompt_ids, completion_ids, logprobs = self._sample(prompts, g)
        if not training or inputs is None:  # evaluation is always without hints
            return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": logprobs}
        if len(prompts) % g != 0:
            raise ValueError(f"rollout: {len(prompts)} prompts do not make whole groups of {g}")
        t0 = time.perf_counter()
        texts = self._decode(completion_ids)
        rewards, verdicts, passed = self._score(inputs, prompts, texts, completion_ids)
        groups = len(prompts) // g
        # Collapse on correctness; the rewards (shaped) only feed the monitor's reward statistics.
        report = self._collapse.observe(passed, g, rewards=[r if math.isfinite(r) else 0.0 for r in rewards])
        rows = [
            _Row(list(p), list(c), list(logprobs[i]) if logprobs is not None else None, reward=rewards[i])
            for i, (p, c) in enumerate(zip(prompt_ids, completion_ids))
        ]
        step: Optional[MentorStep] = None
        tasks: Dict[int, Dict[str, Any]] = {}
        if self.mentor is not None:
            collapsed = [k for k in report["collapsed"] if k < groups]
            # Every group's task: the memory counts the solved ones and is keyed by task id.
            tasks = {k: self._task(inputs[k * g], prompts[k * g]) for k in range(groups)}
            failed = set(collapsed)
            step = MentorStep(
                self.intervention.step_config(g),
                [
                    {
                        "prompt": prompts[k * g],
                        "rewards": rewards[k * g : (k + 1) * g],
                        "task": tasks[k],
                        "attempts": texts[k * g : (k + 1) * g] if k in failed else None,
                        "verdicts": verdicts[k * g : (k + 1) * g] if k in failed and verdicts is not None else None,
                    }
                    for k in range(groups)
                ],
                collapsed,
                event_active=bool(report["event_active"]),
                max_level=self.intervention.max_level,
                memory=self._memory,
            )
        self._mentor_self_cost = [0, 0, 0]
        attempts: List[_Attempt] = []
        # Every process takes part in every collective of every round (asking Mentor("self"),
        # generating) as long as any process's step is under way: one collective per turn says
        # whether some process is asking its mentor (every process then asks, maybe nothing),
        # else how many hinted prompts the busiest one samples (every process samples as many).
        while True:
            need = "done" if step is None else step.need
            requests = step.requests() if step is not None and need == "samples" else []
            busiest = self._max(_ASKING if need == "hints" else len(requests))
            if busiest == 0:
                break
            if busiest >= _ASKING:
                asks = step.asks() if step is not None and need == "hints" else []
                results = self._ask_mentor(asks, tasks, texts, verdicts, prompts, g)
                if step is not None and asks:
                    step.answer(results)
                continue
            sampled = self._hinted_round(requests, inputs, prompts, g, busiest)
            attempts.extend(a for a, _, _ in sampled)
            if step is not None and requests:
                step.feed([r for _, r, _ in sampled], [p for _, _, p in sampled])
        counts: Dict[str, Any] = {}
        hinted_rewards: List[float] = []
        if step is not None:
            plan = step.finish()
            counts = dict(plan.counts)
            rows = self._apply_plan(plan, rows, attempts, prompt_ids, g)
            hinted_rewards = [r.reward for r in rows if r.hinted]
        levels = counts.get("levels_used", {})
        # Counts are summed over the processes, rates averaged, the event is any process's.
        names = ["interventions", "rescued", "guard_rejections", "level_1", "level_2", "level_3"]
        local = [float(counts.get("intervened", 0)), float(counts.get("rescued", 0))]
        local += [float(counts.get("guard_rejections", 0))] + [float(levels.get(str(k), 0)) for k in (1, 2, 3)]
        if self._self_mentor():  # the same on every process, so the summed lists keep one length
            names += ["self_tokens", "self_turns", "self_fallbacks"]
            local += [float(x) for x in self._mentor_self_cost]
        local += [float(len(hinted_rewards)), float(sum(hinted_rewards)), report["zrf"], float(report["event_active"])]
        local += [time.perf_counter() - t0, 1.0]
        total = self._sum(local)
        processes = total[-1]
        metrics = compat.metrics(self)
        for k, v in zip(names, total):
            metrics[f"mentor/{k}"].append(v)
        hinted_rows, hinted_sum, zrf_sum, events, seconds = total[len(names) : len(names) + 5]
        metrics["mentor/hinted_rows"].append(hinted_rows)
        if hinted_rows > 0:
            metrics["mentor/hinted_reward"].append(hinted_sum / hinted_rows)
        metrics["mentor/zrf"].append(zrf_sum / processes)
        metrics["mentor/collapse_event"].append(float(events > 0))
        metrics["mentor/seconds"].append(seconds / processes)
        self._mentor_plan = rows if any(r.hinted for r in rows) else None
        return {
            "prompt_ids": [r.prompt_ids for r in rows],
            "completion_ids": [r.completion_ids for r in rows],
            "logprobs": None if logprobs is None else [r.logprobs for r in rows],
        }

    def _self_mentor(self) -> bool:
        return bool(getattr(self.mentor, "writes_with_learner", False))

    def _ask_mentor(
        self,
        asks: List[StepAsk],
        tasks: Dict[int, Dict[str, Any]],
        texts: List[str],
        verdicts: Optional[List[Any]],
        prompts: List[Any],
        g: int,
    ) -> List[Optional[Dict[str, Any]]]:
        """The mentor's result for each of the step's ``asks`` (None: it had nothing to say).

        A mentor that writes with the learner (``Mentor("self")``) gets one session per group;
        each turn, the prompts of every open session are answered in one call of TRL's
        generation path, from the current weights. Every process makes as many such calls, of
        as many rows, as the busiest one (padding with copies, outputs dropped), as the hinted
        rounds do; a session takes at most four turns."""
        def about(a: StepAsk) -> Tuple[Dict[str, Any], List[str], List[Any]]:
            k = a.group
            return tasks[k], texts[k * g : (k + 1) * g], (verdicts or [])[k * g : (k + 1) * g]

        if not self._self_mentor():
            return [
                self.mentor.intervene(*about(a), level=a.level, previous_hints=a.previous_hints) for a in asks
            ]
        sessions = [self.mentor.begin(*about(a), level=a.level, previous_hints=a.previous_hints) for a in asks]
        live = [s for s in sessions if s is not None and not s.done]
        while True:
            width = self._max(len(live))
            if width == 0:
                break
            replies = self._self_replies([s.prompt() for s in live], prompts, width)
            for s, reply in zip(live, replies):
                s.answer(reply)
            live = [s for s in live if not s.done]
        cost = self._mentor_self_cost
        for s in sessions:
            if s is not None:
                cost[1] += s.turns
                cost[2] += s.fallbacks
        return [None if s is None else s.result() for s in sessions]

    def _self_replies(self, conversations: List[List[Dict[str, str]]], prompts: List[Any], width: int) -> List[str]:
        """The learner's replies to the mentor's ``conversations``: one sampled completion each,
        in one generate call of ``width`` rows. With plain-text training prompts (no chat
        template in play) a conversation is given as its messages' text, joined."""
        conversational = is_conversational({"prompt": prompts[0]})
        rows: List[Any] = [c if conversational else "\n\n".join(m["content"] for m in c) for c in conversations]
        real = len(rows)
        rows += [rows[0] if rows else prompts[0]] * (width - real)
        ids = self._prompt_ids(rows)
        self._mentor_self_calls.append(len(ids))
        sampled, _ = compat.generate(self, ids, 1)
        sampled = sampled[:real]
        self._mentor_self_cost[0] += sum(len(s) for s in sampled)
        return self._decode(sampled)

    def _hinted_round(
        self, requests: List[HintedRequest], inputs, prompts, g: int, width: int
    ) -> List[Tuple[_Attempt, List[float], List[bool]]]:
        """Samples and scores the step's hinted ``requests`` (``n == g`` completions each) in one
        call of ``width`` groups (this process's requests, then copies of its first prompt whose
        outputs are dropped, so that every process makes the same call). Returns each request's
        attempt, rewards and correctness."""
        tokenizer = compat.tokenizer(self)
        context = self._prompt_ids([r.prompt for r in requests]) if requests else []
        attempts = [
            _Attempt(
                context_ids=ids,
                forced_ids=tokenizer(r.assistant_prefix, add_special_tokens=False)["input_ids"] if r.assistant_prefix else [],
            )
            for r, ids in zip(requests, context)
        ]
        gen_ids = [a.context_ids + list(a.forced_ids) for a, r in zip(attempts, requests) for _ in range(r.n)]
        real = len(gen_ids)
        padding = (width - len(requests)) * g
        gen_ids += [list(p) for p in self._prompt_ids([prompts[0]] * padding)] if padding else []
        self._mentor_hinted_calls.append(len(gen_ids))
        sampled, logprobs = compat.generate(self, gen_ids, g)
        behaviour = None
        if self.intervention.credit == "stripped_is":  # a forward pass without vLLM: on the padded rows too
            behaviour = [list(lp) for lp in logprobs] if logprobs is not None else self._logps(gen_ids, sampled)
        out: List[Tuple[_Attempt, List[float], List[bool]]] = []
        if not requests:
            return out
        sampled = sampled[:real]
        # What is judged: the forced steps and the sampled tokens, under the original prompt.
        completions: List[List[int]] = []
        row_inputs, row_prompts = [], []
        at = 0
        for a, r in zip(attempts, requests):
            a.sampled = sampled[at : at + r.n]
            a.logprobs = logprobs[at : at + r.n] if logprobs is not None else None
            a.behaviour = behaviour[at : at + r.n] if behaviour is not None else None
            completions += [list(a.forced_ids) + c for c in a.sampled]
            row_inputs += [inputs[r.group * g]] * r.n
            row_prompts += [prompts[r.group * g]] * r.n
            at += r.n
        rewards, _, passed = self._score(row_inputs, row_prompts, self._decode(completions), completions)
        at = 0
        for a, r in zip(attempts, requests):
            out.append((a, rewards[at : at + r.n], passed[at : at + r.n]))
            at += r.n
        return out

    def _apply_plan(self, plan: Any, rows: List[_Row], attempts: List[_Attempt], prompt_ids: List[List[int]], g: int) -> List[_Row]:
        """The step's plan as TRL's rows: each planned row's prompt and completion tokens (the
        forced steps in the completion or in the prompt, as the plan says), its sampling
        log-probs, baseline and behaviour log-probs. TRL's batch keeps its size and order."""
        if len(plan.rows) != len(rows) or plan.groups * g != len(rows):
            raise RuntimeError(
                f"MentorGRPOTrainer: the step planned {len(plan.rows)} rows in {plan.groups} groups for a batch of "
                f"{len(rows)} (augment and hinted_in_context do not fit TRL's batch)"
            )
        out: List[_Row] = []
        for p in plan.rows:
            k, j = p.source_group, p.sample
            if p.attempt is None:
                base = rows[k * g + j]
                out.append(_Row(base.prompt_ids, base.completion_ids, base.logprobs, baseline=p.baseline, reward=p.reward))
                continue
            a = attempts[p.attempt]
            context = list(a.context_ids) if p.hinted_prompt else list(prompt_ids[k * g])
            forced = list(a.forced_ids)
            given = forced if p.prefix_in_loss else []
            if not p.prefix_in_loss:
                context += forced
            lps = None
            if a.logprobs is not None:
                lps = [math.nan] * len(given) + list(a.logprobs[j])
            out.append(
                _Row(
                    prompt_ids=context,
                    completion_ids=given + list(a.sampled[j]),
                    logprobs=lps,
                    hinted=True,
                    given_tokens=len(given),
                    baseline=p.baseline,
                    old_logps=list(a.behaviour[j]) if p.behaviour and a.behaviour is not None else None,
                    reward=p.reward,
                )
            )
        return out

    def _apply_credit(self, out: Dict[str, Any], plan: List[_Row], need_old: bool) -> None:
        """``prefix``: advantage ``r - baseline``; ``stripped_is``: the hinted context's
        log-probs as the behaviour log-probs (``need_old``: some process has such rows, so
        every process makes sure ``old_per_token_logps`` exists)."""
        advantages = out[compat.ADVANTAGES]
        if any(r.baseline is not None for r in plan):
            if self._mentor_last_rewards is None:
                raise RuntimeError("MentorGRPOTrainer: TRL did not score the batch through _calculate_rewards")
            rpf = self._mentor_last_rewards
            weights = self.reward_weights.to(rpf.device).unsqueeze(0)
            total = (rpf * weights).nansum(dim=1)
            total = compat.local_rows(self, total, len(plan)).to(advantages.device)
            for i, r in enumerate(plan):
                if r.baseline is not None:
                    advantages[i] = total[i] - r.baseline
        if need_old:
            old = out.get(compat.OLD_PER_TOKEN_LOGPS)
            completion_ids = out[compat.COMPLETION_IDS]
            if old is None:
                input_ids = torch.cat([out[compat.PROMPT_IDS], completion_ids], dim=1)
                mask = torch.cat([out[compat.PROMPT_MASK], out[compat.COMPLETION_MASK]], dim=1)
                with torch.no_grad():
                    old = compat.per_token_logps(self, input_ids, mask, completion_ids.size(1))
            old = old.clone()
            for i, r in enumerate(plan):
                lp = r.old_logps
                if lp is not None:
                    n = min(len(lp), old.size(1))
                    old[i, :n] = torch.tensor(lp[:n], dtype=old.dtype, device=old.device)
            out[compat.OLD_PER_TOKEN_LOGPS] = old

    # ---- across processes (each a collective: every process calls it, in the same order) --

    def _max(self, n: int) -> int:
        if self.accelerator.num_processes == 1:
            return n
        return int(max(gather_object([int(n)])))

    def _any(self, flag: bool) -> bool:
        return self._max(int(flag)) > 0

    def _sum(self, values: List[float]) -> List[float]:
        if self.accelerator.num_processes == 1:
            return list(values)
        rows = gather_object([list(values)])
        return [float(sum(col)) for col in zip(*rows)]

    # ---- helpers -------------------------------------------------------------------------

    def _sample(self, prompts: List[Any], g: int) -> Tuple[List[List[int]], List[List[int]], Optional[List[List[float]]]]:
        prompt_ids = self._prompt_ids(prompts)
        completion_ids, logprobs = compat.generate(self, prompt_ids, g)
        return prompt_ids, completion_ids, logprobs

    def _prompt_ids(self, prompts: List[Any]) -> List[List[int]]:
        return compat.tokenize_prompts(self, prompts)

    def _decode(self, completion_ids: Sequence[Sequence[int]]) -> List[str]:
        return self.processing_class.batch_decode(completion_ids, skip_special_tokens=True)

    def _score(self, inputs, prompts, texts: List[str], completion_ids) -> Tuple[List[float], Optional[List[Any]], List[bool]]:
        """The weighted reward of each row (NaN counts as 0), the verdicts of the first
        verdict-keeping reward function, and whether each row is correct (the
        ``Intervention.correctness`` function), for these rows only (no gather across
        processes)."""
        conversational = is_conversational({"prompt": prompts[0]})
        completions = [[{"role": "assistant", "content": t}] for t in texts] if conversational else list(texts)
        kwargs = compat.reward_kwargs(self, inputs)
        weights = self.reward_weights.tolist()
        total = [0.0] * len(texts)
        verdicts = None
        passed: Optional[List[bool]] = None
        source = self._verdict_source()
        correctness = self._correctness

        def call(func: Any) -> List[Any]:
            values = compat.call_reward_function(
                self, func, prompts=prompts, completions=completions, completion_ids=completion_ids, kwargs=kwargs
            )
            if len(values) != len(texts):
                raise ValueError(f"reward function {getattr(func, '__name__', func)!r}: {len(values)} rewards for {len(texts)} completions")
            return list(values)

        for index, (func, w) in enumerate(zip(self.reward_funcs, weights)):
            values = call(func)
            for i, v in enumerate(values):
                if v is not None and not math.isnan(float(v)):
                    total[i] += w * float(v)
            if func is source:
                verdicts = list(func.last_verdicts)
            if index == correctness.index:
                passed = correctness.flags(values)
        if passed is None:  # a correctness callable of its own
            passed = correctness.flags(call(correctness.func))
        return total, verdicts, passed

    def _verdict_source(self) -> Any:
        for func in self.reward_funcs:
            if isinstance(getattr(func, "last_verdicts", None), list):
                return func
        return None

    def _logps(self, prompt_ids: List[List[int]], completion_ids: List[List[int]]) -> List[List[float]]:
        """Per-token log-probs of ``completion_ids`` after ``prompt_ids`` under the current weights."""
        device = self.accelerator.device
        pad_id = compat.tokenizer(self).pad_token_id
        pad = compat.pad
        p = pad([torch.tensor(x) for x in prompt_ids], padding_value=pad_id, padding_side="left").to(device)
        pm = pad([torch.ones(len(x), dtype=torch.long) for x in prompt_ids], padding_value=0, padding_side="left").to(device)
        c = pad([torch.tensor(x if x else [pad_id]) for x in completion_ids], padding_value=pad_id, padding_side="right").to(device)
        cm = pad([torch.ones(max(len(x), 1), dtype=torch.long) for x in completion_ids], padding_value=0, padding_side="right").to(device)
        with torch.no_grad():
            logps = compat.per_token_logps(self, torch.cat([p, c], dim=1), torch.cat([pm, cm], dim=1), c.size(1))
        return [logps[i, : len(x)].tolist() for i, x in enumerate(completion_ids)]

    @staticmethod
    def _task(row: Dict[str, Any], prompt: Any) -> Dict[str, Any]:
        """The mentor's task dict from a dataset row."""
        task: Dict[str, Any] = {}
        question = row.get("question")
        if not isinstance(question, str) or not question:
            question = prompt_text(prompt) or ""
        task["question"] = question
        # The hint memory's key: the dataset's id, else the question's text (never one id
        # shared by every task).
        if row.get("id") is not None:
            task["id"] = str(row["id"])
        else:
            task["id"] = task_key(question)
        if row.get("tests") is not None:
            task["tests"] = row["tests"]
            # The columns CodeReward reads, under the task dict's names (one task record).
            for src, dst in (
                ("format", "format"),
                ("entry_point", "entry_point"),
                ("code_prompt", "prompt"),
                ("test_setup_code", "setup_code"),
                ("test_imports", "imports"),
                ("reference_solution", "reference_solution"),
            ):
                if row.get(src) is not None:
                    task[dst] = row[src]
        else:
            answer = row.get("answer")
            if answer is None:
                raise ValueError("dataset: the mentor needs an 'answer' column (math) or a 'tests' column (code)")
            task["answer"] = str(answer.item() if hasattr(answer, "item") else answer)
            if row.get("solution") is not None:
                task["solution"] = str(row["solution"])
        return task
