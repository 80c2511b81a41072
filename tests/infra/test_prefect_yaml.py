"""infra/prefect.yaml against the code it deploys: the entrypoint, its parameters, the schedule and the limit."""

from __future__ import annotations

import importlib
from pathlib import Path
from zoneinfo import ZoneInfo

import jsonschema
import yaml
from prefect.schedules import Cron
from prefect.utilities.callables import parameter_schema

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "infra" / "prefect.yaml").read_text())


def _flow(entrypoint: str):
    path, name = entrypoint.split(":")
    assert (ROOT / path).is_file(), path
    return getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), name)


def test_every_deployment_points_at_a_flow_and_its_parameters_fit_the_signature():
    for deployment in CONFIG["deployments"]:
        flow = _flow(deployment["entrypoint"])
        schema = parameter_schema(flow.fn).model_dump_for_openapi()
        assert set(deployment["parameters"]) <= set(schema["properties"]), deployment["name"]
        jsonschema.validate(deployment["parameters"], schema)


def test_the_nightly_schedule_is_valid_and_its_date_zone_matches():
    (nightly,) = [d for d in CONFIG["deployments"] if d["name"] == "nightly"]
    (schedule,) = nightly["schedules"]
    Cron(schedule["cron"], timezone=schedule["timezone"])  # raises on a bad cron or zone
    ZoneInfo(schedule["timezone"])
    assert nightly["parameters"]["timezone"] == schedule["timezone"]  # the night is taken in the schedule's zone
    assert nightly["concurrency_limit"] == {"limit": 1, "collision_strategy": "ENQUEUE"}
    assert nightly["work_pool"]["name"] == "vhd-process"


def test_the_automations_beside_it_watch_the_flow_the_nightly_deployment_runs():
    automations = yaml.safe_load((ROOT / "infra" / "automations.yaml").read_text())["automations"]
    (nightly,) = [d for d in CONFIG["deployments"] if d["name"] == "nightly"]
    flow_name = _flow(nightly["entrypoint"]).name
    assert "infra/automations.yaml" in (ROOT / "infra" / "prefect.yaml").read_text()  # it says where they are
    assert {a["name"] for a in automations} == {"vhd-nightly-failed", "vhd-nightly-overdue"}
    for automation in automations:
        assert automation["trigger"]["match_related"] == {"prefect.resource.role": "flow",
                                                          "prefect.resource.name": flow_name}
        assert [action["type"] for action in automation["actions"]] == ["send-notification"]
