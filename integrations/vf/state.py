"""The rollout state the task reads and the toolset writes (needs the `verifiers` extra): a module of its own, so that
both integrations.vf.common (the task) and integrations.vf.toolset (the per-rollout tool server) import it and
neither imports the other for it."""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf
from pydantic import Field


class VhdState(vf.State):
    """One rollout's episode as its toolset reports it after every call."""

    calls: list[dict[str, Any]] = Field(default_factory=list)
    turns: int = 0
    errors: int = 0
    done: bool = False
