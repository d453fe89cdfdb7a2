#!/usr/bin/env bash
# GPU smoke test of mentor_rl's verl plug-in: 2 GRPO steps of verl 0.9 (V1 trainer, vLLM
# rollout, FSDP actor) on one GPU, n = 4, the mentor on (rules, level-3 hints, in_context
# credit), then checks that the mentor/* metrics reached verl's logger and that the policy
# loss is finite. NOT RUN YET (no GPU where it was written); see the package README, "verl".
#
# Needs, on the GPU machine (which may have no network):
#   PYTHON   a Python with verl 0.9.x and its vLLM extra (vllm 0.24.0) and the mentor-rl wheel
#            installed (default: python3);
#   MODEL    a local Hugging Face model folder (Qwen2.5-0.5B-Instruct or smaller);
#   GSM8K    GSM8K's train.jsonl as `cargo xtask datasets` writes it ({"question", "answer"}
#            per line; default: ../shared/datasets/gsm8k/train.jsonl beside the repository);
#   OUT      where the parquet files and the log go (default: a new temporary folder).
# Usage: MODEL=/models/Qwen2.5-0.5B-Instruct crates/mentor-python/bench/verl_gpu_smoke.sh
set -euo pipefail

PYTHON=${PYTHON:-python3}
: "${MODEL:?set MODEL to a local model folder (Qwen2.5-0.5B-Instruct or smaller)}"
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
GSM8K=${GSM8K:-$REPO/../shared/datasets/gsm8k/train.jsonl}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

# verl's data format: a chat prompt, the gold under reward_model.ground_truth, the task id in
# extra_info (the hint memory's key). 16 training problems, 4 for validation (never run: test_freq=-1).
"$PYTHON" - "$GSM8K" "$OUT" <<'EOF'
import json, sys
import pandas as pd

src, out = sys.argv[1], sys.argv[2]
rows = []
with open(src, encoding="utf-8") as f:
    for i, line in enumerate(f):
        if len(rows) == 20:
            break
        ex = json.loads(line)
        rows.append({
            "data_source": "openai/gsm8k",
            "prompt": [{"role": "user", "content": ex["question"] + " Put the final answer in \\boxed{}."}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": ex["answer"]},
            "extra_info": {"index": i, "id": f"gsm8k-train-{i}", "question": ex["question"]},
        })
pd.DataFrame(rows[:16]).to_parquet(f"{out}/train.parquet")
pd.DataFrame(rows[16:]).to_parquet(f"{out}/val.parquet")
EOF

REWARD=$("$PYTHON" -c 'import mentor_rl.verl as v; print(v.__file__)')
LOG=$OUT/verl_gpu_smoke.log

"$PYTHON" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$OUT/train.parquet" \
  data.val_files="$OUT/val.parquet" \
  data.train_batch_size=4 \
  data.max_prompt_length=512 \
  data.max_response_length=256 \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.actor.ppo_mini_batch_size=4 \
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.n=4 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.4 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
  actor_rollout_ref.rollout.agent.num_workers=1 \
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
  reward.custom_reward_function.path="$REWARD" \
  reward.custom_reward_function.name=compute_score \
  reward.num_workers=1 \
  trainer.n_gpus_per_node=1 \
  trainer.nnodes=1 \
  trainer.total_training_steps=2 \
  trainer.val_before_train=false \
  trainer.test_freq=-1 \
  trainer.save_freq=-1 \
  trainer.logger='[console]' \
  trainer.v1.sampler.custom_sampler.path=pkg://mentor_rl.verl \
  trainer.v1.sampler.custom_sampler.name=MentorReplayBuffer \
  +actor_rollout_ref.rollout.agent.agent_loop_manager_class=mentor_rl.verl.MentorAgentLoopManager \
  +mentor.credit=in_context \
  +mentor.start_level=3 \
  2>&1 | tee "$LOG"

# verl's console logger prints each step's metrics as `name:value` pairs.
"$PYTHON" - "$LOG" <<'EOF'
import math, re, sys

text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
steps = [line for line in text.splitlines() if re.search(r"\bstep:\d+", line)]
assert len(steps) >= 2, f"expected 2 logged steps, found {len(steps)}"
for line in steps[:2]:
    metrics = dict(re.findall(r"([\w/@.-]+):(-?[\d.eE+-]+|nan|inf)", line))
    mentor = sorted(k for k in metrics if k.startswith("mentor/"))
    assert "mentor/zrf" in mentor and "mentor/interventions" in mentor, f"no mentor metrics in: {line[:300]}"
    losses = [k for k in metrics if k.endswith("pg_loss")]
    assert losses, f"no policy loss in: {line[:300]}"
    for k in losses:
        assert math.isfinite(float(metrics[k])), f"{k} = {metrics[k]}"
    print(f"step ok: {', '.join(f'{k}={metrics[k]}' for k in mentor)}; " + ", ".join(f"{k}={metrics[k]}" for k in losses))
print("verl GPU smoke: OK")
EOF
