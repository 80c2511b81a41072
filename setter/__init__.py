"""Setters render a solved model as tools: a deterministic template setter and a litellm setter."""

from __future__ import annotations

import os

from schemas.errors import UserError

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must never fetch its price map at import

SETTERS = ("template", "litellm")
DEFAULT_SETTER = SETTERS[0]  # deterministic, free, offline


def make_setter(name: str, model: str | None = None, fallback_model: str | None = None):
    """The setter of that name (litellm needs a model; the fallback model is optional)."""
    if name == "template":
        if model:  # the template setter asks no model: rows must not claim one
            raise UserError("--model needs --setter litellm")
        if fallback_model:
            raise UserError("--fallback-model needs --setter litellm")
        from setter.template import TemplateSetter

        return TemplateSetter()
    if name == "litellm":
        if not model:
            raise UserError("the litellm setter needs --model, e.g. --model openai/gpt-4o-mini")
        from setter.llm import LitellmSetter

        return LitellmSetter(model, fallback_model)
    raise UserError(f"unknown setter {name!r}; choose one of {', '.join(SETTERS)}")
