"""A stand-in for trl (and torch, accelerate, transformers) in ``sys.modules``, so that the
version fence and ``MentorGRPOTrainer``'s rollout run without torch.

``FakeGRPOTrainer`` has exactly the slice of ``trl.GRPOTrainer`` that ``mentor_rl/_trl_compat.py``
names (the private methods with TRL 1.16's parameters, ``_metrics``, ``_tokenizer``) plus the
public attributes the trainer reads; tokens are characters (``ord``), and generation is a
script: ``policy(prompt_texts) -> completion_texts``, one completion per row. The GRPO loss and
the advantages' post-processing (tensors) are not here: ``cargo xtask trl`` runs those.
"""

import contextlib
import sys
import types
from collections import defaultdict
from typing import Callable, Dict, List, Optional
from unittest import mock

# What _trl_trainer.py imports, besides trl itself.
_TRAINER_MODULES = ("mentor_rl.trl", "mentor_rl._trl_trainer")


class CharTokenizer:
    """A tokenizer whose tokens are characters."""

    pad_token_id = 0

    def __call__(self, text: str, add_special_tokens: bool = True) -> Dict[str, List[int]]:
        return {"input_ids": [ord(c) for c in text]}

    def batch_decode(self, ids, skip_special_tokens: bool = True) -> List[str]:
        return ["".join(chr(i) for i in row) for row in ids]


class _Weights(list):
    def tolist(self) -> List[float]:
        return list(self)


class FakeGRPOTrainer:
    """The slice of trl 1.16's GRPOTrainer that MentorGRPOTrainer touches."""

    def __init__(
        self,
        model: object = None,
        reward_funcs=None,
        args: object = None,
        *,
        rollout_func=None,
        num_generations: int = 4,
        policy: Optional[Callable[[List[str]], List[str]]] = None,
        reward_weights: Optional[List[float]] = None,
        **kwargs,
    ) -> None:
        funcs = reward_funcs if isinstance(reward_funcs, (list, tuple)) else [reward_funcs]
        self.reward_funcs = list(funcs)
        self.reward_weights = _Weights(reward_weights or [1.0] * len(self.reward_funcs))
        self.rollout_func = rollout_func
        self.num_generations = num_generations
        self.num_generations_eval = num_generations
        self.policy = policy
        self.model = types.SimpleNamespace(training=True)
        self.accelerator = types.SimpleNamespace(num_processes=1, process_index=0, device="cpu")
        self.state = types.SimpleNamespace(global_step=0)
        self.args = types.SimpleNamespace(per_device_train_batch_size=8)
        self._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
        self._tokenizer = CharTokenizer()
        self.processing_class = self._tokenizer
        self.generated: List[List[str]] = []  # the prompt texts of each generate call

    # The private methods, with trl 1.16's parameters (what _trl_compat.check_api reads).

    def _generate_and_score_completions(self, inputs):
        """TRL: generation (through rollout_func), scoring, advantages. Here: the rollout's rows."""
        return self.rollout_func([x["prompt"] for x in inputs], self)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        raise NotImplementedError("the fake does not score the final rows")

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        texts = self._tokenizer.batch_decode(prompt_ids)
        self.generated.append(texts)
        return [[ord(c) for c in t] for t in self.policy(texts)], None

    def _tokenize_prompts(self, prompts: list):
        prompts[0]  # as trl 1.16, which reads the first prompt: an empty list raises IndexError
        return [[ord(c) for c in p] for p in prompts], None, {}

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False):
        raise NotImplementedError("the fake has no model")


def modules(trl_version: str = "1.16.0", transformers_version: str = "5.24.0") -> Dict[str, types.ModuleType]:
    """Fake ``trl``, ``transformers``, ``torch``, ``torch.nn``, ``accelerate`` modules."""
    trl = types.ModuleType("trl")
    trl.__version__ = trl_version
    trl.GRPOTrainer = FakeGRPOTrainer
    data_utils = types.ModuleType("trl.data_utils")
    data_utils.is_conversational = lambda example: isinstance(example["prompt"], list)
    trl.data_utils = data_utils
    transformers = types.ModuleType("transformers")
    transformers.__version__ = transformers_version
    torch = types.ModuleType("torch")
    nn = types.ModuleType("torch.nn")
    nn.Module = type("Module", (), {})
    torch.nn = nn
    torch.Tensor = type("Tensor", (), {})
    accelerate = types.ModuleType("accelerate")
    utils = types.ModuleType("accelerate.utils")
    utils.gather_object = lambda objects: list(objects)
    accelerate.utils = utils
    return {
        "trl": trl,
        "trl.data_utils": data_utils,
        "transformers": transformers,
        "torch": torch,
        "torch.nn": nn,
        "accelerate": accelerate,
        "accelerate.utils": utils,
    }


@contextlib.contextmanager
def installed(trl_version: str = "1.16.0", transformers_version: str = "5.24.0", **only: bool):
    """Within the block, the fakes stand in for the real packages and ``mentor_rl.trl`` /
    ``mentor_rl._trl_trainer`` are imported afresh (so their import-time checks run again);
    everything is restored after. ``only``: ``trl=False`` (etc.) leaves that fake out, as if
    the package were not installed."""
    import mentor_rl

    fakes = {k: v for k, v in modules(trl_version, transformers_version).items() if only.get(k.split(".")[0], True)}
    saved = getattr(mentor_rl, "trl", None)
    with mock.patch.dict(sys.modules, fakes):
        for name in _TRAINER_MODULES:
            sys.modules.pop(name, None)
        for name in only:
            if not only[name]:
                sys.modules[name] = None  # type: ignore[assignment]  # "not importable"
        try:
            yield
        finally:
            if saved is not None:
                mentor_rl.trl = saved
