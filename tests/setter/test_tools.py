"""One tool builder for every setter: the template and the litellm setter bind an operation to the same schema."""

from __future__ import annotations

import numpy as np
import pytest

import mechanisms
from schemas.envspec import ArgSpec, OperationSpec
from setter.corpus import choose_passage
from setter.llm import RenderingDraft, ToolDraft, assemble
from setter.phrasebook import vocabulary
from setter.template import render
from setter.tools import SPENDS, argument_schema, bind_tool

FAMILIES = [m.id for m in mechanisms.families()]


@pytest.mark.parametrize("family", FAMILIES)
def test_both_setters_build_the_same_tool_for_the_same_operation(family):
    """A draft that names each tool as the template does, with the phrase file's description and argument names,
    assembles into exactly the template's tools: argument schema, bounds, argument map, description, binding."""
    m = mechanisms.get(family)
    params = m.sample(np.random.default_rng([3, 0]), m.default_size, m.default_horizon)
    passage = choose_passage(family, "same-schema", 1)
    template = render(m, params, passage, 40)
    draft = RenderingDraft.model_construct(
        title=template.title, intro="You run the place for the season, one decision at a time.",
        goal="Do as well as you can.", entities=template.entities,
        tools={t.operation: ToolDraft.model_construct(name=t.name, description=t.description.removesuffix(SPENDS),
                                                      argument_names={})
               for t in template.tools})
    assembled = assemble(m, params, passage, draft, 40)
    assert [t.model_dump() for t in assembled.tools] == [t.model_dump() for t in template.tools]


def test_a_renamed_argument_keeps_its_schema_and_maps_back():
    m = mechanisms.get("knapsack")
    params = m.sample(np.random.default_rng([3, 0]), m.default_size, m.default_horizon)
    op = next(op for op in m.operations(params) if op.name == "select_item")
    words = vocabulary(choose_passage("knapsack", "renamed", 1).vocab)
    plain = bind_tool("knapsack", op, "pick", "Pick one.", words, {})
    renamed = bind_tool("knapsack", op, "pick", "Pick one.", words, {}, {"item": "which"})
    (plain_name, schema), = plain.parameters["properties"].items()
    assert renamed.parameters["properties"] == {"which": schema} and renamed.argument_map == {"which": "item"}
    assert schema == argument_schema(op.args["item"], schema["description"])
    assert schema["minimum"] == 1 and schema["maximum"] == params.items and schema["type"] == "integer"
    assert renamed.description == plain.description == "Pick one." + SPENDS


def test_arguments_that_would_share_a_name_are_refused():
    op = OperationSpec(name="move", kind="decision", summary="move",
                       args={"source": ArgSpec(type="integer", description="from", minimum=1, maximum=3),
                             "target": ArgSpec(type="integer", description="to", minimum=1, maximum=3)})
    with pytest.raises(ValueError, match="invalid or repeated argument names"):
        bind_tool("knapsack", op, "move", "Move.", {}, {}, {"source": "spot", "target": "spot"})
    with pytest.raises(ValueError, match="invalid or repeated argument names"):
        bind_tool("knapsack", op, "move", "Move.", {}, {}, {"source": "Not An Identifier"})


def test_an_array_argument_bounds_its_entries():
    arg = ArgSpec(type="array", items="number", description="amounts", minimum=0.0, maximum=2.5, max_items=4)
    assert argument_schema(arg) == {"type": "array", "description": "amounts", "minItems": 1, "maxItems": 4,
                                    "items": {"type": "number", "minimum": 0.0, "maximum": 2.5}}
