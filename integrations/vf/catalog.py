"""`vf-eval integrations.vf.catalog`: a verifiers v1 Taskset over a catalog selection (SQL `where`, mode, tier)."""

from __future__ import annotations

from collections.abc import Iterator

import verifiers.v1 as vf

from integrations.vf.common import VhdTask, VhdTaskConfig, task_of

TIERS = ("easy", "medium", "hard", "frontier")


class VhdCatalogConfig(vf.TasksetConfig):
    warehouse: str | None = None
    """The catalog: a folder or s3:// location (default $VHD_WAREHOUSE, else ./vhd_warehouse)."""
    where: str = "true"
    """SQL condition over the environments table, e.g. "family = 'knapsack' AND size >= 8"."""
    mode: str = "hidden"
    """written, revealed, hidden, comma-separated, or all."""
    difficulty: str | None = None
    """Only this tier (easy, medium, hard, frontier): the environments table's difficulty column."""
    limit: int | None = None
    """At most this many environments (in env_id order)."""
    task: VhdTaskConfig = VhdTaskConfig()


class VhdCatalogTaskset(vf.Taskset[VhdTask, VhdCatalogConfig]):
    def load(self) -> Iterator[VhdTask]:
        from envs.catalog import select_specs
        from schemas.envspec import MODES

        config = self.config
        modes = list(MODES) if config.mode == "all" else [m.strip() for m in config.mode.split(",") if m.strip()]
        for mode in modes:
            if mode not in MODES:
                raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}, comma-separated, or all")
        where = config.where
        if config.difficulty is not None:
            if config.difficulty not in TIERS:
                raise ValueError(f"unknown difficulty {config.difficulty!r}; choose one of {', '.join(TIERS)}")
            where = f"({where}) AND difficulty = '{config.difficulty}'"
        specs = select_specs(where, config.limit, config.warehouse)
        if not specs:
            raise ValueError(f"no environment matches {where!r} in the catalog")
        for spec in specs:
            for mode in modes:
                yield task_of(spec, mode, config.task)


__all__ = ["VhdCatalogTaskset"]
