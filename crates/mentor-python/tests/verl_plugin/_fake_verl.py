"""Fakes around verl's agent-loop worker for the plug-in's CPU tests: a rollout server scripted
to fail a group and succeed under the hint, a single-turn agent loop, a tokenizer and a reward
worker that scores with mentor_rl.verl.compute_score (the real math verifier)."""

from typing import Any, Dict, List

from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput
from verl.workers.rollout.replica import TokenOutput

from mentor_rl import verl as mverl

QUESTION = "A box holds 7 rows of 6 eggs. How many eggs are in the box?"
GOLD = "There are 7 rows.\nEach row has 6 eggs, so 7 * 6 = 42 eggs.\n#### 42"
PROMPT_IDS = [101, 102]
HINT_TOKEN = 555
RIGHT, WRONG, EOS = 7, 9, 2
FORCED_BASE = 800  # word k of a forced text encodes to FORCED_BASE + k
UNHINTED_LOGPROBS = [-2.0, -1.0]
HINTED_LOGPROBS = [-0.25, -0.5]


class FakeTokenizer:
    pad_token_id = 0

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        words = {RIGHT: "\\boxed{42}", WRONG: "\\boxed{40}"}
        return " ".join(words[int(t)] for t in ids if int(t) in words)

    def __call__(self, text: str, add_special_tokens: bool = False) -> Dict[str, List[int]]:
        return {"input_ids": [FORCED_BASE + k for k, _ in enumerate(text.split())]}


class FakeServer:
    """Unhinted prompts get WRONG; hinted ones (the hint token in the prompt, or forced steps
    after it) get RIGHT on every other call, so a hinted group is rescued with mixed rewards."""

    def __init__(self) -> None:
        self.calls: List[List[int]] = []
        self.hinted_calls = 0

    async def generate(self, request_id: Any, *, prompt_ids: List[int], sampling_params: Dict[str, Any], **kwargs: Any) -> TokenOutput:
        self.calls.append(list(prompt_ids))
        if HINT_TOKEN in prompt_ids:
            tok = RIGHT if self.hinted_calls % 2 == 0 else WRONG
            self.hinted_calls += 1
            logprobs = HINTED_LOGPROBS
        else:
            tok, logprobs = WRONG, UNHINTED_LOGPROBS
        return TokenOutput(token_ids=[tok, EOS], log_probs=list(logprobs), extra_fields={"min_global_steps": 1, "max_global_steps": 1})


class FakeAgentLoop:
    """Single turn: the prompt is PROMPT_IDS, plus HINT_TOKEN when the last message carries a hint."""

    def __init__(self, *, server_manager: Any, **kwargs: Any) -> None:
        self.server_manager = server_manager

    async def run(self, sampling_params: Dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        messages = list(kwargs["raw_prompt"])
        hinted = "Hint" in messages[-1]["content"] or "solution starts" in messages[-1]["content"]
        prompt_ids = PROMPT_IDS + ([HINT_TOKEN] if hinted else [])
        out = await self.server_manager.generate("r", prompt_ids=prompt_ids, sampling_params=sampling_params)
        extra = dict(out.extra_fields)
        extra.update({"turn_scores": [], "tool_rewards": []})
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=out.token_ids,
            response_mask=[1] * len(out.token_ids),
            response_logprobs=out.log_probs,
            num_turns=2,
            metrics=AgentLoopMetrics(),
            extra_fields=extra,
        )


class _Remote:
    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)


class FakeRewardWorker:
    """verl's RewardLoopWorker as the worker calls it (``compute_score.remote(data)``, awaited),
    scoring the decoded response with mentor_rl.verl.compute_score."""

    def __init__(self) -> None:
        self.compute_score = _Remote(self._score)
        self.scored = 0

    async def _score(self, data: Any) -> Dict[str, Any]:
        self.scored += 1
        text = FakeTokenizer().decode(data.batch["responses"][-1].tolist())
        gold = data.non_tensor_batch["reward_model"][-1]["ground_truth"]
        score = mverl.compute_score("gsm8k", text, gold)
        return {"reward_score": score, "reward_extra_info": {"acc": score}}
