"""The verifiers taskset id `vhdplay-endless` (verifiers imports a taskset by its top-level module name):
integrations.vf.endless's endless taskset of environments generated on demand from seeds."""

from integrations.vf.endless import VhdEndlessTaskset

__all__ = ["VhdEndlessTaskset"]
