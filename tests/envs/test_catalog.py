"""load_env / select_specs over a real warehouse, and the --where predicate's refusals."""

from __future__ import annotations

import pytest

from envs import load_env, select_specs
from envs.agents import play
from envs.catalog import BadPredicate, UnknownEnvironment, check_predicate, load_spec
from tests.evaluation.support import COUNT, generated_warehouse


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


def test_load_env_returns_the_catalog_environment(warehouse):
    spec = select_specs("family = 'routing'", 1, warehouse)[0]
    env = load_env(spec.env_id, "revealed", warehouse)
    assert env.spec == spec and env.mode == "revealed"
    assert play(env, "oracle").score == 1.0


def test_select_specs_filters_orders_and_limits(warehouse):
    every = select_specs("true", None, warehouse)
    assert len(every) == COUNT and [s.env_id for s in every] == sorted(s.env_id for s in every)
    knapsack = select_specs("family = 'knapsack' AND size >= 1", None, warehouse)
    assert {s.family for s in knapsack} == {"knapsack"} and len(knapsack) == 2
    assert len(select_specs("true", 3, warehouse)) == 3


def test_an_unknown_env_id_is_refused(warehouse):
    with pytest.raises(UnknownEnvironment, match="unknown environment id 'knapsack-nothere'"):
        load_env("knapsack-nothere", "hidden", warehouse)
    with pytest.raises(UnknownEnvironment, match="ids are letters"):
        load_spec("x' OR '1'='1", warehouse)


@pytest.mark.parametrize("predicate", ["true; SELECT 1", "true) UNION SELECT env_id FROM environments WHERE (true",
                                       "true) GROUP BY env_id HAVING (true", "true) LIMIT (1", "", "size >"])
def test_a_predicate_that_is_not_one_expression_is_refused(predicate):
    with pytest.raises(BadPredicate):
        check_predicate(predicate)


def test_a_predicate_reads_only_through_the_read_only_path(warehouse):
    from warehouse.catalog import QueryError

    with pytest.raises(QueryError, match="outside the warehouse"):
        select_specs("env_id IN (SELECT * FROM read_csv('/etc/passwd'))", None, warehouse)
