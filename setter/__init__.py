"""Setters render a solved model as tools: a deterministic template setter and a litellm setter."""

from __future__ import annotations

SETTERS = ("template", "litellm")


def make_setter(name: str, model: str | None = None):
    """The setter of that name (litellm needs a model)."""
    if name == "template":
        from setter.template import TemplateSetter

        return TemplateSetter()
    if name == "litellm":
        if not model:
            raise ValueError("the litellm setter needs --model, e.g. --model openai/gpt-4o-mini")
        from setter.llm import LitellmSetter

        return LitellmSetter(model)
    raise ValueError(f"unknown setter {name!r}; choose one of {', '.join(SETTERS)}")
