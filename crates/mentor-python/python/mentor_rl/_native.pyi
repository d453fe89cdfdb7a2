"""Type stubs of ``mentor_rl._native``, the compiled part of ``mentor_rl`` (crates/mentor-python)."""

from os import PathLike
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, TypedDict, Union

__version__: str

# StrPath, Format, Tests, StdioCase, Hint, GuardResult, InterventionResult, TaskLike,
# VerdictLike and CollapseReport exist for type checkers only (not importable at run time).
StrPath = Union[str, "PathLike[str]"]
Format = Literal["humaneval", "mbpp", "stdio"]

class MentorRlError(Exception):
    """Base class of the errors raised by mentor_rl's machinery (bad arguments raise ValueError)."""

class SandboxError(MentorRlError):
    """The code sandbox could not run (runtime corrupt, engine failure, unjudgeable task)."""

class RuntimeMissingError(SandboxError):
    """The sandbox's Python runtime component is not installed: run ``cargo xtask setup``."""

class MentorError(MentorRlError):
    """The mentor could not run (backend failure without fallback)."""

class Verdict:
    """The judgement of one completion (wraps the Rust ``mentor_core::Verdict``)."""

    @property
    def correct(self) -> bool:
        """Whether the completion fully solved the task (then ``reward == 1.0``)."""
    @property
    def reward(self) -> float:
        """The reward, finite and in [0, 1] (partial credit only with ``reward="fraction_passed"``)."""
    @property
    def extracted(self) -> Optional[str]:
        """The final answer found in a math completion; None when none was found, and for code."""
    @property
    def outcome(self) -> str:
        """``correct``, ``no_answer``, ``wrong_value``, ... (math); ``passed``, ``wrong_answer``,
        ``timeout``, ``tampered``, ... (code); ``verifier_error`` when the verifier itself failed."""
    @property
    def feedback(self) -> Dict[str, Any]:
        """The verifier's evidence: the ``feedback`` object of a ``mentor verify math`` output line
        (outcome, extracted, source, parsed, gold, relation, detail) or of a ``mentor verify code``
        line (``domain: "code"``, outcome, tests_total, tests_passed, failed_test, exception,
        stdout, stderr, output_truncated, detail)."""
    def to_dict(self) -> Dict[str, Any]:
        """The whole verdict: ``{"reward", "passed", "feedback": {"domain": ..., ...}}``."""
    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> "Verdict":
        """Reads back what :meth:`to_dict` returns; ValueError when the invariants do not hold."""
    def __eq__(self, other: object) -> bool: ...

def verify_math(
    golds: Sequence[str],
    completions: Sequence[str],
    *,
    threads: Optional[int] = None,
    questions: Optional[Sequence[Optional[str]]] = None,
) -> List[Verdict]:
    """Judges ``completions[i]`` against ``golds[i]`` (LaTeX or plain; a GSM8K ``#### x`` gold is
    reduced to ``x``) in parallel with the GIL released, on all cores or ``threads`` threads.

    The whole answer region is read: a word in it must be a known unit, a neutral phrase or a
    word of ``questions[i]`` (what is counted: "42 pencils" for a question about pencils);
    anything else makes the answer ``no_answer``. Without ``questions``, nouns are not known.

    Raises ValueError when the lengths differ or ``threads`` is 0."""

def is_collapsed(passed: Sequence[bool]) -> bool:
    """Whether a group of attempts collapsed: none passed (``passed``: each attempt's
    ``Verdict.correct``, never a shaped reward). The one predicate of collapse and rescue,
    shared with the Rust trainer (``mentor_integration::is_collapsed``)."""

def math_equivalent(reference: str, candidate: str) -> bool:
    """Whether two answers (not completions) denote the same value (``\\frac{1}{2}`` and ``0.5``)."""

class StdioCase(TypedDict):
    input: str
    output: str

Tests = Union[str, Sequence[str], Sequence[Union[StdioCase, Tuple[str, str]]]]

class CodeSandbox:
    """CPython in a wasmtime sandbox (no files, network, processes or environment), judging
    programs test by test as ``mentor verify code`` does.

    The runtime component is ``<assets>/python-runtime/runner.wasm``, installed by
    ``cargo xtask setup``; ``assets`` defaults to the CLI's discovery: ``$MENTOR_HOME``, else
    ``$XDG_CACHE_HOME/mentor``, else ``~/.cache/mentor``. ``runtime`` names the component directly.
    The limits apply to every program; ``reward`` is ``"binary"`` or ``"fraction_passed"``.
    ``cpu_time`` and ``wall_time`` default to the Rust crate's: a native budget of 5 CPU seconds
    times the sandbox's recorded slowdown against native CPython, so a program that natively
    fits in 5 s fits here (``wall_time`` is twice ``cpu_time``).

    Raises RuntimeMissingError when the runtime is not installed, ValueError for bad limits."""

    def __init__(
        self,
        *,
        assets: Optional[StrPath] = None,
        runtime: Optional[StrPath] = None,
        cache_dir: Optional[StrPath] = None,
        concurrency: int = 0,
        cpu_time: Optional[float] = None,
        wall_time: Optional[float] = None,
        memory_bytes: int = 256 << 20,
        stdout_bytes: int = 64 << 10,
        stderr_bytes: int = 64 << 10,
        max_memory_bytes: int = 1 << 30,
        reward: Literal["binary", "fraction_passed"] = "binary",
    ) -> None: ...
    @property
    def runtime(self) -> str:
        """The runtime component in use."""
    @property
    def concurrency(self) -> int:
        """How many programs run at once in :meth:`verify_many` (0 at construction: all cores)."""
    def verify(
        self,
        program: str,
        *,
        tests: Tests,
        format: Format = "humaneval",
        entry_point: Optional[str] = None,
        prompt: Optional[str] = None,
        setup_code: Optional[str] = None,
        imports: Optional[Sequence[str]] = None,
        errors: Literal["raise", "verdict"] = "raise",
    ) -> Verdict:
        """Judges ``program`` (code, or a markdown answer holding a python block).

        The arguments are the task record ``mentor verify code`` reads (one conversion for both):

        - ``"humaneval"``: ``tests`` is the test code defining ``check(candidate)``;
          ``entry_point`` and ``prompt`` (the task's prompt: the signature the program continues
          and the helper functions its tests call) are required.
        - ``"mbpp"``: ``tests`` is a list of ``assert`` lines; ``setup_code``
          (``test_setup_code``) runs after the program, ``imports`` (``test_imports``) before it
          and in the tests' interpreter. A stdlib module the tests use is imported in the tests'
          interpreter in any case; only the program's functions and classes reach the tests.
        - ``"stdio"``: ``tests`` is a list of ``{"input", "output"}`` dicts or pairs.

        A failure of the sandbox raises SandboxError (``errors="raise"``) or gives a
        ``verifier_error`` verdict with reward 0 (``errors="verdict"``, as the Rust trainer does).
        Bad arguments raise ValueError naming the argument."""
    def verify_many(
        self,
        programs: Sequence[str],
        *,
        tests: Sequence[Tests],
        format: Format = "humaneval",
        entry_points: Optional[Sequence[Optional[str]]] = None,
        prompts: Optional[Sequence[Optional[str]]] = None,
        setup_codes: Optional[Sequence[Optional[str]]] = None,
        imports: Optional[Sequence[Optional[Sequence[str]]]] = None,
        errors: Literal["raise", "verdict"] = "raise",
    ) -> List[Verdict]:
        """Judges many programs in parallel (GIL released): ``tests[i]``, ``entry_points[i]``,
        ``prompts[i]``, ``setup_codes[i]`` and ``imports[i]`` go with ``programs[i]``, as in
        :meth:`verify`; verdicts in input order."""

class Hint(TypedDict):
    text: str
    level: int
    solution_prefix: Optional[str]
    source: str

class GuardResult(TypedDict):
    outcome: Literal["accepted", "redacted", "rejected"]
    redactions: List[str]
    rejections: List[Dict[str, str]]

class InterventionResult(TypedDict):
    mentor: str
    diagnosis: Optional[Dict[str, Any]]
    hint: Optional[Hint]
    guard: GuardResult

TaskLike = Mapping[str, Any]
VerdictLike = Union[Verdict, Mapping[str, Any]]

class Mentor:
    """The mentor the Rust trainer uses (``AgentMentor``): a diagnoser, a tutor and a guard.

    ``backend="rules"`` is offline and deterministic; ``backend="llm"`` asks an
    OpenAI-compatible endpoint (``base_url``, ``model``, the key read from the environment
    variable ``api_key_env``) and falls back to rules when it fails; ``backend="self"`` asks the
    caller's own model with the ``llm`` role prompts (the learner as its own mentor): a trainer
    drives it with :meth:`begin` (``MentorGRPOTrainer`` does), a script with
    ``intervene(..., generate=...)``; a reply without a usable JSON object falls back to the
    rules agent for that step. ``prompts`` is a folder of
    template files (as ``crates/mentor-agents/prompts``); the guard rejects or redacts hints that
    leak the answer, reproduce more than ``max_code_overlap`` of the reference code, or exceed
    ``max_hint_chars``."""

    def __init__(
        self,
        backend: Literal["rules", "llm", "self"] = "rules",
        *,
        base_url: Optional[str] = None,
        model: Optional[str] = None,
        api_key_env: Optional[str] = None,
        prompts: Optional[StrPath] = None,
        max_hint_chars: int = 2000,
        max_code_overlap: float = 0.5,
        redact: bool = True,
        timeout: float = 60.0,
        retries: int = 2,
        concurrency: int = 4,
        temperature: Optional[float] = None,
        max_tokens: Optional[int] = None,
    ) -> None: ...
    @property
    def backend(self) -> str: ...
    @property
    def writes_with_learner(self) -> bool:
        """Whether the caller's model writes the hints (``backend="self"``)."""
    @property
    def fallbacks(self) -> int:
        """Steps answered by the rules because the ``llm`` endpoint failed or (``self``) a reply
        could not be parsed."""
    def begin(
        self,
        task: TaskLike,
        attempts: Sequence[str],
        verdicts: Sequence[VerdictLike],
        *,
        level: Optional[int] = None,
        previous_hints: Optional[Sequence[Hint]] = None,
    ) -> Optional["MentorSession"]:
        """``backend="self"`` only: the intervention :meth:`intervene` would make, as a
        :class:`MentorSession` whose prompts the caller answers (so that it can batch the
        prompts of many groups into one generate call). None when an attempt passed."""
    def intervene(
        self,
        task: TaskLike,
        attempts: Sequence[str],
        verdicts: Sequence[VerdictLike],
        *,
        level: Optional[int] = None,
        previous_hints: Optional[Sequence[Hint]] = None,
        generate: Optional[Callable[[List[Dict[str, str]]], str]] = None,
    ) -> Optional[InterventionResult]:
        """Diagnoses the failed ``attempts`` (with their ``verdicts``) and writes a guarded hint at
        ``level`` (1 nudge, 2 plan, 3 partial worked solution; default 1, the trainer's start
        level). When the guard rejects a hint the tutor tries one level lower.

        ``task`` is a dict: math ``{"question", "answer", "solution"?, "id"?}`` (a GSM8K answer
        with its ``#### x`` line is split into rationale and gold), code ``{"question"?, "tests",
        "format"?, "entry_point"?, "prompt"?, "reference_solution"?, "id"?}``, or a serialised
        Rust task (with ``payload``).

        ``generate`` (``backend="self"`` only, and required there): the caller's model, from a
        list of ``{"role", "content"}`` messages to the reply text; called once per turn (at
        most four: a diagnosis and three levels).

        Returns ``{"mentor", "diagnosis", "hint": {"text", "level", "solution_prefix", "source"}
        or None, "guard": {"outcome", "redactions", "rejections"}}``, or None when an attempt
        passed (the group did not fail, so there is nothing to intervene on)."""

class MentorSession:
    """One failed group's intervention by ``Mentor("self")`` (from :meth:`Mentor.begin`): the
    diagnoser's prompt, then the tutor's at the level asked, then the guard; a rejected hint
    asks the tutor one level lower, down to 1. At most four turns.

    Loop: ``while not s.done: s.answer(model(s.prompt()))``, then ``s.result()``."""

    @property
    def done(self) -> bool:
        """Whether the session is over."""
    @property
    def turns(self) -> int:
        """Replies taken so far."""
    @property
    def fallbacks(self) -> int:
        """Replies without a usable JSON object, replaced by the rules agent's step."""
    def prompt(self) -> Optional[List[Dict[str, str]]]:
        """The conversation to answer next (system, then user message), or None when over."""
    def answer(self, reply: str) -> None:
        """Takes the model's reply to :meth:`prompt`; MentorError after the session ended."""
    def result(self) -> InterventionResult:
        """What :meth:`Mentor.intervene` returns (``"mentor": "self"``); MentorError before the
        session is over."""

class StaticHints:
    """Baseline: a generic hint per domain drawn at random (seeded) without diagnosis."""

    def __init__(self, seed: int = 0, *, prompts: Optional[StrPath] = None) -> None: ...
    def intervene(
        self,
        task: TaskLike,
        attempts: Sequence[str],
        verdicts: Sequence[VerdictLike],
        *,
        level: Optional[int] = None,
        previous_hints: Optional[Sequence[Hint]] = None,
    ) -> Optional[InterventionResult]:
        """Same call and result as :meth:`Mentor.intervene` (``diagnosis`` is None)."""

class Refinement:
    """Baseline: one failed answer (at most ``quote_chars`` of it) and its feedback shown back,
    through the same guard as :class:`Mentor`."""

    def __init__(
        self,
        *,
        quote_chars: int = 200,
        max_hint_chars: int = 2000,
        max_code_overlap: float = 0.5,
        redact: bool = True,
    ) -> None: ...
    def intervene(
        self,
        task: TaskLike,
        attempts: Sequence[str],
        verdicts: Sequence[VerdictLike],
        *,
        level: Optional[int] = None,
        previous_hints: Optional[Sequence[Hint]] = None,
    ) -> Optional[InterventionResult]:
        """Same call and result as :meth:`Mentor.intervene` (``diagnosis`` is None)."""

class CollapseReport(TypedDict):
    collapsed: List[int]
    zrf: float
    zero_std_frac: float
    mean_reward: float
    window_zrf: float
    event: Literal["quiet", "started", "ongoing", "cleared"]
    event_active: bool

class CollapseMonitor:
    """Collapse over training steps, as the trainer's monitor sees it: a group is collapsed
    when none of its attempts passed (binary correctness, whatever partial credit the rewards
    give); an event starts when the mean collapsed-group fraction (ZRF) over the last
    ``window`` steps rises above ``raise_above`` and clears when it falls below
    ``clear_below``."""

    def __init__(self, *, window: int = 3, raise_above: float = 0.5, clear_below: float = 0.25) -> None: ...
    def observe(
        self, passed: Sequence[bool], group_size: int, *, rewards: Optional[Sequence[float]] = None
    ) -> CollapseReport:
        """Records one step: ``passed`` says whether each unhinted attempt passed, group after
        group (``group_size`` per prompt, contiguous, as TRL orders them); ``collapsed`` lists
        the groups where none passed. ``rewards`` (optional, finite, one per attempt; default
        1.0 for a pass, 0.0 otherwise) feed ``mean_reward`` and ``zero_std_frac`` (TRL's
        ``frac_reward_zero_std``). Raises ValueError when ``passed`` holds anything but bools
        (a reward where a flag belongs: the pre-changelog ``observe(rewards, group_size)``
        call), when the flags do not make whole groups, or when ``rewards`` differ in length
        or are not finite."""
    @property
    def in_event(self) -> bool:
        """Whether a collapse event is in force."""
    def reset(self) -> None:
        """Forgets the history."""

class StepAsk:
    """One hint to ask for: the mentor's view of group ``group``'s failed attempts at ``level``."""

    @property
    def intervention(self) -> int: ...
    @property
    def group(self) -> int: ...
    @property
    def level(self) -> int: ...
    @property
    def previous_hints(self) -> List[Hint]: ...

class HintedRequest:
    """One hinted prompt to sample ``n`` completions of: ``prompt`` is the group's prompt (a str
    or chat messages, as given) with the hint placed by the step's ``hint_format``; each
    completion is forced to start with ``assistant_prefix`` when it is not None."""

    @property
    def attempt(self) -> int: ...
    @property
    def intervention(self) -> int: ...
    @property
    def group(self) -> int: ...
    @property
    def level(self) -> int: ...
    @property
    def hint(self) -> Hint: ...
    @property
    def prompt(self) -> Any: ...
    @property
    def assistant_prefix(self) -> Optional[str]: ...
    @property
    def n(self) -> int: ...

class PlanRow:
    """One row of the assembled batch, by reference: sample ``sample`` of the unhinted group
    ``source_group`` (``attempt`` None) or of hinted attempt ``attempt``; under the group's own
    prompt or the attempt's hinted one (``hinted_prompt``); the forced prefix in the loss
    (``prefix_in_loss``) or in the context; the hinted sampling log-probs as behaviour
    log-probs (``behaviour``); the advantage's fixed ``baseline`` (None: group-relative)."""

    @property
    def group(self) -> int: ...
    @property
    def source_group(self) -> int: ...
    @property
    def attempt(self) -> Optional[int]: ...
    @property
    def sample(self) -> int: ...
    @property
    def hinted_prompt(self) -> bool: ...
    @property
    def prefix_in_loss(self) -> bool: ...
    @property
    def behaviour(self) -> bool: ...
    @property
    def reward(self) -> float: ...
    @property
    def baseline(self) -> Optional[float]: ...
    @property
    def hint_level(self) -> Optional[int]: ...
    @property
    def rescued(self) -> bool: ...

class StepPlan:
    """The assembled batch of a finished :class:`MentorStep`."""

    @property
    def rows(self) -> List[PlanRow]: ...
    @property
    def groups(self) -> int: ...
    @property
    def interventions(self) -> List[Dict[str, Any]]: ...
    @property
    def rescued_groups(self) -> List[int]: ...
    @property
    def counts(self) -> Dict[str, Any]: ...

class HintMemory:
    """The per-task hint memory the Rust trainer keeps (``mentor_integration::HintMemory``): the
    level that last rescued each task, where its next intervention starts, dropping by one after
    ``fade_after`` steps in which the task's group had a correct attempt. Pass one object to
    every step's ``MentorStep(memory=...)``."""

    def __init__(self, fade_after: int = 1) -> None: ...
    def level(self, task_id: str) -> Optional[int]: ...
    def state(self) -> Dict[str, Dict[str, Any]]: ...
    def restore(self, state: Mapping[str, Mapping[str, Any]]) -> None: ...
    def __len__(self) -> int: ...

class MentorStep:
    """The MENTOR step of one batch, the Rust trainer's own (``mentor_integration::MentorStep``):
    which collapsed groups get hints, the hinted prompts, escalation, rescue, assembly and
    credit. Drive it: while ``need == "hints"``, answer :meth:`asks` with the mentor's results
    (:meth:`answer`); when ``need == "samples"``, sample and score :meth:`requests` and
    :meth:`feed` the outcomes; when ``need == "done"``, :meth:`finish`.

    ``intervention`` is the Rust ``[strategy.intervention]`` as a dict
    (:meth:`mentor_rl.trl.Intervention.step_config` writes it); ``groups`` one dict per group of
    the batch: ``prompt`` (a str or chat messages), ``rewards``, and for a collapsed group
    ``attempts``, ``verdicts`` and ``task`` (a mentor task dict); ``collapsed`` the collapsed
    groups (the monitor's ``collapsed``). With ``memory``, every group not collapsed counts as
    its task solved unhinted, each task starts at the memory's level, and :meth:`finish`
    records the rescues; every group then needs a ``task`` with its ``id``."""

    def __init__(
        self,
        intervention: Mapping[str, Any],
        groups: Sequence[Mapping[str, Any]],
        collapsed: Sequence[int],
        *,
        event_active: bool = False,
        max_level: int = 3,
        memory: Optional[HintMemory] = None,
    ) -> None: ...
    @property
    def need(self) -> Literal["hints", "samples", "done"]: ...
    @property
    def round(self) -> int: ...
    def asks(self) -> List[StepAsk]: ...
    def answer(self, answers: Sequence[Optional[Mapping[str, Any]]]) -> None: ...
    def requests(self) -> List[HintedRequest]: ...
    def feed(self, rewards: Sequence[Sequence[float]], passed: Sequence[Sequence[bool]]) -> None: ...
    def finish(self) -> StepPlan: ...
