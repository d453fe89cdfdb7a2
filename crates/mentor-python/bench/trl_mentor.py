"""`cargo xtask trl`: MentorGRPOTrainer against plain GRPO in TRL, on the CPU.

SmolLM2-135M-Instruct (the GGUF `cargo xtask setup` installs, dequantised by transformers) on
GSM8K training problems, which it fails at this size: the same short GRPO run twice, with
`mentor=mentor_rl.Mentor("rules")` and with `mentor=None`, same seed, same prompts, reward
`mentor_rl.trl.math_reward`. Per arm it records, from TRL's own logs, the mentor metrics and
the step time, and counts the rows whose advantage is not zero (the rows that carry a learning
signal).

It checks what the issue asks the integration to do: in the mentor arm collapsed groups were
intervened on, hinted attempts were sampled and scored, and the mentor metrics reached TRL's
logs; in the vanilla arm nothing was intervened on. Then each of `--also-credits` (default
`in_context`, `stripped_is`, `stripped`) runs one short mentor step, which must put hinted
rows in the batch (`stripped_is`: with the hinted context's behaviour log-probs). Exit
status 1 when a check fails.

With `--math-verify-site DIR` (the site-packages of the hash-pinned Math-Verify venv that
`cargo xtask bench math` uses), the vanilla arm also scores every completion with Math-Verify
0.9.0 as a second reward function of weight 0 (so training is unchanged): both reward
functions see the same completions in the same TRL steps, and the summary gives each one's
seconds and how often they agree.

With `--processes N` (N > 1) it relaunches itself under `torch.distributed.run` instead: N CPU
processes (gloo), the mentor arm only, where the mentor of every process but the first declines
to hint. It checks that every process made the same hinted generate calls (the lockstep that
vLLM's gather and ZeRO-3 need; the idle processes padded), that training finished, and that
the logged mentor counts are the sums over the processes.

Prints one JSON object per arm (`"what": "arm"`), then the side-by-side table, then
`"what": "summary"`.

Run: python trl_mentor.py --gguf PATH --data train.jsonl --threads N
     [--prompts 2 --group 4 --new-tokens 48 --steps 2 --seed 0 --credit prefix --out FILE]
     [--math-verify-site DIR] [--processes N]
"""

import argparse
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

# The GGUF loading and the CPU GRPOConfig are the step bench's (crates/mentor-trainer/bench).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "mentor-trainer", "bench"))
from trl_step import cpu_grpo_config, load_gguf  # noqa: E402

import cpu_logprob  # noqa: E402  (beside this file)

# Set in main(): trl 1.15 on a CPU runs with its Triton log-prob kernel swapped for torch ops.
SHIM = {"on": False, "max_diff": []}

SYSTEM = "Solve the problem step by step. End with the final answer as \\boxed{...}."


def emit(obj):
    print(json.dumps(obj), flush=True)


class Timed:
    """A reward function that adds up the seconds it takes and keeps its last rewards."""

    def __init__(self, name, fn):
        self.__name__ = name
        self.fn = fn
        self.seconds = 0.0
        self.calls = 0
        self.rows = 0
        self.last = []

    def __call__(self, completions, **kwargs):
        t0 = time.perf_counter()
        out = self.fn(completions, **kwargs)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.rows += len(completions)
        self.last = list(out)
        return out

    @property
    def last_verdicts(self):
        """The wrapped function's verdicts (what the mentor reads), if it keeps them."""
        return getattr(self.fn, "last_verdicts", None)


def math_verify_reward(site):
    """Math-Verify 0.9.0 as a TRL reward function (gold parsed as LaTeX, as its README does)."""
    sys.path.append(site)  # after this venv's own packages: the shared pins (sympy, mpmath) are equal
    from math_verify import parse, verify

    from mentor_rl.trl import completion_text

    def reward(completions, answer, **_):
        out = []
        for c, a in zip(completions, answer):
            gold = str(a).split("####")[-1].strip()
            try:
                out.append(1.0 if verify(parse(f"${gold}$"), parse(completion_text(c))) else 0.0)
            except Exception:  # Math-Verify raising counts as a wrong answer
                out.append(0.0)
        return out

    return reward


def arm_config(args, name):
    """The run's GRPOConfig (the step bench's CPU recipe, dataset order kept)."""
    cfg = cpu_grpo_config(
        output_dir=tempfile.mkdtemp(prefix=f"trl-mentor-{name}-"),
        rows=args.prompts * args.group,
        group=args.group,
        new_tokens=args.new_tokens,
        lr=args.lr,
        steps=args.steps,
        seed=args.seed,
    )
    cfg.shuffle_dataset = False
    return cfg


def recorder(logs, step_seconds):
    """A callback that appends each step's seconds and each training log (with its step)."""
    from transformers import TrainerCallback

    class Recorder(TrainerCallback):
        def on_step_begin(self, a, state, control, **kw):
            self.t0 = time.perf_counter()

        def on_step_end(self, a, state, control, **kw):
            step_seconds.append(time.perf_counter() - self.t0)

        def on_log(self, a, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                entry = dict(logs)
                entry["step"] = state.global_step
                logs_list.append(entry)

    logs_list = logs
    return Recorder()


def tiny_model(gguf):
    """`--quick`: a two-layer Llama of hidden size 64 with SmolLM2's tokenizer, randomly
    initialised (the seed is set before): every attempt fails, so every group collapses and
    the mentor path runs; a step takes seconds."""
    import transformers

    folder, name = os.path.split(os.path.abspath(gguf))
    tok = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    config = transformers.LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    return transformers.LlamaForCausalLM(config), tok


def quick_rescue():
    """`--quick`'s correctness for the mentor arms: the tiny random model never answers right, and
    only a rescued hinted group (one with a correct hinted attempt) reaches the batch, as in the
    Rust trainer, whose step MentorGRPOTrainer drives. So this says no to every row of a step's
    first scoring (the unhinted groups: all collapse) and yes to every other row of each later
    one (the hinted rounds: every hinted group is rescued), and the hinted rows go through TRL's
    tensors in every credit mode. The rewards stay math_reward's."""
    seen = set()

    def quick_rescue(completions, trainer_state=None, **kwargs):
        step = getattr(trainer_state, "global_step", None)
        if step not in seen:
            seen.add(step)
            return [False] * len(completions)
        return [i % 2 == 0 for i in range(len(completions))]

    return quick_rescue


def run_arm(args, arm, rows):
    import datasets
    import torch
    import mentor_rl
    from mentor_rl.trl import Intervention, MentorGRPOTrainer, math_reward

    torch.manual_seed(args.seed)
    model, tok = tiny_model(args.gguf) if args.quick else load_gguf(args.gguf)
    ds = datasets.Dataset.from_list(rows)
    cfg = arm_config(args, arm)
    logs = []
    step_seconds = []
    mentor = {"mentor": mentor_rl.Mentor("rules"), "self": mentor_rl.Mentor("self")}.get(arm)
    ours = Timed("math_reward", math_reward)
    reward_funcs = [ours]
    agree = [0, 0]
    if arm == "vanilla" and args.math_verify_site:
        peer = Timed("math_verify", math_verify_reward(args.math_verify_site))

        def compare(completions, **kwargs):
            out = peer(completions, **kwargs)
            agree[0] += sum(1 for a, b in zip(ours.last, out) if a == b)
            agree[1] += len(out)
            return out

        compare.__name__ = "math_verify"
        reward_funcs.append(compare)
        cfg.reward_weights = [1.0, 0.0]
    trainer = MentorGRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=reward_funcs,
        args=cfg,
        train_dataset=ds,
        mentor=mentor,
        intervention=Intervention(
            credit=args.credit,
            start_level=args.start_level,
            correctness=quick_rescue() if args.quick and mentor is not None else None,
        ),
        callbacks=[recorder(logs, step_seconds)],
    )
    if SHIM["on"]:
        SHIM["max_diff"].append(cpu_logprob.check(trainer.model, tok, getattr(trainer, "temperature", 1.0)))
    trainer.train()

    def total(key):
        return sum(float(l.get(key, 0.0) or 0.0) for l in logs)

    rewards = {"math_reward": {"seconds": ours.seconds, "calls": ours.calls, "rows": ours.rows}}
    if len(reward_funcs) > 1:
        rewards["math_verify"] = {"seconds": peer.seconds, "calls": peer.calls, "rows": peer.rows}
        rewards["agreement"] = {"same": agree[0], "rows": agree[1]}
    return {
        "what": "arm",
        "arm": arm,
        "reward_functions": rewards,
        "steps": len(logs),
        "interventions": total("mentor/interventions"),
        "rescued": total("mentor/rescued"),
        "hinted_rows": total("mentor/hinted_rows"),
        # Hinted attempts generated (one process: no padding rows), rescued or not.
        "hinted_sampled": sum(getattr(trainer, "_mentor_hinted_calls", [])),
        "hinted_reward_mean": (
            sum(float(l["mentor/hinted_reward"]) for l in logs if "mentor/hinted_reward" in l)
            / max(1, sum(1 for l in logs if "mentor/hinted_reward" in l))
        ),
        "nonzero_advantage_rows": total("mentor/nonzero_advantage_rows"),
        "zrf": [float(l.get("mentor/zrf", float("nan"))) for l in logs],
        "reward": [float(l.get("reward", float("nan"))) for l in logs],
        "levels": {str(k): total(f"mentor/level_{k}") for k in (1, 2, 3)},
        "guard_rejections": total("mentor/guard_rejections"),
        "behaviour_rows": total("mentor/behaviour_rows"),
        "self_tokens": total("mentor/self_tokens"),
        "self_turns": total("mentor/self_turns"),
        "self_fallbacks": total("mentor/self_fallbacks"),
        "mentor_seconds": total("mentor/seconds"),
        "mentor_keys": sorted({k for l in logs for k in l if k.startswith("mentor/")}),
        "step_seconds": step_seconds,
    }


class Counting:
    """A mentor that counts the hints it gives; declines every time when `decline`."""

    def __init__(self, inner, decline):
        self.inner = inner
        self.decline = decline
        self.asked = 0
        self.hints = 0

    def intervene(self, *args, **kwargs):
        self.asked += 1
        if self.decline:
            return None
        out = self.inner.intervene(*args, **kwargs)
        if out is not None and out.get("hint") is not None:
            self.hints += 1
        return out


def run_ddp(args, rows):
    """One process of the `--processes` check (under torch.distributed.run)."""
    import datasets
    import torch
    from accelerate.utils import gather_object
    import mentor_rl
    from mentor_rl.trl import Intervention, MentorGRPOTrainer, math_reward

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.manual_seed(args.seed)
    model, tok = tiny_model(args.gguf) if args.quick else load_gguf(args.gguf)
    cfg = arm_config(args, f"ddp{rank}")
    logs, step_seconds = [], []
    mentor = Counting(mentor_rl.Mentor("rules"), decline=rank != 0)
    trainer = MentorGRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[math_reward],
        args=cfg,
        train_dataset=datasets.Dataset.from_list(rows),
        mentor=mentor,
        intervention=Intervention(credit=args.credit, start_level=args.start_level),
        callbacks=[recorder(logs, step_seconds)],
    )
    if SHIM["on"]:
        SHIM["max_diff"].append(cpu_logprob.check(trainer.model, tok, getattr(trainer, "temperature", 1.0)))
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    # Mentor("self"), one step: the first process intervenes on its collapsed groups (the
    # learner writes the hints), the others on none, so they pad every mentor and hinted call.
    self_logs, self_seconds = [], []
    torch.manual_seed(args.seed)
    model, tok = tiny_model(args.gguf) if args.quick else load_gguf(args.gguf)
    self_trainer = MentorGRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[math_reward],
        args=arm_config(argparse.Namespace(**{**vars(args), "steps": 1}), f"ddp-self{rank}"),
        train_dataset=datasets.Dataset.from_list(rows),
        mentor=mentor_rl.Mentor("self"),
        intervention=Intervention(credit=args.credit, start_level=args.start_level, max_groups=8 if rank == 0 else 0),
        callbacks=[recorder(self_logs, self_seconds)],
    )
    self_trainer.train()
    mine = {"rank": rank, "hinted_calls": list(trainer._mentor_hinted_calls), "asked": mentor.asked,
            "hints": mentor.hints, "step_seconds": step_seconds,
            "self_calls": list(self_trainer._mentor_self_calls),
            "self_hinted_calls": list(self_trainer._mentor_hinted_calls), "self_step_seconds": self_seconds}
    everyone = gather_object([mine])
    if rank != 0:
        return 0

    def total(key):
        return sum(float(l.get(key, 0.0) or 0.0) for l in logs)

    calls = [p["hinted_calls"] for p in everyone]
    hints = sum(p["hints"] for p in everyone)
    failures = []
    if len(logs) != args.steps:
        failures.append(f"{len(logs)} logged steps of {args.steps}")
    if any(c != calls[0] for c in calls):
        failures.append(f"the processes made different hinted generate calls: {calls}")
    if hints < 1:
        failures.append("the first process gave no hint: nothing to check (pick harder problems)")
    elif not calls[-1]:
        failures.append("the declining process made no hinted call: it did not keep in step")
    # Only rescued groups' hinted rows reach the batch (the Rust step's rule).
    if total("mentor/hinted_rows") != total("mentor/rescued") * args.group:
        failures.append(
            f"logged hinted rows {total('mentor/hinted_rows'):.0f} != {total('mentor/rescued'):.0f} rescued x {args.group}"
        )
    if total("mentor/interventions") < sum(1 for p in everyone if p["asked"]):
        failures.append("logged interventions are not summed over the processes")

    def self_total(key):
        return sum(float(l.get(key, 0.0) or 0.0) for l in self_logs)

    self_calls = [(p["self_calls"], p["self_hinted_calls"]) for p in everyone]
    if len(self_logs) != 1:
        failures.append(f"Mentor(\"self\"): {len(self_logs)} logged steps of 1")
    if any(c != self_calls[0] for c in self_calls):
        failures.append(f"Mentor(\"self\"): the processes made different generate calls: {self_calls}")
    if self_total("mentor/interventions") < 1:
        failures.append("Mentor(\"self\"): no collapsed group on the first process: nothing to check")
    elif not self_calls[-1][0]:
        failures.append("Mentor(\"self\"): the idle process made no mentor generate call: it did not keep in step")
    if self_total("mentor/self_tokens") <= 0:
        failures.append("Mentor(\"self\"): no mentor/self_tokens logged")
    if not self_calls[0][1]:
        failures.append("Mentor(\"self\"): no hinted attempt was sampled")
    summary = {
        "what": "ddp",
        "ok": not failures,
        "failures": failures,
        "processes": world,
        "threads_per_process": torch.get_num_threads(),
        "processes_detail": everyone,
        "logged": {k: total(f"mentor/{k}") for k in ("interventions", "rescued", "hinted_rows", "guard_rejections")},
        "self": {k: self_total(f"mentor/{k}") for k in ("interventions", "rescued", "hinted_rows", "self_tokens",
                                                       "self_turns", "self_fallbacks", "seconds")},
        "zrf": [float(l.get("mentor/zrf", float("nan"))) for l in logs],
        "wall_seconds": wall,
    }
    print("| %d processes (gloo), first hints, others decline | steps %d, hints %d, logged interventions %d, "
          "hinted rows %d, hinted calls per process %s, step seconds %s |"
          % (world, len(logs), hints, summary["logged"]["interventions"], summary["logged"]["hinted_rows"],
             calls, ", ".join("%.1f" % s for s in step_seconds)), flush=True)
    s = summary["self"]
    print("| %d processes, Mentor(\"self\") on the first only (1 step) | interventions %d, hinted rows %d, learner "
          "tokens %d in %d turns (%d fell back to rules), mentor calls per process (mentor prompts, hinted) %s, "
          "mentor s %.1f |"
          % (world, s["interventions"], s["hinted_rows"], s["self_tokens"], s["self_turns"], s["self_fallbacks"],
             self_calls, s["seconds"]), flush=True)
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(tmp, args.out)
    emit(summary)
    return 0 if not failures else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--data", required=True, help="GSM8K JSON Lines (question, answer)")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-6)
    ap.add_argument("--credit", default="prefix", choices=["prefix", "in_context", "stripped_is", "stripped"])
    ap.add_argument("--start-level", type=int, default=3)
    ap.add_argument("--also-credits", default="in_context,stripped_is,stripped",
                    help="credit modes also run for one short step each (comma-separated; empty: none)")
    ap.add_argument("--out", help="also write the summary JSON here")
    ap.add_argument("--math-verify-site", help="site-packages of the Math-Verify venv: also time it as a reward")
    ap.add_argument("--processes", type=int, default=1,
                    help="> 1: the multi-process check instead (that many CPU processes, threads split among them)")
    ap.add_argument("--quick", action="store_true",
                    help="a tiny random model (SmolLM2's tokenizer), one step per arm and credit mode, 16 new tokens")
    args = ap.parse_args()
    if args.quick:
        args.steps, args.new_tokens = 1, min(args.new_tokens, 16)
    if args.processes > 1 and "LOCAL_RANK" not in os.environ:
        import subprocess

        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={args.processes}",
               os.path.abspath(__file__)] + sys.argv[1:]
        return subprocess.call(cmd)

    import torch

    world = int(os.environ.get("WORLD_SIZE", "1"))
    torch.set_num_threads(max(1, args.threads // world))
    import transformers
    import trl

    if cpu_logprob.needed():
        cpu_logprob.install()
        SHIM["on"] = True
        print("note: trl %s on a CPU: its Triton log-prob kernel is replaced by torch ops in this process "
              "(bench/cpu_logprob.py), each trainer's fused head checked against the model's own logits" % trl.__version__,
              flush=True)
    rows = []
    with open(args.data) as f:
        for i, line in enumerate(f):
            if len(rows) >= args.prompts * args.steps * world:
                break
            if line.strip():
                r = json.loads(line)
                rows.append({
                    "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": r["question"]}],
                    "answer": r["answer"],
                    "id": r.get("id", f"gsm8k/train/{i}"),
                })
    if world > 1:
        return run_ddp(args, rows)
    arms = [run_arm(args, arm, rows) for arm in ("vanilla", "mentor")]
    for a in arms:
        emit(a)
    # The other credit modes, one short step each on the first problems: they must run and put
    # hinted rows in the batch (stripped_is: with the hinted context's behaviour log-probs).
    modes = []
    for credit in [c for c in args.also_credits.split(",") if c]:
        quick = argparse.Namespace(**{**vars(args), "credit": credit, "steps": 1, "new_tokens": min(args.new_tokens, 24),
                                      "math_verify_site": None})
        m = run_arm(quick, "mentor", rows[: quick.prompts])
        m["credit"] = credit
        emit(m)
        modes.append(m)

    # Mentor("self"), one step on the first problems: the learner writes the diagnosis and the
    # hint through TRL's generation path; its hinted rows must reach the batch.
    own = argparse.Namespace(**{**vars(args), "steps": 1, "math_verify_site": None})
    learner = run_arm(own, "self", rows[: own.prompts])
    emit(learner)

    vanilla, mentor = arms
    lines = [
        "| trl %s, transformers %s%s%s | vanilla (mentor=None) | MENTOR (rules, credit=%s) |"
        % (trl.__version__, transformers.__version__, ", quick (tiny random model)" if args.quick else "",
           ", Triton log-prob kernel as torch ops (max |diff| %.1e)" % max(SHIM["max_diff"]) if SHIM["on"] else "",
           args.credit),
        "|---|---|---|",
        "| interventions | %d | %d |" % (vanilla["interventions"], mentor["interventions"]),
        "| rescued groups | %d | %d |" % (vanilla["rescued"], mentor["rescued"]),
        "| hinted attempts sampled | %d | %d |" % (vanilla["hinted_sampled"], mentor["hinted_sampled"]),
        "| hinted rows | %d | %d |" % (vanilla["hinted_rows"], mentor["hinted_rows"]),
        "| rows with non-zero advantage | %d | %d |"
        % (vanilla["nonzero_advantage_rows"], mentor["nonzero_advantage_rows"]),
        "| ZRF per step | %s | %s |"
        % (", ".join("%.2f" % z for z in vanilla["zrf"]), ", ".join("%.2f" % z for z in mentor["zrf"])),
        "| step seconds | %s | %s |"
        % (", ".join("%.1f" % s for s in vanilla["step_seconds"]), ", ".join("%.1f" % s for s in mentor["step_seconds"])),
    ]
    rf = vanilla["reward_functions"]
    lines.append("| reward seconds (math_reward) | %.3f in %d calls | %.3f in %d calls |" % (
        rf["math_reward"]["seconds"], rf["math_reward"]["calls"],
        mentor["reward_functions"]["math_reward"]["seconds"], mentor["reward_functions"]["math_reward"]["calls"]))
    if "math_verify" in rf:
        mv = rf["math_verify"]
        ratio = mv["seconds"] / rf["math_reward"]["seconds"] if rf["math_reward"]["seconds"] > 0 else float("nan")
        lines.append("| reward seconds (Math-Verify 0.9.0, same completions) | %.3f in %d calls (%.0fx math_reward; agree on %d/%d) | – |"
                     % (mv["seconds"], mv["calls"], ratio, rf["agreement"]["same"], rf["agreement"]["rows"]))
    failures = []
    if vanilla["interventions"] != 0 or vanilla["hinted_rows"] != 0:
        failures.append("the vanilla arm intervened")
    if sum(1 for z in mentor["zrf"] if z > 0) == 0:
        failures.append("no group collapsed in the mentor arm: nothing to check (pick harder problems)")
    if mentor["interventions"] < 1:
        failures.append("the mentor arm intervened on no collapsed group")
    # Only a rescued hinted group enters the batch (replace assembly: `group` rows each), so a
    # real model's run checks that hinted attempts were sampled and that the batch holds exactly
    # the rescued groups' rows; whether a rescue happens is the model's business (`--quick`
    # scripts one, and the stdlib suite checks the rows against the Rust trainer's).
    def batch_matches_rescues(m, who):
        if m["interventions"] >= 1 and m["hinted_sampled"] < 1:
            failures.append(f"{who}: no hinted attempt was sampled")
        if args.quick and m["interventions"] >= 1 and m["hinted_rows"] < 1:
            failures.append(f"{who}: --quick scripts a rescue, but no hinted row reached the batch")
        if m["hinted_rows"] != m["rescued"] * args.group:
            failures.append(f"{who}: {m['hinted_rows']:.0f} hinted rows in the batch, {m['rescued']:.0f} rescued x {args.group}")

    batch_matches_rescues(mentor, "mentor arm")
    for key in ("mentor/zrf", "mentor/interventions", "mentor/rescued", "mentor/hinted_rows"):
        if key not in mentor["mentor_keys"]:
            failures.append(f"{key} missing from TRL's logs")
    for m in modes:
        batch_matches_rescues(m, f"credit={m['credit']}")
        if m["credit"] == "stripped_is" and m["hinted_rows"] >= 1 and m["behaviour_rows"] < 1:
            failures.append("credit=stripped_is: no row got the hinted context's behaviour log-probs")
        lines.append("| credit=%s (1 step, <= %d tokens): interventions, hinted attempts, rescued, hinted rows, step s | – | %d, %d, %d, %d, %.1f |"
                     % (m["credit"], min(args.new_tokens, 24), m["interventions"], m["hinted_sampled"], m["rescued"],
                        m["hinted_rows"], m["step_seconds"][0]))
    if learner["interventions"] < 1:
        failures.append("Mentor(\"self\"): no collapsed group in its step: nothing to check")
    else:
        batch_matches_rescues(learner, "Mentor(\"self\")")
    if learner["self_tokens"] <= 0 or "mentor/self_tokens" not in learner["mentor_keys"]:
        failures.append("Mentor(\"self\"): mentor/self_tokens missing from TRL's logs")
    lines.append("| Mentor(\"self\") (1 step, <= %d tokens): interventions, hinted rows, learner tokens in turns "
                 "(fell back to rules), mentor s, step s | – | %d, %d, %d in %d (%d), %.1f, %.1f |"
                 % (args.new_tokens, learner["interventions"], learner["hinted_rows"], learner["self_tokens"],
                    learner["self_turns"], learner["self_fallbacks"], learner["mentor_seconds"],
                    learner["step_seconds"][0]))
    print("\n".join(lines), flush=True)
    summary = {
        "what": "summary",
        "ok": not failures,
        "failures": failures,
        "workload": {
            "prompts": args.prompts, "group": args.group, "new_tokens": args.new_tokens, "steps": args.steps,
            "threads": args.threads, "credit": args.credit, "start_level": args.start_level, "seed": args.seed,
        },
        "arms": arms,
        "credit_modes": modes,
        "self_mentor": learner,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__},
        "logprob_kernel": {"torch_ops": SHIM["on"], "max_abs_diff": max(SHIM["max_diff"], default=None)},
    }
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(tmp, args.out)
    emit(summary)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
