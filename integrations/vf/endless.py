"""`vf-eval integrations.vf.endless`: an endless verifiers v1 Taskset, environments generated on demand from seeds
(integrations.generate: the same seed, the same environment)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import verifiers.v1 as vf
from pydantic import field_validator

from integrations.vf.common import VhdTask, VhdTaskConfig, task_of
from schemas.errors import UserError


class VhdEndlessConfig(vf.TasksetConfig):
    families: str | None = None
    """Family ids or group names, comma-separated (default: every family)."""
    tier: str | None = None
    """Only this difficulty tier (easy, medium, hard, frontier); default: each family's tiers in turn."""
    mode: str = "hidden"
    """written, revealed or hidden."""
    start_seed: int = 0
    """The first seed; task i is seed start_seed + i."""
    task: VhdTaskConfig = VhdTaskConfig()

    # checked when the config is parsed, so verifiers' CLI reports a bad value in one line before any rollout
    @field_validator("families")
    @classmethod
    def _families(cls, value: str | None) -> str | None:
        from integrations.generate import resolve

        resolve(value)
        return value

    @field_validator("tier")
    @classmethod
    def _tier(cls, value: str | None) -> str | None:
        from schemas.tiers import TIERS

        if value is not None and value not in TIERS:
            raise UserError(f"unknown tier {value!r}; choose one of {', '.join(TIERS)}")
        return value

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        from schemas.envspec import MODES

        if value not in MODES:
            raise UserError(f"unknown mode {value!r}; choose one of {', '.join(MODES)}")
        return value

    @field_validator("start_seed")
    @classmethod
    def _start_seed(cls, value: int) -> int:
        if value < 0:
            raise UserError(f"start_seed must be a non-negative integer, got {value}")
        return value


class VhdEndlessTaskset(vf.Taskset[VhdTask, VhdEndlessConfig]):
    INFINITE = True

    def load(self) -> Iterator[VhdTask]:
        from integrations.generate import resolve, spec_from_seed

        config = self.config
        families = resolve(config.families)  # a bad family fails before the stream starts
        for seed in itertools.count(config.start_seed):
            yield task_of(spec_from_seed(seed, families, config.tier), config.mode, config.task, seed=seed)


__all__ = ["VhdEndlessTaskset"]
