"""`vf-eval integrations.vf.catalog`: a verifiers v1 Taskset over a catalog selection (SQL `where`, mode, tier)."""

from __future__ import annotations

from collections.abc import Iterator

import verifiers.v1 as vf
from pydantic import field_validator

from integrations.vf.common import VhdTask, VhdTaskConfig, task_of
from schemas.tiers import TIERS


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

    # checked when the config is parsed, so verifiers' CLI reports a bad value in one line before any rollout
    @field_validator("where")
    @classmethod
    def _where(cls, value: str) -> str:
        from envs.catalog import check_predicate

        return check_predicate(value)

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        parse_modes(value)
        return value

    @field_validator("difficulty")
    @classmethod
    def _difficulty(cls, value: str | None) -> str | None:
        if value is not None and value not in TIERS:
            raise ValueError(f"unknown difficulty {value!r}; choose one of {', '.join(TIERS)}")
        return value

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"limit must be at least 1, got {value}")
        return value


def parse_modes(text: str) -> list[str]:
    from schemas.envspec import MODES

    modes = list(MODES) if text == "all" else [m.strip() for m in text.split(",") if m.strip()]
    for mode in modes or [text]:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}, comma-separated, or all")
    return modes


class VhdCatalogTaskset(vf.Taskset[VhdTask, VhdCatalogConfig]):
    def load(self) -> Iterator[VhdTask]:
        from envs.catalog import select_specs

        config = self.config
        modes = parse_modes(config.mode)
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
