"""The TRL environment class: TRL's own tool-schema extraction (its method discovery rule, then `trl.data_utils.
apply_chat_template` with TRL's bundled Qwen3 chat template, which reads each method through transformers'
get_json_schema) accepts every generated class, and its methods play the oracle's episode to the same score as the
Environment. TRL is installed without torch (trl --no-deps, transformers, datasets): what runs here needs no torch."""

from __future__ import annotations

import inspect
import json
from importlib import resources

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from transformers import PreTrainedTokenizerFast
from trl.chat_template_utils import supports_tool_calling
from trl.data_utils import apply_chat_template

import mechanisms
from envs.agents import oracle, play
from envs.catalog import select_specs
from envs.environment import Environment
from integrations.rows import prompt_messages, trainer_rows
from integrations.trl import env_score, environment_class, environment_factories, grpo_arguments
from schemas.envspec import MODES, EnvSpec
from tests.evaluation.support import generated_warehouse


@pytest.fixture(scope="module")
def specs(prefect_server):
    return select_specs("true", None, generated_warehouse())


@pytest.fixture(scope="module")
def tokenizer():
    """A tokenizer carrying TRL's own Qwen3 chat template (the template is what renders the tools)."""
    model = Tokenizer(WordLevel({"[UNK]": 0, "<|im_end|>": 1}, unk_token="[UNK]"))
    model.pre_tokenizer = Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=model, unk_token="[UNK]", eos_token="<|im_end|>")
    tokenizer.chat_template = resources.files("trl").joinpath("chat_templates/qwen3.jinja").read_text()
    assert supports_tool_calling(tokenizer)
    return tokenizer


def trl_tools(instance) -> tuple[bool, bool, list]:
    """GRPOTrainer.__init__'s probe of an environment_factory instance (trl 1.16, grpo_trainer.py): the class's
    functions, `reset` and `get_reward` apart, every other public one a tool."""
    has_reset = has_reward = False
    methods = []
    for member_name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction):
        if member_name == "reset":
            has_reset = True
        elif member_name == "get_reward":
            has_reward = True
        elif not member_name.startswith("_"):
            methods.append(getattr(instance, member_name))
    return has_reset, has_reward, methods


def _rendered_tools(text: str) -> list[dict]:
    block = text.split("<tools>\n", 1)[1].split("</tools>", 1)[0]  # the first "<tools>" is in the preamble
    return [json.loads(line) for line in block.strip().splitlines()]


@pytest.mark.parametrize("mode", MODES)
def test_trl_extracts_every_generated_class_and_its_tools_play_to_the_same_score(specs, tokenizer, mode):
    assert len({s.family for s in specs}) == len(mechanisms.families())  # every registered family
    for spec in specs:
        env = Environment(spec, mode)
        instance = environment_class(env)()
        has_reset, has_reward, methods = trl_tools(instance)
        assert has_reset and has_reward
        rendered = apply_chat_template({"prompt": prompt_messages(env)}, tokenizer, tools=methods)["prompt"]
        schemas = {t["function"]["name"]: t["function"] for t in _rendered_tools(rendered)}
        tools = {t["function"]["name"]: t["function"] for t in env.tools()}
        assert set(schemas) == set(tools), spec.env_id
        for name, schema in schemas.items():
            properties = tools[name]["parameters"].get("properties", {})
            assert set(schema["parameters"].get("properties", {})) == set(properties)
            assert set(schema["parameters"].get("required", [])) == set(tools[name]["parameters"].get("required", []))
            for arg, declared in properties.items():
                assert schema["parameters"]["properties"][arg]["type"] == declared["type"], (name, arg)
            assert schema["description"] == " ".join(tools[name]["description"].split())
        # TRL calls a tool as sync_tool_dict[name](**arguments), the name being the function's __name__
        by_name = {method.__name__: method for method in methods}
        instance.reset(**trainer_rows([spec], "trl", [mode])[0])
        for name, arguments in oracle(Environment(spec, mode)):
            observation = by_name[name](**arguments)
            assert isinstance(observation, str) and "error" not in json.loads(observation), (name, observation)
            if instance.done:
                break
        expected = play(Environment(spec, mode), "oracle")
        assert instance.get_reward() == pytest.approx(expected.score) == pytest.approx(1.0)
        assert instance.env.utility() == pytest.approx(expected.u)


def test_each_rollout_gets_its_own_state_and_reset_starts_over(specs):
    spec = next(s for s in specs if s.family == "knapsack")
    factories = environment_factories(trainer_rows([spec, *specs[:3]], "trl", ["hidden"]))
    row = trainer_rows([spec], "trl", ["hidden"])[0]
    first, second = factories[row["environment"]](), factories[row["environment"]]()
    first.reset(**row), second.reset(**row)
    actions = list(oracle(Environment(spec, "hidden")))
    for name, arguments in actions:
        getattr(first, name)(**arguments)
    assert env_score([first, second]) == [pytest.approx(1.0), 0.0]
    assert second.env.turns == 0
    first.reset(**row)
    assert first.env.turns == 0 and env_score([first]) == [0.0]


def trl_reward_functions(environment_factory: dict, reward_funcs: list) -> list[str]:
    """GRPOTrainer.__init__'s reward sources (trl 1.16, grpo_trainer.py): the reward functions passed, then one per
    distinct environment class that defines `get_reward`; their names are the logged reward columns."""
    names, reward_types = [f.__name__ for f in reward_funcs], []
    for factory in environment_factory.values():
        instance = factory()
        has_reset, has_reward, _ = trl_tools(instance)
        assert has_reset
        if has_reward and type(instance) not in reward_types:
            reward_types.append(type(instance))
            names.append(type(instance).__name__)
    return names


def test_a_dataset_of_three_families_gives_trl_one_reward_and_each_row_its_own_tools(specs, tokenizer):
    chosen = [s for s in specs if s.family in ("knapsack", "lp", "routing")]
    assert len({s.family for s in chosen}) == 3
    rows = trainer_rows(chosen, "trl", MODES)
    arguments = grpo_arguments(rows)
    assert trl_reward_functions(arguments["environment_factory"], arguments["reward_funcs"]) == ["env_score"]
    pool = {name: factory() for name, factory in arguments["environment_factory"].items()}
    for row in rows:
        env = Environment(EnvSpec.model_validate_json(row["spec_json"]), row["mode"])
        instance = pool[row["environment"]]  # what TRL draws for the row's `environment`
        _, _, methods = trl_tools(instance)
        # the per-example tool schema TRL renders, and the row's own `tools` column through the same template
        for tools in (methods, json.loads(row["tools"])):
            rendered = apply_chat_template({"prompt": row["prompt"]}, tokenizer, tools=tools)["prompt"]
            assert {t["function"]["name"] for t in _rendered_tools(rendered)} == set(env.tool_names)
        instance.reset(**{k: v for k, v in row.items() if k != "environment"})
        by_name = {method.__name__: method for method in methods}
        for name, call in oracle(Environment(env.spec, row["mode"])):
            by_name[name](**call)
            if instance.done:
                break
        assert env_score([instance]) == [pytest.approx(play(env, "oracle").score)] == [pytest.approx(1.0)]


def test_a_row_of_another_environment_is_refused_in_one_line(specs):
    a, b = specs[0], specs[1]
    instance = environment_class(Environment(a, "hidden"))()
    with pytest.raises(ValueError) as refused:
        instance.reset(**trainer_rows([b], "trl", ["hidden"])[0])
    assert "environment_factories" in str(refused.value) and "\n" not in str(refused.value)


def test_hostile_tool_arguments_are_the_environments_errors_not_exceptions():
    """TRL calls a tool method with what its parser made of the model's reply and reports an exception in its own
    words, without a turn: through schemas.payload's guard, a huge integer at any depth, a value JSON has no type
    for or nesting too deep is the environment's own error answer, a turn spent."""
    from tests.support import make_spec

    spec = make_spec("inventory_dp", 3)
    instance = environment_class(Environment(spec, "hidden"))()
    instance.reset()
    order = next(t for t in spec.rendering.tools if t.operation == "place_order")
    method = next(m for m, tool in instance._tool_names.items() if tool == order.name)
    parameter = next(iter(instance._arg_names[method]))
    deep = 1
    for _ in range(100_000):
        deep = [deep]
    hostile = [[10 ** 5000], {"k": -(10 ** 5000)}, 10 ** 5000, b"bytes", deep]
    errors = [json.loads(getattr(instance, method)(**{parameter: value}))["error"] for value in hostile]
    assert instance.env.turns == len(hostile) and instance.env.errors == len(hostile)
    assert "must be an integer, got [1000" in errors[0] and "an integer of 1,000 or more digits" in errors[2]
    assert "type bytes" in errors[3] and "nest more than 64 deep" in errors[4]
    assert all("\n" not in error and len(error) < 500 for error in errors), errors
