"""The typed OpenEnv client of `vhd serve-openenv`, for the trainer's environment (needs `openenv>=0.10,<0.11` only;
nothing else of vhdplay is imported, so it runs beside OpenEnv's fastmcp, which vhdplay cannot share an environment
with).

OpenEnv's `MCPToolClient.state()` builds its `State` from `episode_id` and `step_count` alone, so the episode's score
and u never reach the caller. `VhdplayEnv` is that client with `state()` parsed into `VhdplayState`, the server's
state (integrations.openenv_server.STATE_SCHEMA) as typed fields:

    from integrations.openenv_client import VhdplayEnv
    async with VhdplayEnv(base_url="http://127.0.0.1:8000") as env:
        await env.reset(split="train", index=0)
        ...
        state = await env.state()       # state.score, state.u, state.turns, state.turn_budget, state.done, ...
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import State
from openenv.core.mcp_client import MCPToolClient


class VhdplayState(State):
    """A session's state as `vhd serve-openenv` sends it: the episode so far and its score."""

    env_id: str | None = None
    mode: str | None = None
    turns: int = 0
    turn_budget: int = 0
    done: bool = False
    score: float | None = None
    u: float | None = None
    task: dict[str, Any] | None = None


class VhdplayEnv(MCPToolClient):
    """OpenEnv's MCPToolClient whose `state()` keeps the score, u and turns (a VhdplayState)."""

    def _parse_state(self, payload: dict[str, Any]) -> VhdplayState:
        return VhdplayState.model_validate(payload)


__all__ = ["VhdplayEnv", "VhdplayState"]
