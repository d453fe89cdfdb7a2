"""The TRL-facing pieces that need neither torch nor trl: the reward functions with TRL's
signature (:class:`MathReward`, :class:`CodeReward`), the MENTOR step's settings
(:class:`Intervention`) and which reward function says "correct" (``_resolve_correctness``).

``mentor_rl.trl`` re-exports them (the public names live there) and ``mentor_rl._trl_trainer``
imports them from here: the two modules do not import each other's code at import time.
"""

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ._native import CodeSandbox, Verdict, verify_math


def _content_text(content: Any) -> str:
    """The text of one message's content: a string, or typed content blocks whose text parts
    are joined."""
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content or "")


def completion_text(completion: Any) -> str:
    """The text of one TRL completion: a plain string, or a conversational completion (a list
    of messages), whose assistant contents are joined."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, (list, tuple)):
        parts: List[str] = []
        for message in completion:
            if not isinstance(message, dict):
                raise ValueError(f"completions: expected a str or a list of messages, got {type(message).__name__}")
            if message.get("role", "assistant") != "assistant":
                continue
            parts.append(_content_text(message.get("content")))
        return "".join(parts)
    raise ValueError(f"completions: expected a str or a list of messages, got {type(completion).__name__}")


def _column(name: str, values: Optional[Sequence[Any]], n: int) -> List[Any]:
    if values is None:
        raise ValueError(f"{name}: the dataset needs a {name!r} column for this reward function")
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name}: {len(values)} values for {n} completions")
    return values


def _scalar(value: Any) -> Any:
    # numpy scalars, as datasets' arrow columns sometimes give them
    return value.item() if hasattr(value, "item") and callable(value.item) else value


def prompt_text(prompt: Any) -> Optional[str]:
    """The question of one TRL prompt: a plain string, or the text of the last user message of a
    conversational prompt (a list of messages); ``None`` when there is none."""
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, dict):
        prompt = [prompt]
    if isinstance(prompt, (list, tuple)):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return _content_text(users[-1].get("content")) if users else None
    return str(prompt)


class MathReward:
    """TRL reward function ``math_reward(completions, answer, prompts=None, **kwargs) -> list[float]``.

    ``answer`` is the dataset's gold column. ``prompts`` (TRL passes the dataset's ``prompt``
    column under that name to every reward function; ``prompt=`` is accepted too: a string, or
    chat messages whose last user message is taken) are the questions; their words may name
    what an answer counts ("42 pencils"), and every other word of the answer region must be a
    known unit or a neutral phrase, or the answer is ``no_answer``. ``threads`` caps the
    verifier's threads (default: all cores). The verdicts of the last call are kept in
    :attr:`last_verdicts`."""

    def __init__(self, *, threads: Optional[int] = None, name: str = "math_reward") -> None:
        self.threads = threads
        self.__name__ = name
        self.last_verdicts: List[Verdict] = []

    def __call__(
        self,
        completions: Sequence[Any],
        answer: Optional[Sequence[Any]] = None,
        prompts: Optional[Sequence[Any]] = None,
        prompt: Optional[Sequence[Any]] = None,
        **kwargs: Any,
    ) -> List[float]:
        texts = [completion_text(c) for c in completions]
        golds = [str(_scalar(a)) for a in _column("answer", answer, len(texts))]
        given = prompts if prompts is not None else prompt
        questions = None if given is None else [prompt_text(p) for p in _column("prompts", given, len(texts))]
        verdicts = verify_math(golds, texts, threads=self.threads, questions=questions)
        self.last_verdicts = verdicts
        return [v.reward for v in verdicts]

    def __repr__(self) -> str:
        return f"MathReward(threads={self.threads!r})"


class CodeReward:
    """TRL reward function ``code_reward(completions, tests, **kwargs) -> list[float]``.

    Dataset columns (TRL passes every column to reward functions by name):

    - ``tests``: HumanEval test code defining ``check``, a list of MBPP ``assert`` lines, or
      stdin/stdout cases;
    - ``format`` (optional): ``"humaneval"``, ``"mbpp"`` or ``"stdio"``; default
      ``"humaneval"`` for a test string, ``"mbpp"`` for a list;
    - ``entry_point``: the function under test (HumanEval, required);
    - ``code_prompt``: HumanEval's ``prompt`` field, the code the program continues and the
      helper functions its tests call (HumanEval/32, /38, /50). Required for HumanEval rows:
      TRL's own ``prompt`` column holds the chat messages, not this code;
    - ``test_imports`` and ``test_setup_code`` (MBPP, optional): the dataset's import lines and
      setup code, as sanitized and full MBPP name them. The tests' own interpreter runs them;
      a stdlib module the tests use is imported there in any case, never taken from the
      program.

    A row that lacks a column its format needs raises ValueError naming the column (a HumanEval
    row without ``code_prompt``; an MBPP row whose tests read a value that only its missing
    ``test_setup_code`` defines). The sandbox (``sandbox=`` or one :class:`mentor_rl.CodeSandbox`
    with default limits, built on the first call) judges the completions in parallel through
    the same task record as ``mentor verify code``; a sandbox failure scores 0 (a
    ``verifier_error`` verdict), as in the Rust trainer. The verdicts of the last call are kept
    in :attr:`last_verdicts`."""

    def __init__(self, *, sandbox: Optional[CodeSandbox] = None, name: str = "code_reward") -> None:
        self._sandbox = sandbox
        self.__name__ = name
        self.last_verdicts: List[Verdict] = []

    @property
    def sandbox(self) -> CodeSandbox:
        """The sandbox in use (built on first use)."""
        if self._sandbox is None:
            self._sandbox = CodeSandbox()
        return self._sandbox

    def __call__(
        self,
        completions: Sequence[Any],
        tests: Optional[Sequence[Any]] = None,
        format: Optional[Sequence[Optional[str]]] = None,
        entry_point: Optional[Sequence[Optional[str]]] = None,
        code_prompt: Optional[Sequence[Optional[str]]] = None,
        test_imports: Optional[Sequence[Any]] = None,
        test_setup_code: Optional[Sequence[Optional[str]]] = None,
        **kwargs: Any,
    ) -> List[float]:
        texts = [completion_text(c) for c in completions]
        n = len(texts)
        tests = [_scalar(t) for t in _column("tests", tests, n)]

        def optional(name: str, values: Optional[Sequence[Any]], convert: Callable[[Any], Any] = _scalar) -> List[Any]:
            if values is None:
                return [None] * n
            return [None if v is None else convert(v) for v in _column(name, values, n)]

        formats = optional("format", format)
        entries = optional("entry_point", entry_point)
        prompts = optional("code_prompt", code_prompt)
        imports = optional("test_imports", test_imports, lambda v: [str(x) for x in v])
        setups = optional("test_setup_code", test_setup_code)
        formats = [f or ("humaneval" if isinstance(t, str) else "mbpp") for f, t in zip(formats, tests)]
        for i, f in enumerate(formats):
            if f == "humaneval" and prompts[i] is None:
                raise ValueError(
                    f"code_prompt: row {i} is a HumanEval task and the dataset has no 'code_prompt' value for it "
                    "(the task's prompt: the code the program continues and the helpers its tests call)"
                )
        verdicts: List[Optional[Verdict]] = [None] * n
        # verify_many takes one format per call: one parallel call per format present.
        for fmt in sorted(set(formats)):
            idx = [i for i in range(n) if formats[i] == fmt]
            out = self.sandbox.verify_many(
                [texts[i] for i in idx],
                tests=[tests[i] for i in idx],
                format=fmt,
                entry_points=[entries[i] for i in idx],
                prompts=[prompts[i] for i in idx],
                setup_codes=[setups[i] for i in idx],
                imports=[imports[i] for i in idx],
                errors="verdict",
            )
            for i, v in zip(idx, out):
                if v.outcome == "verifier_error" and _MISSING_SETUP in str(v.feedback):
                    column = "test_setup_code" if setups[i] is None else "test_imports"
                    raise ValueError(f"{column}: row {i}: {v.feedback.get('message', v.feedback)}")
                verdicts[i] = v
        self.last_verdicts = [v for v in verdicts if v is not None]
        return [v.reward for v in self.last_verdicts]

    def __repr__(self) -> str:
        return "CodeReward()"


# What the judge says of MBPP tests that read a value only the task's setup code would define.
_MISSING_SETUP = "which the task's own code does not define"


math_reward = MathReward()
"""The default :class:`MathReward` (all cores)."""

code_reward = CodeReward()
"""The default :class:`CodeReward` (a sandbox with default limits, built on first use)."""


_TRIGGERS = ("per_group", "on_collapse_event")
_ASSEMBLIES = ("replace", "nurl")
_CREDITS = ("prefix", "in_context", "stripped_is", "stripped")


@dataclass
class Intervention:
    """The MENTOR step's settings, with the names of the Rust trainer's
    ``[strategy.intervention]``.

    - ``trigger``: ``"per_group"`` (every collapsed group, the default) or
      ``"on_collapse_event"`` (only while the collapse monitor's event is in force);
    - ``max_groups``: the per-step budget of intervened groups (per process);
    - ``start_level``: the first hint level (1 nudge, 2 plan, 3 partial worked solution);
      ``escalate``: a group still all-fail gets the next level, up to ``max_level``;
    - ``assembly``: ``"replace"`` (the hinted group takes the collapsed group's place) or
      ``"nurl"`` (keep ``keep_unhinted`` failed attempts, the rest hinted); ``"augment"`` has no
      place in TRL's fixed-size batch;
    - ``credit``: ``"prefix"`` (original prompt -> the hint's worked steps + the sampled
      continuation, advantage ``r - mean(failed group)``), ``"in_context"`` (the hinted prompt),
      ``"stripped_is"`` (original prompt; the hinted sampling log-probs as the behaviour log-probs
      of TRL's clipped ratio) or ``"stripped"`` (original prompt, no ratio);
    - ``max_extra_rollouts``: the per-step budget of hinted completions (per process; None:
      no limit beyond ``max_groups``), as the Rust trainer's ``max_extra_rollouts_per_step``;
    - ``hint_template``: where the hint goes in the last user message: the Rust trainer's
      ``hint_format`` (``{prompt}`` the message, once; ``{hint}`` the hint's text), or, without
      ``{prompt}``, text appended to the message (``"\n\nHint: {hint}"``, the default, is
      ``"{prompt}\n\nHint: {hint}"``). A blank hint (the ``retry`` control) leaves the prompt
      as it is;
    - ``window``, ``raise_above``, ``clear_below``: the collapse monitor;
    - ``memory_fade_after``: the per-task hint memory (the Rust trainer's): a task starts at
      the level that last rescued it, one level lower after this many steps in which its group
      had a correct attempt;
    - ``correctness``: what says a completion is *correct*, which alone decides that a group
      collapsed (no completion correct) and that a hinted group was rescued (one correct),
      while the advantages keep the trainer's weighted, shaped reward. The ``__name__`` of one
      of the trainer's reward functions, or a callable with a reward function's signature
      returning one value per completion. A value counts as correct when it is ``True`` or at
      least 1 (so a 0/1 accuracy reward works as is; partial credit below 1, ``None`` and NaN
      do not); a function with ``last_verdicts`` (``math_reward``, ``code_reward``) is read
      through its verdicts' ``correct``. Default (``None``): the first
      :class:`MathReward` / :class:`CodeReward` among the reward functions, else the first
      that keeps verdicts (a ``last_verdicts`` list, as a wrapper of them may); the trainer
      raises ValueError at construction when there is none and nothing is named.
    """

    trigger: str = "per_group"
    max_groups: int = 8
    start_level: int = 1
    escalate: bool = True
    max_level: int = 3
    assembly: str = "replace"
    keep_unhinted: int = 0
    credit: str = "prefix"
    hint_template: str = "\n\nHint: {hint}"
    max_extra_rollouts: Optional[int] = None
    window: int = 3
    raise_above: float = 0.5
    clear_below: float = 0.25
    memory_fade_after: int = 1
    correctness: Union[None, str, Callable[..., Sequence[Any]]] = None

    def __post_init__(self) -> None:
        if self.trigger not in _TRIGGERS:
            raise ValueError(f"trigger: expected one of {_TRIGGERS}, got {self.trigger!r}")
        if self.assembly not in _ASSEMBLIES:
            raise ValueError(f"assembly: expected one of {_ASSEMBLIES}, got {self.assembly!r}")
        if self.credit not in _CREDITS:
            raise ValueError(f"credit: expected one of {_CREDITS}, got {self.credit!r}")
        if not 1 <= self.start_level <= 3 or not 1 <= self.max_level <= 3:
            raise ValueError("start_level and max_level: expected 1, 2 or 3")
        if self.start_level > self.max_level:
            raise ValueError(f"start_level ({self.start_level}) is above max_level ({self.max_level})")
        if self.max_groups < 0 or self.keep_unhinted < 0:
            raise ValueError("max_groups and keep_unhinted: expected >= 0")
        if self.memory_fade_after < 1:
            raise ValueError("memory_fade_after: expected >= 1")
        if self.max_extra_rollouts is not None and self.max_extra_rollouts < 0:
            raise ValueError("max_extra_rollouts: expected >= 0 or None")
        if "{prompt}" in self.hint_template:
            if self.hint_template.count("{prompt}") != 1:
                raise ValueError("hint_template: must contain {prompt} once (or not at all, to append)")
        elif "{hint}" not in self.hint_template:
            raise ValueError("hint_template: text appended to the prompt must contain {hint}")
        c = self.correctness
        if not (c is None or (isinstance(c, str) and c) or (callable(c) and not isinstance(c, str))):
            raise ValueError(
                f"correctness: expected the name of a reward function, a callable or None, got {type(c).__name__}"
            )

    def step_config(self, hinted_samples: int) -> Dict[str, Any]:
        """These settings as the Rust trainer's ``[strategy.intervention]`` (what
        :class:`mentor_rl.MentorStep` takes), for hinted groups of ``hinted_samples``."""
        template = self.hint_template if "{prompt}" in self.hint_template else "{prompt}" + self.hint_template
        assembly: Dict[str, Any] = {"mode": self.assembly}
        if self.assembly == "nurl":
            assembly["keep_unhinted"] = self.keep_unhinted
        return {
            "trigger": self.trigger,
            "max_interventions_per_step": self.max_groups,
            # JSON has no infinity: "no limit" is the largest budget the Rust side reads.
            "max_extra_rollouts_per_step": 2**63 - 1 if self.max_extra_rollouts is None else self.max_extra_rollouts,
            "hinted_samples": hinted_samples,
            "start_level": self.start_level,
            "escalate": self.escalate,
            "assembly": assembly,
            "credit": self.credit,
            "hint_format": template,
            "memory_fade_after": self.memory_fade_after,
            "hinted_in_context": False,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Intervention":
        """From a dict of the fields above; unknown keys raise ValueError naming them."""
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"intervention: unknown settings {unknown}")
        return cls(**data)


def task_key(question: str) -> str:
    """The hint memory's key of a task that has no id: a hash of its question's text (never one
    key shared by every task)."""
    return "question/" + hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]


def _is_correct(value: Any) -> bool:
    """A correctness value read as a pass: True, or a number of at least 1."""
    if value is None:
        return False
    try:
        x = float(value)
    except (TypeError, ValueError):
        return False
    return not math.isnan(x) and x >= 1.0


def _func_name(func: Any) -> str:
    return str(getattr(func, "__name__", None) or type(func).__name__)


class _Correctness:
    """Which function says "correct", resolved against the trainer's reward functions:
    ``index`` is its place among them (its values come from the scoring pass), or None for a
    callable of its own, run after them."""

    def __init__(self, func: Any, index: Optional[int]) -> None:
        self.func = func
        self.index = index
        self.name = _func_name(func)

    def flags(self, values: Sequence[Any]) -> List[bool]:
        """Whether each completion is correct, from ``values`` (what the function returned
        for them), or from its verdicts when it keeps them (``last_verdicts``)."""
        verdicts = getattr(self.func, "last_verdicts", None)
        if isinstance(verdicts, list) and len(verdicts) == len(values) and all(hasattr(v, "correct") for v in verdicts):
            return [bool(v.correct) for v in verdicts]
        return [_is_correct(v) for v in values]

    def __repr__(self) -> str:
        return f"_Correctness({self.name!r}, index={self.index})"


def _resolve_correctness(spec: Any, reward_funcs: Sequence[Any]) -> _Correctness:
    """``Intervention.correctness`` against the trainer's ``reward_funcs`` (see there);
    ValueError when it names no reward function, or when it is None and no reward function
    keeps verdicts (neither :class:`MathReward` nor :class:`CodeReward` nor another with a
    ``last_verdicts`` list)."""
    names = [_func_name(f) for f in reward_funcs]
    if spec is None:
        for i, func in enumerate(reward_funcs):
            if isinstance(func, (MathReward, CodeReward)):
                return _Correctness(func, i)
        for i, func in enumerate(reward_funcs):  # a wrapper that keeps verdicts (as the mentor reads them)
            if isinstance(getattr(func, "last_verdicts", None), list):
                return _Correctness(func, i)
        raise ValueError(
            "intervention.correctness: collapse and rescue are judged on correctness, and no reward function says "
            f"what is correct: reward_funcs are {names}, with neither mentor_rl.trl.math_reward nor code_reward. "
            "Name the one that does (Intervention(correctness=\"<its __name__>\"): True or a value >= 1 is "
            "correct) or pass a callable with a reward function's signature returning one bool per completion"
        )
    if isinstance(spec, str):
        if spec not in names:
            raise ValueError(f"intervention.correctness: no reward function is named {spec!r}; reward_funcs are {names}")
        i = names.index(spec)
        return _Correctness(reward_funcs[i], i)
    for i, func in enumerate(reward_funcs):
        if func is spec:
            return _Correctness(func, i)
    return _Correctness(spec, None)
