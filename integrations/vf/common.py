"""The task, state and data shared by the catalog and endless tasksets (needs the `verifiers` extra)."""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.mcp import ToolsetConfig

from envs.environment import Environment
from integrations.rows import FIRST_USER_MESSAGE
from schemas.envspec import MODES, EnvSpec


class VhdState(vf.State):
    """One rollout's episode as its toolset reports it after every call."""

    calls: list[dict[str, Any]] = Field(default_factory=list)
    turns: int = 0
    errors: int = 0
    done: bool = False


class VhdData(vf.TaskData):
    env_id: str
    mode: str
    family: str
    tier: str | None = None
    seed: int | None = None
    spec_json: str


class VhdTaskConfig(vf.TaskConfig):
    pass


def replay(data: VhdData, calls: list[dict[str, Any]]) -> Environment:
    """A fresh Environment of the task with the rollout's calls played again (the episode is deterministic)."""
    env = Environment(EnvSpec.model_validate_json(data.spec_json), data.mode)
    for call in calls:
        env.step(call["tool"], call.get("arguments") or {})
    return env


class VhdTask(vf.Task[VhdData, VhdState, VhdTaskConfig]):
    @property
    def key(self) -> str:
        return f"{self.data.env_id}/{self.data.mode}"

    @classmethod
    def toolsets(cls, config: VhdTaskConfig) -> list:
        from integrations.vf.toolset import VhdToolset

        return [VhdToolset(ToolsetConfig())]

    @vf.reward(weight=1.0)
    async def env_score(self, trace) -> float:
        """The environment's score, clip((u - u0) / (u* - u0), 0, 1), of the rollout's calls."""
        return replay(self.data, trace.state.calls).score()

    @vf.metric
    async def u(self, trace) -> float:
        return replay(self.data, trace.state.calls).utility()

    @vf.metric
    async def turns(self, trace) -> float:
        return float(replay(self.data, trace.state.calls).turns)

    @vf.metric
    async def errors(self, trace) -> float:
        return float(replay(self.data, trace.state.calls).errors)


def task_of(spec: EnvSpec, mode: str, config: VhdTaskConfig, seed: int | None = None) -> VhdTask:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    env = Environment(spec, mode)
    tier = spec.difficulty.tier if spec.difficulty else None
    data = VhdData(id=f"{spec.env_id}/{mode}", name=f"{spec.family}/{spec.env_id}/{mode}", prompt=FIRST_USER_MESSAGE,
                   system_prompt=env.instructions, env_id=spec.env_id, mode=mode, family=spec.family, tier=tier,
                   seed=seed, spec_json=spec.model_dump_json())
    return VhdTask(data, config)
