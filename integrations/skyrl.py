"""SkyRL: a skyrl-gym text environment (`env_class` "vhdplay") over any row of `vhd export --format skyrl` (or trl,
hf). Needs `skyrl-gym` (0.4).

    from integrations.skyrl import register
    register()                                   # skyrl_gym.make("vhdplay", env_config=None, extras=row)

The model's reply is one tool call, `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (or that JSON object
alone); the observation comes back as the next user message. A reply without a call is the environment's answer too:
an error observation that spends a turn. The reward is 0.0 on every step but the one that ends the episode, which
carries the score; the episode ends as the environment's does (its turn budget is max_turns).
"""

from __future__ import annotations

import json
import re
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from integrations.rows import ENV_CLASS, env_from_trainer_row

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
CALL_FORMAT = '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>'


def parse_action(text: str) -> tuple[str, dict[str, Any]] | None:
    """(tool name, arguments) of a reply, or None when it holds no well-formed call."""
    match = _TOOL_CALL.search(text or "")
    candidate = match.group(1) if match else (text or "").strip()
    fenced = _FENCE.match(candidate)
    if fenced:
        candidate = fenced.group(1)
    try:
        call = json.loads(candidate)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(call, dict):
        return None
    name, arguments = call.get("name", call.get("tool")), call.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return None
    return name, arguments


class VhdSkyRLEnv(BaseTextEnv):
    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None):
        super().__init__()
        self.env = env_from_trainer_row(extras or {})
        self.max_turns = self.env.spec.turn_budget

    def init(self, prompt):
        self.env.reset()
        return prompt, {"env_id": self.env.env_id, "mode": self.env.mode, "tools": self.env.tools()}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        parsed = parse_action(action)
        if parsed is None:
            observation = self.env.step("", {})  # spends a turn, as any mistake does
            if "error" in observation:
                observation = {"error": f"no tool call in the reply; answer with {CALL_FORMAT}; tools: "
                                        f"{', '.join(sorted(self.env.tool_names))}"}
        else:
            observation = self.env.step(*parsed)
        done = self.env.done
        return BaseTextEnvStepOutput(observations=[{"role": "user", "content": json.dumps(observation)}],
                                     reward=self.env.score() if done else 0.0, done=done, metadata=self.get_metrics())

    def get_metrics(self) -> dict[str, Any]:
        return {"score": self.env.score(), "u": self.env.utility(), "turns": self.env.turns,
                "errors": self.env.errors}


def register(env_id: str = ENV_CLASS) -> None:
    """Register VhdSkyRLEnv with skyrl-gym under `env_id` (the rows' env_class), once."""
    from skyrl_gym.envs.registration import register as skyrl_register
    from skyrl_gym.envs.registration import registry

    if env_id not in registry:
        skyrl_register(id=env_id, entry_point="integrations.skyrl:VhdSkyRLEnv")
