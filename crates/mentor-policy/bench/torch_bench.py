"""PyTorch + Hugging Face transformers peer of `crates/mentor-policy/benches/throughput.rs`.

Loads SmolLM2-135M-Instruct from the same GGUF (transformers dequantises it to float32 with the
`gguf` package), then measures what the candle bench measures, the same way:

- decode_bound: bytes of the float32 weights / memcpy bandwidth (512 MiB, best of three) = the
  batch-1 decode rate a memory-bound model could reach (a property of the machine: both sides
  should agree, and a gap shows that the load changed between the two runs);
- generate: tokens/s of `model.generate` with the KV cache at batch 1, 8 and 32, the same chat
  prompts (the 8 questions of bench.rs, cycled), the same sampler (softmax at temperature 1,
  no top-k, no top-p), `--new-tokens` per row, end-of-sequence suppressed
  (`min_new_tokens = max_new_tokens`), left padding;
- train: forward + backward of the summed completion log-probs (the quantity
  `Policy::logprobs` returns) for the same synthetic `--train-batch` x `--train-len` batch
  (a quarter prompt, the rest completion), logits only for the completion columns: one
  untimed warm-up step, then the mean of `--train-steps` steps (the steady state of a
  trainer; the first step of a process also pays for its first touch of fresh memory).

Rates are wall-clock, as in bench.rs; `cpu_s` (process CPU time) is printed beside them so a
run starved by other load on the machine shows (cpu_s well below seconds x threads).

Before timing it checks that these weights are the ones the fixture was made from: greedy
decoding of each fixture prompt must reproduce transformers' greedy token ids in
`smollm2_greedy.json` (the candle policy is held to the same fixture by
`crates/mentor-policy/tests/it/smollm2.rs`). One JSON object per line on stdout.

Run: python torch_bench.py --gguf PATH --threads N [--new-tokens 32 --train-batch 4
     --train-len 128 --train-steps 3 --fixture smollm2_greedy.json]
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TQDM_DISABLE", "1")  # the GGUF dequantisation progress bar

QUESTIONS = [
    "What is 12 + 35?",
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain photosynthesis in one sentence.",
    "List three prime numbers.",
    "Who wrote Hamlet?",
    "Give me a synonym for happy.",
    "How many legs does a spider have?",
]


def emit(obj):
    print(json.dumps(obj), flush=True)


def memcpy_bandwidth():
    """Best of three copies of a 512 MiB buffer with libc's memcpy (what bench.rs's
    `copy_from_slice` compiles to), in bytes copied per second. torch's own `copy_` is ~4x
    slower here and would understate the machine."""
    import ctypes

    n = 512 << 20
    src = ctypes.create_string_buffer(b"\x01" * n, n)
    dst = ctypes.create_string_buffer(n)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        ctypes.memmove(dst, src, n)
        best = min(best, time.perf_counter() - t)
    return n / best


def chat_ids(tok, question):
    ids = tok.apply_chat_template(
        [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=True
    )
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return [int(i) for i in ids]


def left_pad(torch, prompts, pad_id):
    width = max(len(p) for p in prompts)
    ids = [[pad_id] * (width - len(p)) + p for p in prompts]
    mask = [[0] * (width - len(p)) + [1] * len(p) for p in prompts]
    return torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.long)


def check_weights(torch, model, tok, fixture_path):
    """Greedy ids of every fixture prompt must equal the fixture's (same weights, same model)."""
    with open(fixture_path) as f:
        fixture = json.load(f)
    n = int(fixture["max_new_tokens"])
    cases = []
    for case in fixture["cases"]:
        prompt = chat_ids(tok, case["prompt"])
        if prompt != case["prompt_ids"]:
            raise SystemExit(f"prompt ids of {case['prompt']!r} differ from the fixture's")
        ids, mask = left_pad(torch, [prompt], tok.pad_token_id)
        with torch.no_grad():
            out = model.generate(
                input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=n,
                pad_token_id=tok.pad_token_id,
            )
        got = [int(i) for i in out[0, ids.shape[1]:]]
        want = case["greedy_ids"]
        # The fixture stops at the end-of-turn id; transformers may pad after it.
        got = got[: len(want)]
        if got != want:
            raise SystemExit(
                f"greedy ids of {case['prompt']!r} differ from the fixture: {got} vs {want}"
            )
        cases.append({"prompt": case["prompt"], "greedy_tokens": len(want)})
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--train-batch", type=int, default=4)
    ap.add_argument("--train-len", type=int, default=128)
    ap.add_argument("--train-steps", type=int, default=3)
    ap.add_argument("--fixture", default=None)
    args = ap.parse_args()

    from importlib.metadata import version

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.utils.logging.disable_progress_bar()

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    folder, name = os.path.split(os.path.abspath(args.gguf))

    t = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    model.eval()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    params = sum(p.numel() for p in model.parameters())  # tied embeddings count once
    emit({
        "what": "load", "seconds": round(time.perf_counter() - t, 2), "params": params,
        "threads": torch.get_num_threads(), "torch": torch.__version__,
        "transformers": transformers.__version__, "gguf": version("gguf"),
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
    })

    if args.fixture:
        cases = check_weights(torch, model, tok, args.fixture)
        emit({"what": "weights_check", "fixture": os.path.basename(args.fixture), "equal": True,
              "cases": cases})
    else:
        emit({"what": "weights_check", "fixture": None, "equal": None})

    bw = memcpy_bandwidth()
    weight_bytes = params * 4
    emit({"what": "decode_bound", "memcpy_gb_s": round(bw / 1e9, 2),
          "weight_mb": round(weight_bytes / 1e6), "batch1_tok_s_bound": round(bw / weight_bytes, 1)})

    # Warm-up (not timed): first calls build oneDNN primitives and allocator pools. This only
    # helps the peer; the candle bench has no warm-up.
    warm_ids, warm_mask = left_pad(torch, [chat_ids(tok, QUESTIONS[0])], tok.pad_token_id)
    with torch.no_grad():
        model.generate(input_ids=warm_ids, attention_mask=warm_mask, do_sample=True, top_k=0,
                       top_p=1.0, temperature=1.0, max_new_tokens=4, min_new_tokens=4,
                       pad_token_id=tok.pad_token_id)

    torch.manual_seed(0)
    for batch in (1, 8, 32):
        prompts = [chat_ids(tok, QUESTIONS[i % len(QUESTIONS)]) for i in range(batch)]
        ids, mask = left_pad(torch, prompts, tok.pad_token_id)
        t, cpu = time.perf_counter(), time.process_time()
        with torch.no_grad():
            out = model.generate(
                input_ids=ids, attention_mask=mask, do_sample=True, temperature=1.0, top_k=0,
                top_p=1.0, max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                pad_token_id=tok.pad_token_id,
            )
        secs, cpu = time.perf_counter() - t, time.process_time() - cpu
        generated = (out.shape[1] - ids.shape[1]) * batch
        emit({"what": "generate", "batch": batch, "new_tokens": generated,
              "seconds": round(secs, 2), "cpu_s": round(cpu, 2),
              "tok_s": round(generated / secs, 2)})

    b, n = args.train_batch, args.train_len
    half = n // 4
    prompts = [[100 + i * 7 + j for j in range(half)] for i in range(b)]
    completions = [[500 + i * 3 + j for j in range(n - half)] for i in range(b)]
    ids = torch.tensor([p + c for p, c in zip(prompts, completions)], dtype=torch.long)
    c_len = n - half
    target = torch.tensor(completions, dtype=torch.long)

    def step():
        # Logits of the columns that predict the completion: half-1 .. n-2.
        t, cpu = time.perf_counter(), time.process_time()
        logits = model(input_ids=ids, logits_to_keep=c_len + 1).logits[:, :c_len, :]
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
        fwd = time.perf_counter() - t
        loss = -logprobs.sum()
        loss.backward()
        return fwd, time.perf_counter() - t, time.process_time() - cpu

    # One untimed warm-up step of the same shape, then the mean of --train-steps steps (a
    # trainer's steady state); gradients are dropped between steps, as `zero_grad` does.
    model.zero_grad(set_to_none=True)
    step()
    runs = []
    for _ in range(args.train_steps):
        model.zero_grad(set_to_none=True)
        runs.append(step())
    with_grad = sum(1 for p in model.parameters() if p.grad is not None)
    fwd, total, cpu = (sum(r[i] for r in runs) / len(runs) for i in range(3))
    emit({"what": "train", "batch": b, "seq": n, "steps": len(runs), "forward_s": round(fwd, 2),
          "forward_backward_s": round(total, 2), "cpu_s": round(cpu, 2), "tok_s": round(b * n / total, 2),
          "weights_with_grad": with_grad})


if __name__ == "__main__":
    sys.exit(main())
