"""`vf-eval integrations.vf.endless`: an endless verifiers v1 Taskset, environments generated on demand from seeds
(integrations.generate: the same seed, the same environment)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import verifiers.v1 as vf

from integrations.vf.common import VhdTask, VhdTaskConfig, task_of


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


class VhdEndlessTaskset(vf.Taskset[VhdTask, VhdEndlessConfig]):
    INFINITE = True

    def load(self) -> Iterator[VhdTask]:
        from integrations.generate import resolve, spec_from_seed

        config = self.config
        families = resolve(config.families)  # a bad family fails before the stream starts
        for seed in itertools.count(config.start_seed):
            yield task_of(spec_from_seed(seed, families, config.tier), config.mode, config.task, seed=seed)


__all__ = ["VhdEndlessTaskset"]
