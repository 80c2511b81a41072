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


def test_sample_ids_is_stratified_seeded_and_stable():
    from envs.catalog import sample_ids

    members = [(f"knapsack-{i}", "knapsack") for i in range(8)] + [("lp-0", "lp"), ("lp-1", "lp")]
    members += [(f"routing-{i}", "routing") for i in range(3)]
    draws = {seed: sample_ids(members, 3, seed) for seed in range(8)}
    family = dict(members)
    for seed, drawn in draws.items():
        assert sorted(family[i] for i in drawn) == ["knapsack", "lp", "routing"]  # one per family, never 3 knapsacks
        assert sample_ids(list(reversed(members)), 3, seed) == drawn  # the order the rows came in does not matter
    assert len({tuple(drawn) for drawn in draws.values()}) > 1  # another seed, another sample
    # a limit past a small family: the others go on taking turns; past everything: every id once
    five = sample_ids(members, 7, 3)
    assert [family[i] for i in five].count("lp") == 2 and len(set(five)) == 7
    assert sorted(sample_ids(members, 100, 3)) == sorted(i for i, _ in members)
    with pytest.raises(ValueError, match="seed must be an integer"):
        sample_ids(members, 3, "7")


def test_a_limit_draws_a_seeded_sample_of_every_family(warehouse):
    every = select_specs("true", None, warehouse)
    families = {s.family for s in every}
    pair = "family IN ('knapsack', 'lp')"
    assert {s.family for s in select_specs(pair, None, warehouse)[:2]} == {"knapsack"}  # the first two by env_id
    for seed in range(4):
        two = select_specs(pair, 2, warehouse, seed)
        assert {s.family for s in two} == {"knapsack", "lp"}  # a sample of both families, not the first two
        assert [s.env_id for s in select_specs(pair, 2, warehouse, seed)] == [s.env_id for s in two]
    samples = {tuple(s.env_id for s in select_specs("true", len(families), warehouse, seed)) for seed in range(4)}
    assert len(samples) > 1  # seeds differ
    for sample in samples:
        assert {next(s.family for s in every if s.env_id == env_id) for env_id in sample} == families
    assert len(select_specs("true", 3, warehouse)) == 3
    with pytest.raises(ValueError, match="--seed must be an integer"):
        select_specs("true", 3, warehouse, 1.5)


def test_a_row_whose_spec_was_edited_after_landing_is_refused_not_served_under_its_id(tmp_path):
    import json

    from schemas.errors import UserError
    from tests.support import make_spec
    from tests.warehouse.test_landing import DATE, environments_frame
    from warehouse.landing import commit_run, land
    from warehouse.location import resolve_warehouse

    honest, tampered, broken = make_spec("knapsack", 0), make_spec("lp", 1), make_spec("qp", 2)
    edited = json.loads(tampered.model_dump_json())
    edited["turn_budget"] += 1  # still a valid spec, now under another id
    frame = environments_frame([honest.env_id, tampered.env_id, broken.env_id]).assign(
        family=["knapsack", "lp", "qp"],
        spec_json=[honest.model_dump_json(), json.dumps(edited), "{not a spec"])  # the first in pydantic's order
    wh = resolve_warehouse(str(tmp_path / "wh"))
    commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", frame, DATE, "s1")]}, {})
    assert load_spec(honest.env_id, wh).env_id == honest.env_id
    with pytest.raises(UserError, match=f"{tampered.env_id}'s stored spec was edited after landing \\(it hashes to "
                                        f"{tampered.family}-"):
        load_spec(tampered.env_id, wh)
    with pytest.raises(UserError, match="does not parse as a spec"):
        load_spec(broken.env_id, wh)
