"""Catalog rows no reader may trust (issue 31, item 7): a spec of a family this vhd does not know, stored under the
hash of its own text (the id check passes), and a 60 MB spec_json. Each is refused in one line wherever the catalog
is read (load_spec, select_specs: serve-envs, show, play, export), `vhd warehouse check` reports both, and
serve-envs refuses them in one line naming the row,
not a 500. The long text is measured in SQL and never parsed."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest

from envs.catalog import load_spec, select_specs
from schemas.envspec import MAX_SPEC_JSON_CHARS
from schemas.errors import UserError
from tests.cli.test_cli import assert_one_line_error, vhd
from tests.support import make_spec

HUGE_CHARS = 60_000_000


@pytest.fixture(scope="module")
def tampered(tmp_path_factory):
    """(warehouse url, the honest id, the unknown family's id, the 60 MB row's id)."""
    from tests.warehouse.test_landing import DATE, environments_frame
    from warehouse.landing import commit_run, land
    from warehouse.location import resolve_warehouse

    honest = make_spec("knapsack", 0)
    unknown = json.loads(make_spec("knapsack", 2).canonical_json())
    unknown["family"] = "nosuch"
    unknown_text = json.dumps(unknown, sort_keys=True, separators=(",", ":"))
    unknown_id = f"nosuch-{hashlib.sha256(unknown_text.encode()).hexdigest()[:16]}"
    huge_text = '{"padding": "' + "x" * HUGE_CHARS + '"}'
    huge_id = f"lp-{hashlib.sha256(huge_text.encode()).hexdigest()[:16]}"
    rows = {honest.env_id: honest.canonical_json(), unknown_id: unknown_text, huge_id: huge_text}
    frame = environments_frame(list(rows)).assign(family=["knapsack", "nosuch", "lp"], spec_json=list(rows.values()))
    wh = resolve_warehouse(str(tmp_path_factory.mktemp("tampered-rows") / "wh"))
    commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", frame, DATE, "s1")]}, {})
    return wh.url, honest.env_id, unknown_id, huge_id


def test_load_spec_refuses_an_unknown_family_and_a_huge_spec_in_one_line(tampered):
    url, honest, unknown, huge = tampered
    assert load_spec(honest, url).env_id == honest
    with pytest.raises(UserError, match=f"environment {unknown} is of family 'nosuch', which this vhd does not know "
                                        r"\(it knows .*knapsack.*\): upgrade vhd") as refused:
        load_spec(unknown, url)
    assert "\n" not in str(refused.value)
    with pytest.raises(UserError, match=f"{huge}'s stored spec was edited after landing \\(it is 60,000,015 "
                                        f"characters, over the limit of {MAX_SPEC_JSON_CHARS:,}"):
        load_spec(huge, url)
    with pytest.raises(UserError, match="over the limit"):
        select_specs("true", None, url)
    with pytest.raises(UserError, match="which this vhd does not know"):
        select_specs("family = 'nosuch'", 1, url)
    assert [s.env_id for s in select_specs("family = 'knapsack'", None, url)] == [honest]


def test_show_and_export_refuse_them_in_one_line(tampered, tmp_path):
    url, _, unknown, huge = tampered
    assert_one_line_error(vhd("show", unknown, "--warehouse", url), f"environment {unknown} is of family 'nosuch'")
    assert_one_line_error(vhd("show", huge, "--warehouse", url), f"{huge}'s stored spec", "over the limit")
    assert_one_line_error(vhd("export", "--out", str(tmp_path / "x.jsonl"), "--warehouse", url), "over the limit")
    assert not (tmp_path / "x.jsonl").exists()


def test_warehouse_check_reports_both(tampered):
    url, _, unknown, huge = tampered
    result = vhd("warehouse", "check", "--warehouse", url)
    assert result.returncode == 1, result
    lines = result.stdout.splitlines()
    assert any(line.startswith(f"table environments: env_id {unknown} is of family 'nosuch', which this vhd does "
                               "not know") for line in lines), lines
    assert any(line.startswith(f"table environments: env_id {huge} holds a spec_json of 60,000,015 characters, "
                               f"over the limit of {MAX_SPEC_JSON_CHARS:,}") for line in lines), lines


def test_serve_envs_refuses_them_naming_the_row_not_a_500(tampered, tmp_path):
    from tests.serving.test_http import serve_cli

    url, honest, unknown, huge = tampered
    with open(tmp_path / "server.log", "w") as log:
        process, base = serve_cli("serve-envs", "--warehouse", url, log=log)
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            for env_id, reason in [(unknown, "which this vhd does not know"), (huge, "over the limit")]:
                answer = client.post("/sessions", json={"env_id": env_id})
                # a clear refusal, not a crash: 4xx, or the store's 503 for a row it cannot serve (serving.http)
                assert 400 <= answer.status_code < 500 or answer.status_code == 503, answer.text
                assert env_id in answer.json()["detail"] and reason in answer.json()["detail"], answer.text
            assert client.post("/sessions", json={"env_id": honest}).status_code == 201
    finally:
        process.terminate()
        process.wait(30)
    logged = (tmp_path / "server.log").read_text()
    assert "Traceback" not in logged and "ERROR" not in logged, logged


def test_a_spec_that_does_not_validate_is_one_line_naming_its_fields(tmp_path):
    """pydantic's report is several lines (each field, its problem, a link): `vhd show` prints one."""
    from tests.warehouse.test_landing import DATE, environments_frame
    from warehouse.landing import commit_run, land
    from warehouse.location import resolve_warehouse

    broken = json.loads(make_spec("qp", 2).canonical_json())
    broken["turn_budget"] = "many"
    del broken["split"]
    text = json.dumps(broken, sort_keys=True, separators=(",", ":"))
    env_id = f"qp-{hashlib.sha256(text.encode()).hexdigest()[:16]}"  # its own hash: only the parse fails
    wh = resolve_warehouse(str(tmp_path / "wh"))
    frame = environments_frame([env_id]).assign(family=["qp"], spec_json=[text])
    commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", frame, DATE, "s1")]}, {})
    assert_one_line_error(vhd("show", env_id, "--warehouse", wh.url), f"environment {env_id}'s stored spec",
                          "does not parse as a spec: split: Field required; turn_budget: Input should be a valid "
                          "integer")


def test_warehouse_check_reports_a_row_once_for_the_first_check_it_fails(tmp_path):
    """A row of an unknown family whose spec was also edited fails two checks; it is one line, the family's."""
    from tests.warehouse.test_landing import DATE, environments_frame
    from warehouse.landing import commit_run, land
    from warehouse.location import resolve_warehouse

    edited = json.loads(make_spec("knapsack", 1).canonical_json())
    edited["family"] = "nosuch"
    unknown_id = "nosuch-" + "0" * 16  # not the hash of the text beside it
    frame = environments_frame([unknown_id]).assign(family=["nosuch"], spec_json=[json.dumps(edited)])
    wh = resolve_warehouse(str(tmp_path / "wh"))
    commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", frame, DATE, "s1")]}, {})
    result = vhd("warehouse", "check", "--warehouse", wh.url)
    assert result.returncode == 1, result
    naming = [line for line in result.stdout.splitlines() if unknown_id in line]
    assert len(naming) == 1 and "which this vhd does not know" in naming[0], naming
