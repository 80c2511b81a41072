"""The registry: versioned ids, duplicates refused, selections by id, group and 'diagnostic'."""

from __future__ import annotations

import pytest

import mechanisms
from mechanisms.inventory_dp import InventoryDP
from mechanisms.registry import register, resolve_families


def test_duplicates_and_wrong_types_are_refused():
    with pytest.raises(ValueError, match="already registered"):
        register(InventoryDP())
    with pytest.raises(TypeError):
        register(object())


def test_selections():
    assert resolve_families("lp,knapsack") == ["lp", "knapsack"]
    assert resolve_families("near_ood") == [m.id for m in mechanisms.families() if m.group == "near_ood"]
    assert set(resolve_families("diagnostic")) >= {"inventory_dp", "knapsack", "lp"}
    assert resolve_families(None) == [m.id for m in mechanisms.families()]


def test_unknown_family_names_the_known_ones():
    with pytest.raises(mechanisms.UnknownFamilyError, match="unknown family 'chess'.*inventory_dp"):
        resolve_families("lp,chess")


def test_every_family_declares_its_contract():
    for m in mechanisms.families():
        assert m.version >= 1 and m.group and m.summary
        assert m.size_range[0] <= m.default_size <= m.size_range[1]
        assert m.horizon_range[0] <= m.default_horizon <= m.horizon_range[1]
        for size, horizon in m.grid():
            assert m.size_range[0] <= size <= m.size_range[1]
            assert m.horizon_range[0] <= horizon <= m.horizon_range[1]
