"""TRL peer of `mentor train` for `cargo xtask bench step`: whole GRPO steps on the same workload.

SmolLM2-135M-Instruct from the same GGUF (transformers dequantises it to float32), the same
chat prompts (the system prompt and the questions of the data file xtask writes), the same
group shape, completion budget and sampler (temperature 1, top-p 1, top-k off), `loss_type =
"grpo"`, beta 0, one iteration per generation batch, on the CPU with `--threads` threads.
Gradient checkpointing is off (TRL 1.16 turns it on by default; with it, and its chunked fused
LM head, one step's backward took 757-787 s on this workload on a 2-core CPU box, 13x our whole
step: not a fair peer). Everything else is TRL's default.
The reward is 1 when the completion's final answer (the last \\boxed{...}, else the last number)
equals the gold number: what the math checker decides on these integer answers.

Per step it prints one JSON object (`"what": "step"`): the step's wall seconds and where they
went: `generation` (model.generate), `reward` (the reward function), `logps` (log-prob passes
without gradient), `forward` (the training forward: log-probs with gradient), `backward`
(accelerator.backward), `optimizer` (from the pre-optimizer-step to the optimizer-step
callback: clipping and the AdamW step). The first `--warmup` steps are marked `"warmup": true`.
Last, `"what": "summary"` with the peak RSS (getrusage) and the versions.

Run: python trl_step.py --gguf PATH --data train.jsonl --system TEXT --threads N
     [--prompts 4 --group 8 --new-tokens 64 --steps 5 --warmup 1 --seed 0 --lr 1e-6 --micro-batches 1]
"""

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")


def emit(obj):
    print(json.dumps(obj), flush=True)


def final_number(text):
    """The last \\boxed{...} content, else the last number in the text; None if neither."""
    boxed = re.findall(r"\\boxed\{([^{}]*)\}", text)
    cand = boxed[-1] if boxed else text
    nums = re.findall(r"-?\d+(?:\.\d+)?", cand.replace(",", ""))
    return nums[-1] if nums else None


def load_gguf(path):
    """SmolLM2 from its GGUF, dequantised by transformers to float32, ready to fine-tune."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = os.path.split(os.path.abspath(path))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    # transformers dequantises the GGUF to float32 parameters but marks the model quantized,
    # which the Trainer refuses to fine-tune: clear the mark (the weights are plain float32).
    assert all(p.dtype == torch.float32 and p.requires_grad for p in model.parameters())
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    model.is_quantized = False
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    return model, tok


def cpu_grpo_config(*, output_dir, rows, group, new_tokens, lr, steps, seed, micro_batches=1):
    """The workload's GRPOConfig on the CPU: float32 (TRL's bf16 autocast default is emulated,
    ~7x slower, on a CPU without bf16 units), no gradient checkpointing, `rows` rows per
    generation batch in `micro_batches` micro-batches; TRL's defaults otherwise."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=output_dir,
        per_device_train_batch_size=rows // micro_batches,
        gradient_accumulation_steps=micro_batches,  # one generation batch of `rows` rows per step
        num_generations=group,
        max_completion_length=new_tokens,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        loss_type="grpo",
        beta=0.0,
        num_iterations=1,
        gradient_checkpointing=False,
        bf16=False,
        learning_rate=lr,
        lr_scheduler_type="constant",
        max_steps=steps,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        seed=seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--data", required=True, help="JSON Lines with question and answer (GSM8K format)")
    ap.add_argument("--system", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-6)
    ap.add_argument("--micro-batches", type=int, default=1,
                    help="update in N micro-batches (per_device_train_batch_size = rows / N, gradient_accumulation_steps = N)")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    import datasets
    import transformers
    import trl
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    model, tok = load_gguf(args.gguf)

    rows = []
    with open(args.data) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                gold = r["answer"].split("####")[-1].strip()
                rows.append({
                    "prompt": [{"role": "system", "content": args.system},
                               {"role": "user", "content": r["question"]}],
                    "gold": gold,
                })
    ds = datasets.Dataset.from_list(rows)

    timing = {}

    def add(key, seconds):
        timing[key] = timing.get(key, 0.0) + seconds

    def correct(completions, gold, **_):
        t0 = time.perf_counter()
        out = []
        for c, g in zip(completions, gold):
            text = c[-1]["content"] if isinstance(c, list) else c
            n = final_number(text)
            out.append(1.0 if n is not None and float(n) == float(g) else 0.0)
        add("reward", time.perf_counter() - t0)
        return out

    batch = args.prompts * args.group
    if args.micro_batches < 1 or batch % args.micro_batches != 0:
        sys.exit(f"--micro-batches {args.micro_batches} must divide the {batch} rows of a step")
    cfg = cpu_grpo_config(
        output_dir=tempfile.mkdtemp(prefix="trl-step-"),
        rows=batch,
        group=args.group,
        new_tokens=args.new_tokens,
        lr=args.lr,
        steps=args.warmup + args.steps,
        seed=args.seed,
        micro_batches=args.micro_batches,
    )

    class Timer(TrainerCallback):
        def __init__(self):
            self.t0 = None
            self.opt0 = None
            self.step = 0

        def on_step_begin(self, a, state, control, **kw):
            timing.clear()
            self.t0 = time.perf_counter()

        def on_pre_optimizer_step(self, a, state, control, **kw):
            self.opt0 = time.perf_counter()

        def on_optimizer_step(self, a, state, control, **kw):
            if self.opt0 is not None:
                add("optimizer", time.perf_counter() - self.opt0)

        def on_step_end(self, a, state, control, **kw):
            seconds = time.perf_counter() - self.t0
            rec = {"what": "step", "step": self.step, "warmup": self.step < args.warmup, "seconds": seconds}
            for k in ("generation", "reward", "logps", "forward", "backward", "optimizer"):
                rec[k] = timing.get(k, 0.0)
            emit(rec)
            self.step += 1

    trainer = GRPOTrainer(model=model, reward_funcs=correct, args=cfg, train_dataset=ds,
                          processing_class=tok, callbacks=[Timer()])

    # Time generation, the log-prob passes and the backward by wrapping them where TRL calls
    # them. `key` names the bucket, or is a function choosing it at the end of the call.
    def timed(fn, key):
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                add(key() if callable(key) else key, time.perf_counter() - t0)
        return wrapper

    trainer.model.generate = timed(trainer.model.generate, "generation")
    wrapped = []
    for attr in dir(trainer):
        if attr.startswith("_get_per_token_logps") and callable(getattr(trainer, attr)):
            grad = lambda: "forward" if torch.is_grad_enabled() else "logps"  # noqa: E731
            setattr(trainer, attr, timed(getattr(trainer, attr), grad))
            wrapped.append(attr)
    trainer.accelerator.backward = timed(trainer.accelerator.backward, "backward")
    if not wrapped:
        print("warning: no _get_per_token_logps* method found; logps/forward are not split out", file=sys.stderr)

    trainer.train()
    emit({
        "what": "summary",
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "threads": args.threads,
        "timed_methods": wrapped,
        "gradient_checkpointing": bool(cfg.gradient_checkpointing),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
    })


if __name__ == "__main__":
    main()
