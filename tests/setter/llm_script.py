"""A scripted stand-in for the paid model API: litellm's own mock_response, one scripted answer per call.

Each script item is the text the model answers, a function of the request that returns that text (a model
answers in the setting each prompt gives it), or an exception litellm raises for that call (a rate limit, a
timeout). Everything else (litellm's response objects, usage, price map) is the real thing.
"""

from __future__ import annotations

import json

import numpy as np

import mechanisms
from setter.corpus import Passage, choose_passage, passages_for
from setter.spec import turn_budget
from setter.template import render


class ScriptedModel:
    def __init__(self, monkeypatch, script, provider_cost: float | None = None):
        import litellm

        self.script = list(script)
        self.requests: list[dict] = []
        self.provider_cost = provider_cost
        original = litellm.completion

        def completion(**kwargs):
            self.requests.append(kwargs)
            item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
            item = item(kwargs) if callable(item) else item
            response = original(**{**kwargs, "mock_response": item})
            if self.provider_cost is not None:
                response.usage.cost = self.provider_cost
            return response

        monkeypatch.setattr(litellm, "completion", completion)


def instance(family: str = "inventory_dp", index: int = 0):
    m = mechanisms.get(family)
    params = m.sample(np.random.default_rng([5, index]), m.default_size, m.default_horizon)
    outcome = m.outcome(params)
    return m, params, outcome, turn_budget(m, params, outcome)


def good_draft(m, params, outcome, budget, passage: Passage | None = None, **changes) -> dict:
    """What a competent model writes in the passage's setting (by default instance key "key"'s): a name and
    description per operation, no numbers."""
    rendering = render(m, params, passage or choose_passage(m.id, "key"), budget)
    tools = {t.operation: {"name": f"llm_{t.name}"[:40], "description": t.description[:150]}
             for t in rendering.tools}
    draft = {"title": "A model's title", "intro": "You run the stockroom for the cooperative this season.",
             "goal": "Make as much profit as you can.", "entities": [e.model_dump() for e in rendering.entities],
             "tools": tools}
    draft.update(changes)
    return draft


def text(draft: dict) -> str:
    return json.dumps(draft)


def prompt_passage(family: str, request: dict) -> Passage:
    """The corpus passage whose setting the setter's prompt gives the model."""
    prompt = request["messages"][1]["content"]
    return next(p for p in passages_for(family) if f"use:\n{p.text}\nVocabulary" in prompt)


def answer(change=lambda draft: draft, family: str = "inventory_dp"):
    """A model that answers every request with the good draft in that request's setting, changed by `change`
    (a draft -> draft, or draft -> text for an answer that is not JSON)."""
    m, params, outcome, budget = instance(family)

    def reply(request: dict) -> str:
        changed = change(good_draft(m, params, outcome, budget, prompt_passage(family, request)))
        return changed if isinstance(changed, str) else text(changed)

    return reply
