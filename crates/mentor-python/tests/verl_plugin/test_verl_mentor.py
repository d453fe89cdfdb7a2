"""The MENTOR step inside verl's agent-loop worker, on CPU: the real worker code path
(MentorAgentLoopWorker._run_prompt and verl's own _run_agent_loop/_agent_loop_postprocess)
against a scripted rollout server, a real TransferQueue, verl's ReplayBuffer, verl's GRPO
advantages and verl's rollout-correction weights. Run by `cargo xtask verl` in the verl venv."""

import asyncio
import os
import sys
import uuid
from contextlib import nullcontext

import pytest

pytest.importorskip("verl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transfer_queue as tq  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import _fake_verl as fv  # noqa: E402

import verl.experimental.agent_loop.agent_loop as al  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.trainer.ppo.core_algos import AdvantageEstimator  # noqa: E402
from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_rejection_mask  # noqa: E402
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories  # noqa: E402

from mentor_rl import _verl_compat, _verl_worker  # noqa: E402
from mentor_rl import verl as mverl  # noqa: E402

N = 4
FIELDS = ["uid", "prompts", "responses", "response_mask", "rm_scores", "rollout_log_probs", "extra_fields", "raw_prompt"]


def make_config(mentor=None, rollout_is=None):
    cfg = {
        "actor_rollout_ref": {"rollout": {"n": N, "val_kwargs": {"n": 1}, "response_length": 16, "calculate_log_probs": True}},
        "data": {},
        "reward": {"reward_model": {"enable": False}},
        "algorithm": {"rollout_correction": {"rollout_is": rollout_is, "bypass_mode": False}},
    }
    if mentor is not None:
        cfg["mentor"] = mentor
    return OmegaConf.create(cfg)


def make_worker(config):
    w = object.__new__(_verl_worker.MentorAgentLoopWorker)
    w.config = config
    w.llm_client = fv.FakeServer()
    w.reward_loop_worker_handles = [fv.FakeRewardWorker()]
    w.tokenizer = fv.FakeTokenizer()
    w.processor = None
    w.hf_model_type = None
    w.dataset_cls = None
    w.tools = []
    w.distillation_enabled = False
    w.mm_processor_kwargs = {}
    w.background_tasks = set()
    w._mentor_setup()
    return w


@pytest.fixture
def fake_loop(monkeypatch):
    monkeypatch.setattr(al, "rollout_trace_attr", lambda **kw: nullcontext())
    monkeypatch.setitem(al._agent_loop_registry, "fake", {"_target_": "_fake_verl.FakeAgentLoop"})


def run_group(worker, validate=False):
    """One prompt through the worker; returns the group's uid, stored keys and fields."""
    uid = uuid.uuid4().hex
    partition = "val" if validate else "train"
    tq.kv_put(key=uid, partition_id=partition, tag={"is_prompt": True, "status": "pending", "global_steps": 1})
    prompt = {
        "uid": uid,
        "raw_prompt": [{"role": "user", "content": fv.QUESTION}],
        "agent_name": "fake",
        "global_steps": 1,
        "index": 0,
        "data_source": "gsm8k",
        "reward_model": {"ground_truth": fv.GOLD},
        "extra_info": {"id": "eggs"},
    }
    trajectory = {"step": 1, "sample_index": 0, "rollout_n": 0, "validate": validate}
    asyncio.run(worker._run_prompt(prompt, {"temperature": 1.0}, trajectory=trajectory))
    tags = tq.kv_list(partition_id=partition)[partition]
    keys = sorted((k for k in tags if k.startswith(uid + "_")), key=lambda k: int(k.split("_")[1]))
    return uid, keys, tags[uid]["status"], partition


def fetch(keys, partition):
    data = tq.kv_batch_get(keys=keys, partition_id=partition, select_fields=FIELDS)
    rows = []
    for i in range(len(keys)):
        rows.append(
            {
                "uid": data["uid"][i],
                "prompts": data["prompts"][i].tolist(),
                "responses": data["responses"][i].tolist(),
                "response_mask": data["response_mask"][i].tolist(),
                "rm": float(data["rm_scores"][i].sum()),
                "logprobs": [round(x, 4) for x in data["rollout_log_probs"][i].tolist()],
                "mentor": data["extra_fields"][i].get("mentor"),
                "raw_prompt": data["raw_prompt"][i],
            }
        )
    return rows


def grpo(keys, partition):
    data = tq.kv_batch_get(keys=keys, partition_id=partition, select_fields=["uid", "prompts", "responses", "response_mask", "rm_scores"])
    dp = DataProto(batch=data.to_padded_tensor())
    dp.batch["token_level_rewards"] = dp.batch["rm_scores"]
    dp.non_tensor_batch["uid"] = np.array(dp.batch.pop("uid").tolist(), dtype=object)
    out = compute_advantage_for_multi_trajectories(dp, batch_keys=keys, adv_estimator=AdvantageEstimator.GRPO, num_repeat=N)
    return out.batch["advantages"], out.batch["response_mask"]


CASES = {
    # credit, assembly -> stored rows, hinted rows
    ("in_context", "replace"): (N, N),
    ("in_context", "augment"): (2 * N, N),
    ("stripped", "replace"): (N, N),
    ("stripped", "augment"): (2 * N, N),
}


@pytest.mark.parametrize("credit,assembly", sorted(CASES))
def test_hinted_rows_join_the_group(tq_session, fake_loop, credit, assembly):
    worker = make_worker(make_config({"credit": credit, "assembly": assembly}))
    uid, keys, status, part = run_group(worker)
    assert status == "finished"
    total, hinted = CASES[(credit, assembly)]
    assert keys == [f"{uid}_{i}_0" for i in range(total)]
    rows = fetch(keys, part)
    assert all(r["uid"] == uid for r in rows)
    hinted_rows = [r for r in rows if r["mentor"]["hinted"]]
    plain_rows = [r for r in rows if not r["mentor"]["hinted"]]
    assert len(hinted_rows) == hinted
    for r in plain_rows:  # the failed unhinted attempts (augment keeps them)
        assert r["prompts"] == fv.PROMPT_IDS and r["rm"] == 0.0 and r["logprobs"] == fv.UNHINTED_LOGPROBS
    for r in hinted_rows:
        # in_context: the hinted prompt's ids; stripped: the original prompt's
        expected = fv.PROMPT_IDS + [fv.HINT_TOKEN] if credit == "in_context" else fv.PROMPT_IDS
        assert r["prompts"] == expected
        assert r["logprobs"] == fv.HINTED_LOGPROBS  # sampled under the hint
        assert r["response_mask"] == [1, 1]
        assert (r["raw_prompt"][-1]["content"] != fv.QUESTION) == (credit == "in_context")
        assert r["mentor"]["hint_tokens"] == 1
    assert sorted(r["rm"] for r in hinted_rows) == [0.0, 0.0, 1.0, 1.0]  # rescued with mixed rewards
    group = rows[0]["mentor"]["group"]
    assert group["collapsed"] == 1 and group["interventions"] == 1 and group["rescued"] == 1
    assert group["hinted_rollouts"] == N and group["seconds"] > 0
    # verl's GRPO advantages over the stored group: no longer all zero; correct rows above
    adv, mask = grpo(keys, part)
    per_row = [float(adv[i][mask[i].bool()][0]) for i in range(len(keys))]
    assert any(a != 0 for a in per_row)
    for r, a in zip(rows, per_row):
        assert (a > 0) == (r["rm"] > 0)
    tq.kv_clear(keys=keys + [uid], partition_id=part)


def test_prefix_forces_the_worked_steps(tq_session, fake_loop):
    for mask in (1, 0):
        worker = make_worker(make_config({"credit": "prefix", "start_level": 3, "prefix_mask": mask}))
        uid, keys, status, part = run_group(worker)
        assert status == "finished" and len(keys) == N
        rows = fetch(keys, part)
        forced = [fv.FORCED_BASE + k for k in range(len("There are 7 rows.".split()))]
        # the server saw the hinted prompt followed by the forced steps
        assert any(c == fv.PROMPT_IDS + [fv.HINT_TOKEN] + forced for c in worker.llm_client._inner.calls)
        for r in rows:
            assert r["mentor"]["hinted"] == 1
            assert r["prompts"] == fv.PROMPT_IDS  # the original prompt
            assert r["responses"][: len(forced)] == forced
            assert r["response_mask"] == [mask] * len(forced) + [1, 1]
            assert r["logprobs"] == [0.0] * len(forced) + fv.HINTED_LOGPROBS
            assert r["mentor"]["hint_tokens"] == 1 + len(forced)
        adv, rmask = grpo(keys, part)
        # forced steps carry the advantage only when they are in the loss
        assert torch.all(adv[:, : len(forced)] == 0) == (mask == 0)
        assert any(float(adv[i, -1]) != 0 for i in range(len(keys)))
        tq.kv_clear(keys=keys + [uid], partition_id=part)


def test_stripped_is_weights(tq_session, fake_loop):
    worker = make_worker(make_config({"credit": "stripped_is"}, rollout_is="token"))
    uid, keys, status, part = run_group(worker)
    assert status == "finished" and len(keys) == N
    rows = fetch(keys, part)
    rollout = torch.tensor([r["logprobs"] for r in rows])
    mask = torch.tensor([r["response_mask"] for r in rows], dtype=torch.float32)
    assert all(r["prompts"] == fv.PROMPT_IDS for r in rows) and torch.allclose(rollout, torch.tensor([fv.HINTED_LOGPROBS] * N))
    # made-up log-probs of the policy without the hint (what the actor recomputes as old_log_probs)
    old = torch.tensor([[-1.0, -0.5]] * N)
    _, _, metrics = compute_rollout_correction_and_rejection_mask(old, rollout, mask, rollout_is="token", rollout_is_threshold=2.0)
    weights, _, _ = compute_rollout_correction_and_rejection_mask(old, rollout, mask, rollout_is="token", rollout_is_threshold=2.0)
    w = weights.batch["rollout_is_weights"]
    expected = torch.exp(old - rollout).clamp(max=2.0)
    assert torch.allclose(w, expected, atol=1e-6)
    assert float(w[0, 0]) < 1.0  # the hint made the token likelier than the policy alone: down-weighted
    tq.kv_clear(keys=keys + [uid], partition_id=part)


def test_stripped_is_needs_rollout_correction():
    with pytest.raises(ValueError, match="rollout_is"):
        _verl_worker.check_config(make_config({"credit": "stripped_is"}))
    with pytest.raises(ValueError, match="unknown settings"):
        _verl_worker.check_config(make_config({"credit": "in_context", "bogus": 1}))
    bad = make_config({"credit": "in_context"})
    bad.reward.reward_model.enable = True
    with pytest.raises(ValueError, match="enable_resource_pool"):
        _verl_worker.check_config(bad)
    assert _verl_worker.check_config(make_config()) is None  # no +mentor: off
    assert _verl_worker.check_config(make_config({"enable": False})) is None


def test_solved_and_validation_groups_are_untouched(tq_session, fake_loop):
    worker = make_worker(make_config({"credit": "in_context"}))
    # validation: no mentor, stored as verl stores it
    uid, keys, status, part = run_group(worker, validate=True)
    assert status == "finished" and keys == [f"{uid}_0_0"]
    assert fetch(keys, part)[0]["mentor"] is None
    tq.kv_clear(keys=keys + [uid], partition_id=part)
    # a group with a correct attempt: no intervention, all n rows kept, the group's record says so
    server = worker.llm_client._inner
    server.calls = []
    real = server.generate

    async def one_right(request_id, *, prompt_ids, sampling_params, **kw):
        out = await real(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params, **kw)
        if len(server.calls) == 1:
            out.token_ids = [fv.RIGHT, fv.EOS]
        return out

    server.generate = one_right
    uid, keys, status, part = run_group(worker)
    rows = fetch(keys, part)
    assert status == "finished" and len(rows) == N and not any(r["mentor"]["hinted"] for r in rows)
    assert rows[0]["mentor"]["group"]["collapsed"] == 0 and rows[0]["mentor"]["group"]["interventions"] == 0
    assert len(server.calls) == N
    tq.kv_clear(keys=keys + [uid], partition_id=part)


def test_replay_buffer_logs_mentor_metrics(tq_session, fake_loop):
    worker = make_worker(make_config({"credit": "in_context", "assembly": "augment"}))
    uid, keys, status, part = run_group(worker)
    rb = mverl.MentorReplayBuffer(
        trainer_mode="sync",
        trainer_config={},
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs=OmegaConf.create({"train_batch_size": 1}),
        poll_interval=0.05,
    )
    assert rb.train_batch_size == 1  # forwarded from sampler_kwargs
    batch, metrics = rb.sample(global_steps=1, partition_id="train", batch_size=1)
    assert sorted(batch.keys) == sorted(keys)
    assert metrics["mentor/zrf"] == 1.0
    assert metrics["mentor/interventions"] == 1.0 and metrics["mentor/rescued"] == 1.0
    assert metrics["mentor/hinted_rows"] == float(N) and metrics["mentor/hint_tokens"] == float(N)
    assert metrics["mentor/fallbacks"] == 0.0 and metrics["mentor/seconds"] > 0
    tq.kv_clear(keys=batch.keys + [uid], partition_id="train")


def test_fence():
    base = _verl_compat.worker_base()
    _verl_compat.check_api(base)  # the installed verl's _run_prompt is the checked one
    with pytest.raises(ImportError, match="_run_prompt changed"):
        _verl_compat.check_api(base, hashes={"0" * 64})
    assert issubclass(_verl_worker.MentorAgentLoopManager, __import__("verl.trainer.ppo.v1", fromlist=["x"]).AgentLoopManagerTQ)
    assert mverl.MentorAgentLoopManager is _verl_worker.MentorAgentLoopManager


def test_nurl_keeps_some_failed_attempts(tq_session, fake_loop):
    worker = make_worker(make_config({"credit": "in_context", "assembly": "nurl", "keep_unhinted": 1}))
    uid, keys, status, part = run_group(worker)
    rows = fetch(keys, part)
    assert status == "finished" and len(rows) == N
    assert [r["mentor"]["hinted"] for r in rows] == [0] + [1] * (N - 1)
    assert rows[0]["prompts"] == fv.PROMPT_IDS and all(r["prompts"] == fv.PROMPT_IDS + [fv.HINT_TOKEN] for r in rows[1:])
    tq.kv_clear(keys=keys + [uid], partition_id=part)


def test_verl_imports_the_entry_point(tmp_path):
    """verl imports the `verl.plugins` entry point pyproject.toml declares (a distribution made
    here with that entry point, so the test does not depend on how mentor-rl was installed)."""
    import re
    import subprocess

    pyproject = open(os.path.join(os.path.dirname(__file__), "../../pyproject.toml"), encoding="utf-8").read()
    value = re.search(r'\[project\.entry-points\."verl\.plugins"\]\nmentor_rl = "([^"]+)"', pyproject).group(1)
    info = tmp_path / "mentor_rl_probe-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mentor-rl-probe\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text(f"[verl.plugins]\nmentor_rl_probe = {value}\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]), VERL_USE_EXTERNAL_PLUGINS="mentor_rl_probe")
    code = "import sys, verl; print('loaded' if %r in sys.modules else 'missing')" % value
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "loaded", out.stderr[-2000:]
