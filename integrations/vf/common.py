"""The task and data shared by the catalog and endless tasksets (needs the `verifiers` extra)."""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf
from verifiers.v1.mcp import ToolsetConfig

from envs.environment import Environment
from integrations.rows import FIRST_USER_MESSAGE
from integrations.vf.state import VhdState
from schemas.envspec import MODES, EnvSpec
from schemas.errors import UserError


class VhdData(vf.TaskData):
    env_id: str
    mode: str
    family: str
    tier: str | None = None
    seed: int | None = None
    """The endless taskset's generator seed: the same seed, the same environment (None for catalog tasks)."""
    sample_seed: int | None = None
    """The catalog taskset's `seed` when its `limit` drew a sample (None: every selected environment)."""
    spec_json: str


class VhdTaskConfig(vf.TaskConfig):
    served_where: str | None = None
    """Set by the catalog taskset from its `where` and `tier`: the only catalog environments a rollout may open.
    verifiers' env server rebuilds each task from the data its client sends, so `setup` refuses a task outside the
    selection as an unknown environment id, with the same error. None (the endless taskset): no check."""
    served_warehouse: str | None = None
    """The catalog `served_where` selects from (set by the catalog taskset, from its `warehouse`)."""


def check_served(data: VhdData, config: VhdTaskConfig) -> None:
    """Refuse a task whose environment is outside its taskset's selection (VhdTaskConfig.served_where): the id of
    the spec it would play (a hash of the spec: a spec_json edited in transit has another id) must be one of the
    selection's, and its own env_id."""
    if config.served_where is None:
        return
    from pydantic import ValidationError

    from envs.catalog import load_spec, not_found

    try:
        opened = EnvSpec.model_validate_json(data.spec_json).env_id
    except ValidationError:
        raise not_found(data.env_id) from None
    load_spec(opened, config.served_warehouse, config.served_where)  # an id outside it: as an unknown one
    if opened != data.env_id:
        raise not_found(data.env_id)


def replay(data: VhdData, calls: list[dict[str, Any]]) -> Environment:
    """A fresh Environment of the task with the rollout's calls played again (the episode is deterministic), each
    through schemas.payload's guard as the toolset played it (integrations.completions.guarded_step)."""
    from integrations.completions import guarded_step

    env = Environment(EnvSpec.model_validate_json(data.spec_json), data.mode)
    for call in calls:
        guarded_step(env, call["tool"], call.get("arguments") or {})
    return env


class VhdTask(vf.Task[VhdData, VhdState, VhdTaskConfig]):
    @property
    def key(self) -> str:
        return f"{self.data.env_id}/{self.data.mode}"

    async def setup(self, trace, runtime) -> None:
        """Before the rollout: refuse an environment outside the taskset's selection (see check_served)."""
        check_served(self.data, self.config)

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


def task_of(spec: EnvSpec, mode: str, config: VhdTaskConfig, seed: int | None = None,
            sample_seed: int | None = None) -> VhdTask:
    if mode not in MODES:
        raise UserError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    env = Environment(spec, mode)
    tier = spec.difficulty.tier if spec.difficulty else None
    data = VhdData(id=f"{spec.env_id}/{mode}", name=f"{spec.family}/{spec.env_id}/{mode}", prompt=FIRST_USER_MESSAGE,
                   system_prompt=env.instructions, env_id=spec.env_id, mode=mode, family=spec.family, tier=tier,
                   seed=seed, sample_seed=sample_seed, spec_json=spec.model_dump_json())
    return VhdTask(data, config)
