"""The verifiers taskset id `vhdplay-catalog` (verifiers imports a taskset by its top-level module name):
integrations.vf.catalog's taskset over a catalog selection."""

from integrations.vf.catalog import VhdCatalogTaskset

__all__ = ["VhdCatalogTaskset"]
