"""trl 1.15 on a CPU, for `cargo xtask trl --trl oldest` only (never shipped in mentor_rl).

trl 1.15.0's GRPOTrainer patches the model with a fused LM head whose log-prob kernel is a
Triton kernel, launched whatever the device (trl 1.16 checks the device and folds the tiles in
torch instead), so on a CPU its first step stops with Triton's "0 active drivers". The check
exists to exercise MentorGRPOTrainer against trl 1.15's private API (the names in
mentor_rl/_trl_compat.py), which that kernel is no part of. `install()` swaps the kernel, in
this process only, for the same function written with plain torch ops (whole logits, autograd
for the backward), and `check()` compares it with the model's own unfused forward.
"""

import torch

OUTPUTS = ("entropy", "log_sum_sq_probs", "mean_logits", "is_top1")


class TorchLogProbs:
    """``ChunkedLogProbFunction``'s contract in torch ops: for hidden states ``[N, H]``, the
    LM head ``weight [V, H]`` (and ``bias``) and ``targets [N]``, the logits are scaled by
    ``logit_scale``, soft-capped (``cap * tanh(z / cap)``) when ``softcap`` is given, divided
    by ``temperature``; returns ``(log_probs, entropy, log_sum_sq_probs, mean_logits, is_top1)``,
    each optional one None unless named in ``outputs``."""

    @staticmethod
    def apply(hidden, weight, bias, targets, temperature, chunk_size, softcap=None, logit_scale=1.0, outputs=OUTPUTS):
        z = hidden.float() @ weight.float().t()
        if bias is not None:
            z = z + bias.float()
        z = z * logit_scale
        if softcap is not None:
            z = softcap * torch.tanh(z / softcap)
        z = z / temperature
        logp = torch.log_softmax(z, dim=-1)
        log_probs = logp.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)
        entropy = -(logp.exp() * logp).sum(-1) if "entropy" in outputs else None
        log_sum_sq = torch.logsumexp(2 * logp, dim=-1) if "log_sum_sq_probs" in outputs else None
        mean_logits = z.mean(-1) if "mean_logits" in outputs else None
        is_top1 = (z.argmax(-1) == targets) if "is_top1" in outputs else None
        return log_probs, entropy, log_sum_sq, mean_logits, is_top1


def needed() -> bool:
    """trl 1.15.x without a device its Triton kernel runs on."""
    import trl

    return trl.__version__.startswith("1.15.") and not torch.cuda.is_available()


def install() -> None:
    """Replaces trl 1.15's Triton log-prob kernel by :class:`TorchLogProbs` in this process."""
    import trl.trainer.utils as utils

    utils._ChunkedLogProbFunction = TorchLogProbs


def check(model, tokenizer, temperature: float = 1.0) -> float:
    """The largest difference between the fused head's log-probs (through the swapped kernel)
    and ``log_softmax`` of the model's own logits, on one short text; raises when above 1e-4."""
    ids = tokenizer("Natalia sold clips to 48 of her friends in April.", return_tensors="pt")["input_ids"]
    labels = ids.clone()
    with torch.no_grad():
        # The fused head scores the next token of every position but the last: `[1, n - 1]`.
        fused = model(input_ids=ids, labels=labels, fused_lm_head=True).log_probs[0]
        logits = model(input_ids=ids).logits[0, :-1].float() / temperature
        plain = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:].unsqueeze(-1)).squeeze(-1)
    worst = float((fused - plain).abs().max())
    if not worst <= 1e-4:
        raise RuntimeError(f"the torch log-prob kernel disagrees with the model's logits by {worst}")
    return worst
