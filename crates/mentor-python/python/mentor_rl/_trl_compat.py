"""The one fence around TRL: every private name of ``trl`` (and ``transformers``) that
:class:`mentor_rl.trl.MentorGRPOTrainer` relies on is used here and only here.

``trl.GRPOTrainer`` has one public extension point for what the trainer does (``rollout_func``)
and no public hook for the rest, so ``_trl_trainer.py`` leans on TRL internals. Each wrapper
below says exactly what it relies on. All of it was read in the sources of trl 1.15.0 and
1.16.0 (identical for every name here) and run with trl 1.16.0 and transformers 5.24.0 by
``cargo xtask trl``. A TRL release outside :data:`SUPPORTED` is refused at import
(:func:`check_versions`) rather than failing with an ``AttributeError`` inside a training step,
and :func:`trainer_base` checks at import that every private method is still there with the
parameters used.

transformers: no private name is used. The trainer calls the tokenizer TRL keeps
(``__call__(text, add_special_tokens=False)["input_ids"]``, ``pad_token_id``) and
``processing_class.batch_decode(ids, skip_special_tokens=True)``, public since transformers 4;
its version is checked because TRL's own code branches on it (``parse_response`` from 5.0).

Importing this module needs neither torch nor trl: the version check must run before anything
else of trl is imported. The wrappers import what they need when first called.
"""

import asyncio
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import re
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

__all__ = [
    "SUPPORTED",
    "TESTED",
    "check_versions",
    "installed_version",
    "supported_spec",
    "version_in_range",
]

# ---- versions ----------------------------------------------------------------------------

SUPPORTED: Dict[str, Tuple[Tuple[int, ...], Tuple[int, ...]]] = {
    # The two newest TRL minor releases: 1.15.x and 1.16.x.
    "trl": ((1, 15), (1, 17)),
    # trl 1.15 and 1.16 both require transformers>=4.56.2 and set no upper bound; the next major
    # release is excluded until it is checked.
    "transformers": ((4, 56, 2), (6,)),
}
"""Supported ranges, ``name: (lowest, first unsupported)`` (release tuples). pyproject.toml's
``trl`` extra pins the same ranges (a test compares them)."""

TESTED = {"trl": "1.16.0", "transformers": "5.24.0"}
"""The versions ``cargo xtask trl`` runs the trainer with (crates/mentor-trainer/bench)."""

UNCHECKED_ENV = "MENTOR_RL_UNCHECKED_TRL"
"""Set to ``1`` to import with an unsupported TRL or transformers anyway (a warning instead of
the ``ImportError``), to try a new release before it is supported."""

_RELEASE = re.compile(r"\s*v?(\d+(?:\.\d+)*)(.*)")
_PRE = re.compile(r"[-_.]?(a|b|c|rc|alpha|beta|pre|preview|dev)", re.IGNORECASE)


def _dotted(release: Tuple[int, ...]) -> str:
    return ".".join(str(x) for x in release)


def supported_spec(name: str) -> str:
    """The supported range of ``name`` as a PEP 440 specifier, e.g. ``>=1.15,<1.17``."""
    low, high = SUPPORTED[name]
    return f">={_dotted(low)},<{_dotted(high)}"


def _parse(version: str) -> Optional[Tuple[Tuple[int, ...], bool]]:
    """``(release, is_pre_release)`` of a version string, or None when it has no release."""
    m = _RELEASE.fullmatch(version)
    if m is None:
        return None
    release = tuple(int(x) for x in m.group(1).split("."))
    return release, bool(_PRE.match(m.group(2)))


def _cmp(a: Tuple[int, ...], b: Tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


def version_in_range(version: str, bounds: Tuple[Tuple[int, ...], Tuple[int, ...]]) -> bool:
    """Whether ``version`` is in ``[low, high)`` as PEP 440 reads ``>=low,<high``: a
    pre-release of ``low`` is below it, one of ``high`` is not below ``high``; an unparseable
    version is outside."""
    parsed = _parse(version)
    if parsed is None:
        return False
    release, pre = parsed
    low, high = bounds
    c = _cmp(release, low)
    return (c > 0 or (c == 0 and not pre)) and _cmp(release, high) < 0


def installed_version(name: str) -> Optional[str]:
    """The version of ``name`` this process would use, without importing it when avoidable:
    the ``__version__`` of an already imported module (``"unknown"`` if it has none), else the
    installed distribution's metadata, else (a source checkout on ``sys.path``) the imported
    module's ``__version__``; None when it is not installed (or its import is blocked by a
    ``None`` in ``sys.modules``)."""
    if name in sys.modules and sys.modules[name] is None:
        return None
    module = sys.modules.get(name)
    if module is None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            if importlib.util.find_spec(name) is None:
                return None
            module = importlib.import_module(name)
    version = getattr(module, "__version__", None)
    return str(version) if version is not None else "unknown"


def check_versions(*, required: bool = True) -> None:
    """Raises ImportError unless the installed trl and transformers are in :data:`SUPPORTED`;
    the message names the installed and the supported versions.

    ``required=False`` (``import mentor_rl.trl``, whose reward functions need neither): passes
    when trl is not installed, and checks both when it is. ``required=True``
    (``MentorGRPOTrainer``): both must be installed. With ``MENTOR_RL_UNCHECKED_TRL=1`` an
    unsupported version only warns."""
    installed = {name: installed_version(name) for name in SUPPORTED}
    if installed["trl"] is None and not required:
        return
    wanted = ", ".join(f"{name}{supported_spec(name)}" for name in SUPPORTED)
    tested = ", ".join(f"{name} {v}" for name, v in TESTED.items())
    have = ", ".join(f"{name} {v if v is not None else '(not installed)'}" for name, v in installed.items())
    missing = [name for name, v in installed.items() if v is None]
    if missing:
        raise ImportError(
            f"mentor_rl.trl's MentorGRPOTrainer needs {' and '.join(missing)}: installed {have}; supported "
            f"{wanted} (tested: {tested}). Install them with: pip install \"mentor-rl[trl]\""
        )
    bad = [name for name, v in installed.items() if not version_in_range(str(v), SUPPORTED[name])]
    if not bad:
        return
    message = (
        f"mentor_rl.trl does not support the installed {' and '.join(f'{n} {installed[n]}' for n in bad)}: "
        f"installed {have}; supported {wanted} (tested: {tested}). MentorGRPOTrainer relies on TRL internals "
        f"that change between releases (see mentor_rl/_trl_compat.py). Install a supported version with: "
        f"pip install \"mentor-rl[trl]\" (or set {UNCHECKED_ENV}=1 to try this one anyway)"
    )
    if os.environ.get(UNCHECKED_ENV) == "1":
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        return
    raise ImportError(message)


# ---- what is used of trl.GRPOTrainer ------------------------------------------------------

PRIVATE_METHODS: Dict[str, Tuple[str, ...]] = {
    "_generate_and_score_completions": ("inputs",),
    "_calculate_rewards": ("inputs", "prompts", "completions", "completion_ids_list"),
    "_generate_single_turn": ("prompt_ids", "images", "multimodal_fields", "num_generations"),
    "_tokenize_prompts": ("prompts",),
    "_get_per_token_logps_and_entropies": ("model", "input_ids", "attention_mask", "logits_to_keep", "batch_size"),
}
"""The private methods of ``trl.GRPOTrainer`` overridden or called, with the leading
parameters (after ``self``) used; :func:`check_api` checks them at import."""

PRIVATE_ATTRIBUTES = ("_metrics", "_tokenizer", "async_loop")
"""Private instance attributes read (set by ``GRPOTrainer.__init__``; ``async_loop`` only when
a reward function is a coroutine function)."""

PRIVATE_FUNCTIONS = ("trl.trainer.utils.pad",)
"""Private module-level functions called (``trl.trainer.utils`` is not re-exported)."""

# The keys read and written in the dict `_generate_and_score_completions` returns (and
# `_compute_loss` reads): tensors with one row per completion of this process. `advantages`
# is (rows,) (or (rows, 1)); `old_per_token_logps` (rows, completion tokens) is absent when TRL
# computes no behaviour log-probs (then its loss uses the current ones, detached) and, when
# present, is the behaviour term of the clipped ratio; `prompt_ids`/`prompt_mask` are left
# padded, `completion_ids`/`completion_mask` right padded.
ADVANTAGES = "advantages"
OLD_PER_TOKEN_LOGPS = "old_per_token_logps"
PROMPT_IDS = "prompt_ids"
PROMPT_MASK = "prompt_mask"
COMPLETION_IDS = "completion_ids"
COMPLETION_MASK = "completion_mask"

# What `rollout_func(prompts, trainer)` (an experimental but public constructor argument of
# GRPOTrainer; TRL warns about it unless TRL_EXPERIMENTAL_SILENCE=1) must return: these keys,
# one entry per prompt (prompts repeated num_generations times, groups contiguous), token ids
# as lists and `logprobs` per sampled token or None. TRL calls it from `_generate`, itself
# called by `_generate_and_score_completions`, once per generation batch, in training and in
# evaluation, on every process with that process's prompts.
ROLLOUT_KEYS = ("prompt_ids", "completion_ids", "logprobs")

# The attribute that carries `_generate_and_score_completions`' dataset rows to the rollout.
_INPUTS = "_mentor_inputs"


def check_api(grpo_trainer: type) -> None:
    """Raises ImportError naming every private method of :data:`PRIVATE_METHODS` that
    ``grpo_trainer`` lacks or whose leading parameters differ."""
    problems = []
    for name, params in PRIVATE_METHODS.items():
        method = getattr(grpo_trainer, name, None)
        if not callable(method):
            problems.append(f"{name} is missing")
            continue
        try:
            have = [p for p in inspect.signature(method).parameters if p != "self"]
        except (TypeError, ValueError):
            continue  # no signature to read (a C method): trust the version check
        if tuple(have[: len(params)]) != params:
            problems.append(f"{name}{tuple(have)} does not start with {params}")
    if problems:
        raise ImportError(
            f"mentor_rl.trl: this TRL's GRPOTrainer ({installed_version('trl')}) changed what MentorGRPOTrainer "
            f"relies on: {'; '.join(problems)}. Supported: trl{supported_spec('trl')}."
        )


def trainer_base(grpo_trainer: type) -> type:
    """``grpo_trainer`` (``trl.GRPOTrainer``) with the two private methods the MENTOR step
    overrides, turned into hooks of the subclass:

    - ``_mentor_generate_and_score(inputs, run)``, around TRL's
      ``_generate_and_score_completions(inputs)`` (``run()`` calls TRL's and returns its dict,
      see the keys above), with the batch's dataset rows readable by the rollout through
      :func:`rollout_inputs` for the duration of the call;
    - ``_mentor_rewards_gathered(rewards_per_func)``, after TRL's ``_calculate_rewards``.

    Checks :func:`check_api` first (ImportError when TRL changed)."""
    check_api(grpo_trainer)

    class FencedGRPOTrainer(grpo_trainer):  # type: ignore[misc, valid-type]
        # Relies on: TRL calls `_generate_and_score_completions(inputs)` with the generation
        # batch's dataset rows (dicts of the dataset's columns, each prompt's row repeated
        # num_generations times) and, inside it, `rollout_func(prompts, trainer)` with the
        # prompts only; the rows are parked on the trainer for the rollout to read
        # (`rollout_inputs`), and only for the duration of the call.
        def _generate_and_score_completions(self, inputs):  # type: ignore[override]
            setattr(self, _INPUTS, inputs)
            try:
                return self._mentor_generate_and_score(
                    inputs, lambda: super(FencedGRPOTrainer, self)._generate_and_score_completions(inputs)
                )
            finally:
                setattr(self, _INPUTS, None)

        # Relies on: `_calculate_rewards(inputs, prompts, completions, completion_ids_list)` is
        # what `_generate_and_score_completions` scores the final rows with, and returns the
        # (rows x reward functions) float tensor gathered over the processes (process order,
        # each process's rows contiguous; NaN where a function returned None), from which TRL
        # computes the advantages with `reward_weights`.
        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._mentor_rewards_gathered(rewards)
            return rewards

        def _mentor_generate_and_score(self, inputs: List[Dict[str, Any]], run: Callable[[], Dict[str, Any]]):
            return run()

        def _mentor_rewards_gathered(self, rewards_per_func: Any) -> None:
            pass

    return FencedGRPOTrainer


def rollout_inputs(trainer: Any) -> Optional[List[Dict[str, Any]]]:
    """The dataset rows of the generation batch being generated (set by the override in
    :func:`trainer_base`), or None outside ``_generate_and_score_completions``."""
    return getattr(trainer, _INPUTS, None)


def tokenize_prompts(trainer: Any, prompts: List[Any]) -> List[List[int]]:
    """The token ids TRL's own generation feeds the model for ``prompts`` (chat template
    applied to conversational prompts, with the trainer's ``chat_template_kwargs`` and tools).

    Relies on: ``GRPOTrainer._tokenize_prompts(prompts)`` returning ``(prompt_ids, images,
    multimodal_fields)`` with ``prompt_ids`` one list of ints per prompt (images are not
    supported by the MENTOR step)."""
    prompt_ids, _, _ = trainer._tokenize_prompts(prompts)
    return [list(map(int, p)) for p in prompt_ids]


def generate(trainer: Any, prompt_ids: List[List[int]], num_generations: int) -> Tuple[List[List[int]], Optional[List[List[float]]]]:
    """Samples one completion per row of ``prompt_ids`` from the current weights through
    TRL's generation path (transformers ``generate``, continuous batching, or vLLM in server
    or colocate mode, which TRL keeps in sync with the weights).

    Relies on: ``GRPOTrainer._generate_single_turn(prompt_ids, images, multimodal_fields,
    num_generations)`` taking token-id lists (rows already repeated per generation: with vLLM,
    ``num_generations`` is how TRL groups the rows it gathers and slices across processes, so
    every process must make the same calls), and returning ``(completion_ids, logprobs)``:
    the sampled ids without the prompt, and their sampling log-probs (vLLM) or None."""
    completion_ids, logprobs = trainer._generate_single_turn(prompt_ids, None, {}, num_generations)
    completion_ids = [list(map(int, c)) for c in completion_ids]
    return completion_ids, (None if logprobs is None else [list(lp) for lp in logprobs])


def per_token_logps(trainer: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int) -> Any:
    """The current weights' log-probs of the last ``logits_to_keep`` tokens of each row (a
    ``(rows, logits_to_keep)`` tensor; call under ``torch.no_grad()``).

    Relies on: ``GRPOTrainer._get_per_token_logps_and_entropies(model, input_ids,
    attention_mask, logits_to_keep, batch_size=...)`` returning a tuple whose first item is
    that tensor (entropies and the MoE aux loss follow), with ``trainer.model`` the wrapped
    model TRL trains and ``args.per_device_train_batch_size`` as the chunk size."""
    logps, *_ = trainer._get_per_token_logps_and_entropies(
        trainer.model, input_ids, attention_mask, logits_to_keep, batch_size=trainer.args.per_device_train_batch_size
    )
    return logps


def metrics(trainer: Any, mode: str = "train") -> Any:
    """TRL's metric store for ``mode``: appending ``value`` to ``metrics(t)[name]`` logs
    ``name`` at the next logging step (averaged), through every ``report_to``.

    Relies on: ``GRPOTrainer._metrics`` being ``{"train": defaultdict(list), "eval": ...}``,
    averaged and cleared by ``GRPOTrainer.log``."""
    return trainer._metrics[mode]


def tokenizer(trainer: Any) -> Any:
    """The text tokenizer behind the trainer's processing class (the tokenizer itself, or a
    processor's ``.tokenizer``).

    Relies on: ``GRPOTrainer._tokenizer``, set by ``GRPOTrainer.__init__``."""
    return trainer._tokenizer


def reward_kwargs(trainer: Any, inputs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The keyword arguments TRL hands every reward function, for scoring rows outside TRL:
    each dataset column (but ``prompt``, ``completion`` and ``completion_ids``) as a list over
    ``inputs``, ``trainer_state``, and no-op ``log_extra`` / ``log_metric`` (the completions
    table and the reward metrics log TRL's final rows only).

    Relies on (copies): ``GRPOTrainer._calculate_rewards``' construction of these arguments
    (trl 1.16 also passes ``environments`` when the trainer has environments, which the MENTOR
    step does not support)."""
    keys = [k for k in inputs[0] if k not in ("prompt", "completion", "completion_ids")]
    kwargs: Dict[str, Any] = {k: [x[k] for x in inputs] for k in keys}
    kwargs["trainer_state"] = trainer.state
    kwargs["log_extra"] = lambda *a, **k: None
    kwargs["log_metric"] = lambda *a, **k: None
    return kwargs


def _is_async(func: Any) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(getattr(func, "__call__", None))


def call_reward_function(
    trainer: Any, func: Any, *, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Any, kwargs: Dict[str, Any]
) -> List[Any]:
    """Calls a reward function as TRL does: ``func(prompts=, completions=, completion_ids=,
    **kwargs)``, a coroutine function on TRL's event loop.

    Relies on: ``GRPOTrainer.async_loop``, the event loop TRL runs on a daemon thread when a
    reward function is a coroutine function (``asyncio.run_coroutine_threadsafe`` onto it, as
    ``_calculate_rewards`` does)."""
    call = dict(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs)
    if _is_async(func):
        return asyncio.run_coroutine_threadsafe(func(**call), trainer.async_loop).result()
    return func(**call)


def local_rows(trainer: Any, gathered: Any, n: int) -> Any:
    """This process's ``n`` rows of a tensor TRL gathered over the processes.

    Relies on: TRL gathering (``accelerate.utils.gather``) in process order with each
    process's rows contiguous, as ``_calculate_rewards``' result is."""
    lo = trainer.accelerator.process_index * n
    return gathered[lo : lo + n]


def pad(tensors: List[Any], padding_value: int, padding_side: str) -> Any:
    """Stacks 1-D tensors of different lengths into one, padded on ``padding_side``.

    Relies on: ``trl.trainer.utils.pad(tensors, padding_value=, padding_side=)`` (not
    re-exported by ``trl``)."""
    from trl.trainer.utils import pad as trl_pad

    return trl_pad(tensors, padding_value=padding_value, padding_side=padding_side)
