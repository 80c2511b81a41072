"""Helpers shared by tests: real specs built through the real stages."""

from __future__ import annotations

from envs.conformance import sample_spec as make_spec  # noqa: F401 - one environment as the render stage builds it
