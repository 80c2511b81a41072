"""Admission rejects what it must, with a precise reason."""

from __future__ import annotations

from envs.admission import admit, hidden_leaks
from tests.support import make_spec


def _spec():
    return make_spec("inventory_dp", 1)


def test_a_template_rendering_is_admitted():
    verdict = admit(_spec())
    assert verdict.admitted, verdict.reason
    assert verdict.checks["C3"] == "ok" and verdict.checks["hidden"]["oracle"] == 1.0


def test_too_few_tools_are_rejected():
    spec = _spec()
    spec.rendering.tools = spec.rendering.tools[:9]
    verdict = admit(spec)
    assert not verdict.admitted and verdict.check == "structure" and "at least 10" in verdict.reason


def test_duplicate_tool_names_are_rejected():
    spec = _spec()
    spec.rendering.tools[1].name = spec.rendering.tools[0].name
    assert "duplicate tool name" in admit(spec).reason


def test_a_tool_bound_to_an_unknown_operation_is_rejected():
    spec = _spec()
    spec.rendering.tools[0].operation = "os.system"
    assert "unknown operation 'os.system'" in admit(spec).reason


def test_a_leaked_demand_value_in_hidden_mode_is_rejected():
    spec = _spec()
    secret = spec.params["demand"][0] + 1000  # a value nothing else in the text could produce
    spec.params["demand"][0] = secret
    spec.rendering.instructions["hidden"] += f" Demand in the first period is {secret}."
    assert str(secret) in hidden_leaks(spec)
    verdict = admit(spec)
    assert not verdict.admitted


def test_a_wrong_reference_fails_c3():
    spec = _spec()
    spec.reference.u_star += 5.0
    verdict = admit(spec)
    assert not verdict.admitted and verdict.check in {"C3", "C2"}
