"""`vf-eval integrations.vf.catalog`: a verifiers v1 Taskset over a catalog selection (SQL `where`, mode, tier)."""

from __future__ import annotations

from collections.abc import Iterator

import verifiers.v1 as vf
from pydantic import AliasChoices, Field, field_validator, model_validator

from integrations.vf.common import VhdTask, VhdTaskConfig, task_of
from schemas.errors import UserError
from schemas.tiers import TIERS


class VhdCatalogConfig(vf.TasksetConfig):
    warehouse: str | None = None
    """The catalog: a folder or s3:// location (default $VHD_WAREHOUSE, else ./vhd_warehouse)."""
    where: str = "true"
    """SQL condition over the environments table, e.g. "family = 'knapsack' AND size >= 8"."""
    mode: str = "hidden"
    """written, revealed, hidden, comma-separated, or all."""
    tier: str | None = Field(default=None, validation_alias=AliasChoices("tier", "difficulty"))
    """Only this tier (easy, medium, hard, frontier): the environments table's tier column. `difficulty`, the
    option's old name, is still accepted."""
    limit: int | None = None
    """A seeded random sample of this many environments, stratified by family (every family once the limit reaches
    their number); default: every selected environment."""
    seed: int = 0
    """The seed of the `limit` sample: the same seed, the same sample (recorded in each task's data.sample_seed)."""
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

    @field_validator("tier")
    @classmethod
    def _tier(cls, value: str | None) -> str | None:
        if value is not None and value not in TIERS:
            raise UserError(f"unknown tier {value!r}; choose one of {', '.join(TIERS)}")
        return value

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise UserError(f"limit must be at least 1, got {value}")
        return value

    @model_validator(mode="after")
    def _served(self) -> VhdCatalogConfig:
        """The selection runs on the catalog and selects something (else one line, before any rollout: verifiers'
        CLI reports a config's ValueError in a box, an error of `load()` with a traceback), and it is the only
        world a task may open (VhdTaskConfig.served_where). The bare default verifiers' CLI builds first (its id
        alone, for its help) is not run."""
        selection = self.selection()
        if self.model_fields_set - {"id"}:
            from envs.catalog import BadPredicate, selected_count
            from warehouse.location import WarehouseError
            from warehouse.preflight import check_readable

            try:
                wh = check_readable(self.warehouse)
            except WarehouseError as error:
                raise UserError(f"{str(error).split(';')[0]}; set warehouse (--env.taskset.warehouse) or "
                                "$VHD_WAREHOUSE to a catalog that vhd generate made") from None
            try:
                count = selected_count(selection, wh)
            except BadPredicate:
                raise
            except UserError as error:  # QueryError: a column the catalog lacks, a type that does not compare
                raise UserError(f"where {selection!r} does not run on the catalog: {error}") from None
            if count == 0:
                raise UserError(f"no environment matches {selection!r} in the catalog; widen where (or tier)")
        self.task = self.task.model_copy(update={"served_where": selection, "served_warehouse": self.warehouse})
        return self

    def selection(self) -> str:
        """The SQL predicate over `environments` of `where` and `tier`."""
        return self.where if self.tier is None else f"({self.where}) AND tier = '{self.tier}'"


def parse_modes(text: str) -> list[str]:
    from schemas.envspec import MODES

    modes = list(MODES) if text == "all" else [m.strip() for m in text.split(",") if m.strip()]
    for mode in modes or [text]:
        if mode not in MODES:
            raise UserError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}, comma-separated, or all")
    return modes


class VhdCatalogTaskset(vf.Taskset[VhdTask, VhdCatalogConfig]):
    def load(self) -> Iterator[VhdTask]:
        from envs.catalog import select_specs

        config = self.config
        modes = parse_modes(config.mode)
        if config.tier is not None and config.tier not in TIERS:
            raise UserError(f"unknown tier {config.tier!r}; choose one of {', '.join(TIERS)}")
        where = config.selection()
        specs = select_specs(where, config.limit, config.warehouse, config.seed)
        if not specs:
            raise UserError(f"no environment matches {where!r} in the catalog")
        for spec in specs:
            for mode in modes:
                yield task_of(spec, mode, config.task,
                              sample_seed=config.seed if config.limit is not None else None)


__all__ = ["VhdCatalogTaskset"]
