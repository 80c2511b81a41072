"""SkyRL: skyrl-gym's own registry and `make` build our environment from a row of `vhd export --format skyrl`
(skyrl-gym 0.4 in its sidecar: its omegaconf needs antlr4 4.9, constraints.txt pins 4.13.2); the oracle's
calls, written as the model's text replies, end the episode with the score as the final reward."""

from __future__ import annotations

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
