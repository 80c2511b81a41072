"""infra/docker-compose.yml is checked, not run (no Docker here): the compose-spec JSON schema (vendored by
check-jsonschema) and the cross-references the schema cannot see."""

from __future__ import annotations

import copy
import re
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

INFRA = Path(__file__).resolve().parents[2] / "infra"
COMPOSE = yaml.safe_load((INFRA / "docker-compose.yml").read_text())
VARIABLE = re.compile(r"\$\{([A-Z0-9_]+)(?::?([-?])[^}]*)?\}")


def compose_schema() -> dict:
    import json

    text = resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json").read_text()
    return json.loads(text)


def schema_errors(document: dict) -> list[str]:
    validator = jsonschema.validators.validator_for(compose_schema())(compose_schema())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def _named_volume(entry) -> str | None:
    source = entry.get("source") if isinstance(entry, dict) else str(entry).split(":", 1)[0]
    return source if source and not source.startswith((".", "/", "~", "$")) else None


def reference_errors(document: dict, env_example: str) -> list[str]:
    """depends_on targets, named volumes, network_mode services, build files, pinned images, loopback ports and
    variables that are neither defaulted nor in .env.example."""
    services, errors = document["services"], []
    declared = set(document.get("volumes") or {})
    for name, service in services.items():
        for target, condition in (service.get("depends_on") or {}).items():
            if target not in services:
                errors.append(f"{name}: depends_on unknown service {target!r}")
            elif condition.get("condition") == "service_completed_successfully" and services[target].get("restart"):
                errors.append(f"{name}: waits for {target!r} to complete, but {target!r} restarts")
        for volume in service.get("volumes") or []:
            named = _named_volume(volume)
            if named and named not in declared:
                errors.append(f"{name}: volume {named!r} is not declared under volumes")
        mode = service.get("network_mode", "")
        if mode.startswith("service:") and mode.split(":", 1)[1] not in services:
            errors.append(f"{name}: network_mode names unknown service {mode.split(':', 1)[1]!r}")
        if "build" in service:
            build = service["build"]
            context = (INFRA / build["context"]).resolve()
            if not (context / build.get("dockerfile", "Dockerfile")).is_file():
                errors.append(f"{name}: build file {build.get('dockerfile')} not found under {context}")
        image = service.get("image", "")
        if not image or ":" not in image or image.endswith(":latest"):
            errors.append(f"{name}: image {image!r} is not pinned to a tag")
        for port in service.get("ports") or []:
            if not str(port).startswith("127.0.0.1:"):
                errors.append(f"{name}: port {port!r} is published beyond 127.0.0.1")
    used_volumes = {_named_volume(v) for s in services.values() for v in s.get("volumes") or []}
    errors += [f"volume {v!r} is declared but no service uses it" for v in sorted(declared - used_volumes)]
    known = {line.split("=", 1)[0] for line in env_example.splitlines() if "=" in line and not line.startswith("#")}
    text = yaml.safe_dump(document)
    for variable, kind in VARIABLE.findall(text):
        if kind != "-" and variable not in known:
            errors.append(f"variable {variable} has no default and is not in infra/.env.example")
    return errors


ENV_EXAMPLE = (INFRA / ".env.example").read_text()


def test_the_compose_file_is_valid_against_the_compose_spec():
    assert schema_errors(COMPOSE) == []


def test_the_compose_file_references_are_consistent():
    assert reference_errors(COMPOSE, ENV_EXAMPLE) == []


def test_the_stack_has_the_production_services():
    services = COMPOSE["services"]
    assert {"postgres", "prefect-server", "worker", "minio"} <= set(services)
    server_db = services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert server_db.startswith("postgresql+asyncpg://") and "@postgres:" in server_db
    worker = services["worker"]
    assert worker["environment"]["PREFECT_API_URL"] == "http://prefect-server:4200/api"
    assert worker["environment"]["VHD_WAREHOUSE"].startswith("s3://")
    assert worker["environment"]["VHD_S3_ENDPOINT_URL"] == "http://minio:9000"
    command = worker["command"][-1]
    pool = yaml.safe_load((INFRA / "prefect.yaml").read_text())["deployments"][0]["work_pool"]["name"]
    assert f"prefect worker start --pool {pool} --type process" in command
    assert "--prefect-file infra/prefect.yaml" in command
    assert services["llm"]["profiles"] == ["llm"]  # optional


@pytest.mark.parametrize(("break_it", "expected"), [
    (lambda d: d["services"]["worker"]["depends_on"].update({"nosuch": {"condition": "service_started"}}),
     "depends_on unknown service 'nosuch'"),
    (lambda d: d["services"]["minio"]["volumes"].append("ghost:/ghost"), "volume 'ghost' is not declared"),
    (lambda d: d["services"]["postgres"].update({"image": "postgres"}), "is not pinned"),
    (lambda d: d["services"]["minio"]["ports"].append("9002:9002"), "published beyond 127.0.0.1"),
    (lambda d: d["services"]["worker"]["environment"].update({"X": "${UNDECLARED_SECRET}"}), "UNDECLARED_SECRET"),
])
def test_the_reference_check_catches_a_broken_file(break_it, expected):
    broken = copy.deepcopy(COMPOSE)
    break_it(broken)
    assert any(expected in error for error in reference_errors(broken, ENV_EXAMPLE))


def test_the_schema_check_catches_an_unknown_key_and_a_wrong_type():
    broken = copy.deepcopy(COMPOSE)
    broken["services"]["worker"]["imagee"] = "typo"
    broken["services"]["postgres"]["ports"] = "5432"
    errors = schema_errors(broken)
    assert any("imagee" in e for e in errors) and any("ports" in e for e in errors), errors
