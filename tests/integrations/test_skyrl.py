"""SkyRL: skyrl-gym's own registry and `make` build our environment from a row of `vhd export --format skyrl`
(skyrl-gym 0.4 in its sidecar: its omegaconf needs antlr4 4.9, constraints.txt pins 4.13.2); the oracle's
calls, written as the model's text replies, end the episode with the score as the final reward."""

from __future__ import annotations

import json

import pytest

from envs.agents import oracle, play
from envs.catalog import select_specs
from envs.environment import Environment
from integrations.rows import trainer_rows
from tests.evaluation.support import generated_warehouse
from tests.integrations.support import run_in_sidecar

EPISODES = """
import json, sys
import skyrl_gym
from integrations.skyrl import register
p = json.load(sys.stdin)
register()
out = []
for row, actions in zip(p["rows"], p["actions"]):
    env = skyrl_gym.make(row["env_class"], env_config=None, extras=row)
    prompt, meta = env.init(row["prompt"])
    steps = [env.step("I think I should start somewhere.")]   # no call: an error observation, one turn
    for name, arguments in actions:
        reply = "Next: <tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"
        steps.append(env.step(reply))
        if steps[-1]["done"]:
            break
    out.append({"tools": [t["function"]["name"] for t in meta["tools"]], "first": steps[0]["observations"][0],
                "rewards": [s["reward"] for s in steps], "done": [s["done"] for s in steps],
                "metrics": env.get_metrics()})
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def specs(prefect_server):
    return select_specs("family IN ('knapsack', 'routing', 'inventory_dp', 'lp')", None, generated_warehouse())


@pytest.mark.parametrize("mode", ["revealed", "hidden"])
def test_skyrl_gym_plays_an_exported_row_to_the_oracle_score(specs, mode):
    rows = trainer_rows(specs, "skyrl", [mode])
    actions = [list(oracle(Environment(spec, mode))) for spec in specs]
    answers = run_in_sidecar("skyrl", EPISODES, {"rows": rows, "actions": actions})
    for spec, answer in zip(specs, answers, strict=True):
        expected = play(Environment(spec, mode), "oracle")
        assert sorted(answer["tools"]) == sorted(Environment(spec, mode).tool_names)
        assert answer["first"]["role"] == "user" and "no tool call" in answer["first"]["content"]
        assert answer["done"][-1] and not any(answer["done"][:-1])
        assert answer["rewards"][-1] == pytest.approx(expected.score) == pytest.approx(1.0)
        assert all(r == 0.0 for r in answer["rewards"][:-1])
        assert answer["metrics"]["errors"] == 1 and answer["metrics"]["turns"] == len(answer["rewards"])


GENERATOR_PATH = """
import json, sys
import skyrl_gym
from integrations.skyrl import register
p = json.load(sys.stdin)
register()
out = []
for row in p["rows"]:
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    extras["max_turns"] = p["max_turns"]      # what SkyRLGymGenerator.agent_loop sets from generator.max_turns
    try:
        env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
    except ValueError as refused:
        out.append({"refused": str(refused)})
        continue
    chat_history, _ = env.init([dict(m) for m in row["prompt"]])
    out.append({"chat": chat_history, "max_turns": env.max_turns})
print(json.dumps(out))
"""


def test_skyrls_generator_path_shows_the_model_every_tool_and_refuses_a_shorter_turn_limit(specs):
    for fmt in ("skyrl", "trl"):  # a skyrl row carries the tools in its prompt; init adds them to a trl row's
        rows = [{**row, "env_class": "vhdplay"} for row in trainer_rows(specs, fmt, ["hidden"])]
        most = max(spec.turn_budget for spec in specs)
        answers = run_in_sidecar("skyrl", GENERATOR_PATH, {"rows": rows, "max_turns": most})
        for spec, answer in zip(specs, answers, strict=True):
            system = answer["chat"][0]
            assert system["role"] == "system" and system["content"].startswith(Environment(spec, "hidden").instructions)
            for name in Environment(spec, "hidden").tool_names:
                assert f'"name": "{name}"' in system["content"], (fmt, name)
            assert '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>' in system["content"]
            assert system["content"].count("# Tools") == 1 and answer["max_turns"] == spec.turn_budget
    short = min(spec.turn_budget for spec in specs) - 1
    answers = run_in_sidecar("skyrl", GENERATOR_PATH, {"rows": trainer_rows(specs, "skyrl", ["hidden"]),
                                                       "max_turns": short})
    for spec, answer in zip(specs, answers, strict=True):
        message = answer["refused"]
        assert f"max_turns={short}" in message and f"turn budget {spec.turn_budget}" in message
        assert "\n" not in message


HOSTILE_REPLIES = """
import json, sys
import skyrl_gym
from integrations.skyrl import register
p = json.load(sys.stdin)
register()
env = skyrl_gym.make("vhdplay", env_config=None, extras=p["row"])
env.init(p["row"]["prompt"])
out = []
for reply in p["replies"]:
    step = env.step(reply)
    out.append({"observation": json.loads(step["observations"][0]["content"]), "done": step["done"]})
print(json.dumps({"steps": out, "metrics": env.get_metrics()}))
"""


def test_hostile_model_replies_are_the_environments_errors_and_the_step_goes_on():
    """Replies a model may write, read through schemas.payload's guard in SkyRL's own step: arguments as a string
    nested 100,000 deep, 5,000-digit integers (at the top and inside a list), a reply over 1 MiB; each an error
    observation that spends a turn (no RecursionError, no "Exceeds the limit (4300 digits)"), then a good call."""
    from tests.support import make_spec

    spec = make_spec("inventory_dp", 3)
    order = next(t for t in spec.rendering.tools if t.operation == "place_order")
    argument = next(iter(order.parameters["properties"]))
    digits = "9" * 5000

    def call(arguments: str) -> str:
        return f'<tool_call>{{"name": "{order.name}", "arguments": {arguments}}}</tool_call>'

    replies = [call(json.dumps("[" * 100_000)), call(f'{{"{argument}": {digits}}}'),
               call(f'{{"{argument}": [{digits}]}}'), call(json.dumps(f'{{"{argument}": {digits}}}')),
               "<tool_call>" + " " * (1 << 20) + "</tool_call>", call('{"' + argument + '": 1}')]
    (row,) = trainer_rows([spec], "skyrl", ["hidden"])
    answer = run_in_sidecar("skyrl", HOSTILE_REPLIES, {"row": {**row, "env_class": "vhdplay"}, "replies": replies})
    errors = [step["observation"].get("error", "") for step in answer["steps"]]
    assert "arguments nest lists or objects too deeply" in errors[0]
    assert "an integer of 1,000 or more digits" in errors[1] and "an integer of 1,000 or more digits" in errors[3]
    assert "must be an integer" in errors[2]
    assert "over the limit of 1,048,576" in errors[4]
    assert errors[5] == "" and not any(step["done"] for step in answer["steps"])
    assert answer["metrics"]["turns"] == 6 and answer["metrics"]["errors"] == 5
