"""SkyRL: a skyrl-gym text environment (`env_class` "vhdplay") over any row of `vhd export --format skyrl` (or trl,
hf). Needs `skyrl-gym` (0.4).

    from integrations.skyrl import register
    register()                                   # skyrl_gym.make("vhdplay", env_config=None, extras=row)

The prompt's system message lists the tools and the call format (SkyRL's generator renders the chat template without a
`tools` argument; a skyrl row carries them already, `init` adds them to a trl or hf row's prompt). The model's reply
is one tool call, `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (or that JSON object alone); the
observation comes back as the next user message. A reply without a call is the environment's answer too: an error
observation that spends a turn. The reply is read under schemas.payload's limits, the guard of every adapter (over
1 MiB: no call; an integer of any length, arguments nested too deeply: the environment's own error), so no reply
crashes a step. The reward is 0.0 on every step but the one that ends the episode, which carries the
score; the episode ends as the environment's does, at its turn budget.

SkyRL's own turn limit (`generator.max_turns`, which its generator passes as `extras["max_turns"]`; or `max_turns` in
the env config or the row's `extra_info`) must leave room for that budget: a limit below it is refused when the
environment is made, in one line naming both numbers, since the instructions promise the agent its whole budget and
an episode cut short would be scored on a plan it was not allowed to finish.
"""

from __future__ import annotations

from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from integrations.completions import guarded_step, parse_action  # shared with score_completion
from integrations.rows import CALL_FORMAT, ENV_CLASS, TOOLS_HEADING, env_from_trainer_row, tools_prompt
from schemas import payload
from schemas.errors import UserError
from schemas.strict_json import dumps


class VhdSkyRLEnv(BaseTextEnv):
    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None):
        super().__init__()
        extras = extras or {}
        self.env = env_from_trainer_row(extras)
        budget = self.env.spec.turn_budget
        limit = trainer_turn_limit(env_config, extras)
        if limit is not None and limit < budget:
            raise UserError(f"SkyRL max_turns={limit} is below the turn budget {budget} of {self.env.env_id} (its "
                            f"instructions promise {budget} turns): set generator.max_turns to at least {budget}, "
                            f"or export only rows with turn_budget <= {limit}")
        self.max_turns = budget

    def init(self, prompt):
        self.env.reset()
        return with_tools(prompt, self.env), {"env_id": self.env.env_id, "mode": self.env.mode,
                                              "tools": self.env.tools()}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        parsed = parse_action(action)
        if parsed is None:
            observation = self.env.step("", {})  # spends a turn, as any mistake does
            if "error" in observation:
                observation = {"error": f"{_no_call(action)}; answer with {CALL_FORMAT}; tools: "
                                        f"{', '.join(sorted(self.env.tool_names))}"}
        else:
            observation = guarded_step(self.env, *parsed)
        done = self.env.done
        return BaseTextEnvStepOutput(observations=[{"role": "user", "content": dumps(observation)}],
                                     reward=self.env.score() if done else 0.0, done=done, metadata=self.get_metrics())

    def get_metrics(self) -> dict[str, Any]:
        return {"score": self.env.score(), "u": self.env.utility(), "turns": self.env.turns,
                "errors": self.env.errors}


def _no_call(action: Any) -> str:
    if not isinstance(action, str):
        return f"the reply is a {type(action).__name__}, not text"
    size = payload.size_of(action)
    if size > payload.MAX_BYTES:
        return f"the reply is {size:,} bytes, over the limit of {payload.MAX_BYTES:,}; no call was read"
    return "no tool call in the reply"


def trainer_turn_limit(env_config: Any, extras: dict[str, Any]) -> int | None:
    """The trainer's turn limit, where SkyRL puts one: extras (its generator's max_turns), the env config, or the
    row's extra_info; None when none is set."""
    config_limit = env_config.get("max_turns") if hasattr(env_config, "get") else None
    extra_info = extras.get("extra_info") if isinstance(extras.get("extra_info"), dict) else {}
    for value in (extras.get("max_turns"), config_limit, extra_info.get("max_turns")):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 1:
                raise UserError(f"SkyRL max_turns must be a whole number of turns >= 1, got {value!r}")
            return int(value)
    return None


def with_tools(prompt: list[dict[str, Any]], env) -> list[dict[str, Any]]:
    """The prompt with the tools and the call format in its system message (added when it lacks them)."""
    prompt = [dict(message) for message in prompt]
    if any(TOOLS_HEADING in str(message.get("content", "")) for message in prompt if message.get("role") == "system"):
        return prompt
    if prompt and prompt[0].get("role") == "system":
        prompt[0]["content"] = f"{prompt[0]['content']}\n\n{tools_prompt(env)}"
        return prompt
    return [{"role": "system", "content": f"{env.instructions}\n\n{tools_prompt(env)}"}, *prompt]


def register(env_id: str = ENV_CLASS) -> None:
    """Register VhdSkyRLEnv with skyrl-gym under `env_id` (the rows' env_class), once."""
    from skyrl_gym.envs.registration import register as skyrl_register
    from skyrl_gym.envs.registration import registry

    if env_id not in registry:
        skyrl_register(id=env_id, entry_point="integrations.skyrl:VhdSkyRLEnv")
