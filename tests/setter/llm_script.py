"""A scripted stand-in for the paid model API: litellm's own mock_response, one scripted answer per call.

Each script item is the text the model answers, or an exception litellm raises for that call (a rate
limit, a timeout). Everything else (litellm's response objects, usage, price map) is the real thing.
"""

from __future__ import annotations

import json

import numpy as np

import mechanisms
from setter.spec import turn_budget
from setter.template import TemplateSetter


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


def good_draft(m, params, outcome, budget, **changes) -> dict:
    """What a competent model writes: a name and description per operation, no numbers."""
    rendering, _ = TemplateSetter().render(m, params, outcome, "k", 1, budget)
    tools = {t.operation: {"name": f"llm_{t.name}"[:40], "description": t.description[:150]}
             for t in rendering.tools}
    draft = {"title": "A model's title", "intro": "You run the stockroom for the cooperative this season.",
             "goal": "Make as much profit as you can.", "entities": [e.model_dump() for e in rendering.entities],
             "tools": tools}
    draft.update(changes)
    return draft


def text(draft: dict) -> str:
    return json.dumps(draft)
