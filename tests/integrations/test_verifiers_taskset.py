"""The verifiers v1 tasksets, run by verifiers' own evaluation (`vf-eval`, verifiers 0.4 in its sidecar: it pins
mcp==2.0.0) against the local gemma-3-270m server: each rollout starts its own toolset (the environment's tools,
listed dynamically), and the trace records the reward (our score) and the metrics u, turns, errors. The endless
taskset draws the same environment from the same seed."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess

import pytest

from envs.catalog import select_specs
from envs.environment import Environment
from integrations.generate import spec_from_seed
from schemas.envspec import EnvSpec
from tests.evaluation.support import generated_warehouse
from tests.integrations.support import SIDECARS, run_in_sidecar, sidecar_python


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


def _sidecar_env() -> dict:
    bin_dir = str(SIDECARS / "verifiers" / "bin")
    # vhdplay is installed in the sidecar (make sidecars), as the README tells a user: no PYTHONPATH
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "VHD_LOCAL_KEY": "local"}


def _tool_calls(trace: dict) -> list[tuple[str, dict]]:
    calls = []
    for node in trace["nodes"]:
        message = node.get("message") or {}
        for call in message.get("tool_calls") or []:
            function = call.get("function") or call
            arguments = function.get("arguments")
            calls.append((function["name"], json.loads(arguments) if isinstance(arguments, str) else arguments or {}))
    return calls


def _vf_eval(tmp_path, local_llm, *argv: str) -> list[dict]:
    model, api_base = local_llm
    sidecar_python("verifiers")
    defaults = {"--env.agent.harness.id": "null", "--env.agent.runtime.type": "subprocess",
                "--model": model.removeprefix("openai/"), "--client.base-url": api_base,
                "--client.api-key-var": "VHD_LOCAL_KEY", "--env.agent.max-turns": "3", "--sampling.max-tokens": "48",
                "--sampling.temperature": "0"}
    options = [a for flag, value in defaults.items() if flag not in argv for a in (flag, value)]
    command = [str(SIDECARS / "verifiers" / "bin" / "vf-eval"), *argv, *options, "--no-push"]  # no upload
    completed = subprocess.run(command, cwd=tmp_path, env=_sidecar_env(), capture_output=True, text=True,
                               timeout=600)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    files = glob.glob(str(tmp_path / "outputs" / "*" / "traces.jsonl"))
    assert len(files) == 1, completed.stdout[-3000:]
    with open(files[0]) as handle:
        return [json.loads(line) for line in handle]


def _check_rollout(episode: dict, spec: EnvSpec) -> None:
    """One rollout: no error, our reward and metrics recorded, equal to replaying its tool calls on the
    Environment; the toolset served this environment's own tools."""
    data = episode["task"]["data"]
    assert data["env_id"] == spec.env_id
    (trace,) = episode["traces"]
    assert trace["errors"] == [], trace["errors"]
    env = Environment(spec, data["mode"])
    assert {t["name"] for t in trace["tools"]} == set(env.tool_names)
    for name, arguments in _tool_calls(trace):
        env.step(name, arguments)
    reward = trace["rewards"]["env_score"]
    assert reward["score"] == pytest.approx(env.score()) and 0.0 <= reward["score"] <= 1.0
    assert trace["metrics"] == pytest.approx({"u": env.utility(), "turns": float(env.turns),
                                              "errors": float(env.errors)})


def test_vf_eval_runs_catalog_tasks_against_the_local_model(warehouse, local_llm, tmp_path):
    specs = {s.env_id: s for s in select_specs("family IN ('knapsack', 'lp')", None, warehouse)}
    episodes = _vf_eval(tmp_path, local_llm, "vhdplay-catalog", "--env.taskset.warehouse", warehouse,
                        "--env.taskset.where", "family IN ('knapsack', 'lp')", "--env.taskset.mode", "revealed")
    assert len(episodes) == len(specs)
    for episode in episodes:
        _check_rollout(episode, specs[episode["task"]["data"]["env_id"]])


def test_vf_eval_runs_the_endless_taskset_from_seeds(local_llm, tmp_path):
    episodes = _vf_eval(tmp_path, local_llm, "vhdplay-endless", "--env.taskset.families", "knapsack,routing",
                        "--env.taskset.tier", "hard", "--env.taskset.start-seed", "40", "--select.limit", "2")
    assert sorted(e["task"]["data"]["seed"] for e in episodes) == [40, 41]
    for episode in episodes:
        data = episode["task"]["data"]
        spec = spec_from_seed(data["seed"], ["knapsack", "routing"], "hard")  # the same seed, the same environment
        assert EnvSpec.model_validate_json(data["spec_json"]).env_id == spec.env_id
        _check_rollout(episode, spec)


VIEWS = """
import json, sys
from integrations.vf.catalog import VhdCatalogConfig, VhdCatalogTaskset
from integrations.vf.endless import VhdEndlessConfig, VhdEndlessTaskset
p = json.load(sys.stdin)
catalog = VhdCatalogTaskset(VhdCatalogConfig(warehouse=p["warehouse"], where="family = 'knapsack'", mode="all"))
tasks = list(catalog)
medium = list(VhdCatalogTaskset(VhdCatalogConfig(warehouse=p["warehouse"], tier="medium", mode="hidden")))
# `difficulty`, the option's old name, still selects the same tier
old_name = list(VhdCatalogTaskset(VhdCatalogConfig(warehouse=p["warehouse"], difficulty="medium", mode="hidden")))
endless = VhdEndlessTaskset(VhdEndlessConfig(families="knapsack,lp", start_seed=7))
first = [t.data.env_id for t in endless.take(4)]
again = [t.data.env_id for t in endless.take(4)]
from pydantic import ValidationError
try:
    VhdCatalogConfig(warehouse=p["warehouse"], tier="impossible")
    refused = None
except ValidationError as error:
    refused = error.errors()[0]["msg"]
print(json.dumps({"keys": [t.key for t in tasks], "modes": [t.data.mode for t in tasks],
                  "medium": sorted(t.data.env_id for t in medium),
                  "old_name": sorted(t.data.env_id for t in old_name), "first": first, "again": again,
                  "seeds": [t.data.seed for t in endless.take(4)], "bounded": endless.bounded,
                  "refused": refused}))
"""


def test_taskset_selection_and_seeds_through_verifiers_views(warehouse):
    answer = run_in_sidecar("verifiers", VIEWS, {"warehouse": warehouse}, env=_sidecar_env())
    knapsacks = select_specs("family = 'knapsack'", None, warehouse)
    assert len(answer["keys"]) == len(set(answer["keys"])) == 3 * len(knapsacks)
    assert sorted(set(answer["modes"])) == ["hidden", "revealed", "written"]
    # the default plan's cells grant every probe: no skill gap, so no hard environment; medium ones are common
    mediums = sorted(s.env_id for s in select_specs("tier = 'medium'", None, warehouse))
    assert mediums and answer["medium"] == mediums and answer["old_name"] == mediums
    assert answer["first"] == answer["again"] and len(set(answer["first"])) == 4
    assert answer["first"] == [spec_from_seed(seed, ["knapsack", "lp"]).env_id for seed in range(7, 11)]
    assert answer["seeds"] == [7, 8, 9, 10] and answer["bounded"] is False
    assert "unknown tier 'impossible'" in answer["refused"] and "\n" not in answer["refused"]


def test_the_same_seed_gives_the_same_environment():
    first = [spec_from_seed(seed, "diagnostic", "medium") for seed in range(6)]
    again = [spec_from_seed(seed, "diagnostic", "medium") for seed in range(6)]
    assert [s.env_id for s in first] == [s.env_id for s in again]
    assert len({s.env_id for s in first}) == 6
    assert [s.family for s in first[:5]] == sorted(["inventory_dp", "knapsack", "lp", "qp", "routing"])
    for bad, needle in ((-1, "non-negative"), ("3", "non-negative")):
        with pytest.raises(ValueError, match=needle):
            spec_from_seed(bad)
    with pytest.raises(ValueError, match="unknown tier"):
        spec_from_seed(0, tier="legendary")


class OracleChatServer:
    """A scripted OpenAI-compatible chat endpoint standing in for a model that plays well: it answers each request
    with the oracle's next tool call for the episode its system prompt opens (the number of tool results so far
    picks the call), as JSON or as a server-sent event stream. It stands in for the model only; the taskset, its
    toolset, the environment and verifiers' evaluation all run for real."""

    def __init__(self, specs: list[EnvSpec], mode: str):
        import http.server
        import threading

        from envs.agents import oracle

        scripts = {}
        for spec in specs:
            env = Environment(spec, mode)
            scripts[env.instructions] = list(oracle(Environment(spec, mode)))
        outer = self
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # /v1/models
                self._send(200, "application/json", json.dumps({"data": [{"id": "oracle", "object": "model"}]}))

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests += 1
                messages = body["messages"]
                system = next(m["content"] for m in messages if m["role"] == "system")
                text = system if isinstance(system, str) else " ".join(p.get("text", "") for p in system)
                script = next(s for instructions, s in scripts.items() if instructions in text)
                done = sum(1 for m in messages if m["role"] == "tool")
                name, arguments = script[min(done, len(script) - 1)]
                call = {"index": 0, "id": f"call_{done}", "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)}}
                if body.get("stream"):
                    chunks = [{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "oracle",
                               "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]},
                                            "finish_reason": None}]},
                              {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "oracle",
                               "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}]
                    events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                    self._send(200, "text/event-stream", events)
                    return
                del call["index"]
                self._send(200, "application/json", json.dumps({
                    "id": "c", "object": "chat.completion", "created": 0, "model": "oracle",
                    "choices": [{"index": 0, "finish_reason": "tool_calls",
                                 "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}))

            def _send(self, status, kind, text):
                data = text.encode()
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.api_base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()


def test_a_model_that_plays_the_oracle_earns_reward_one_through_verifiers(warehouse, tmp_path):
    """The toolset's state reaches the trace: every call, turn and error the rollout made is scored."""
    specs = select_specs("family IN ('knapsack', 'routing')", None, warehouse)
    model = OracleChatServer(specs, "revealed")
    try:
        episodes = _vf_eval(tmp_path, ("oracle", model.api_base), "vhdplay-catalog", "--env.taskset.warehouse",
                            warehouse, "--env.taskset.where", "family IN ('knapsack', 'routing')",
                            "--env.taskset.mode", "revealed", "--env.agent.max-turns", "60")
    finally:
        model.close()
    assert model.requests > len(specs)
    by_id = {s.env_id: s for s in specs}
    for episode in episodes:
        spec = by_id[episode["task"]["data"]["env_id"]]
        _check_rollout(episode, spec)
        (trace,) = episode["traces"]
        assert trace["rewards"]["env_score"]["score"] == pytest.approx(1.0)
        assert trace["metrics"]["turns"] >= 2


@pytest.mark.parametrize("argv, needle", [
    (["vhdplay-catalog", "--env.taskset.where", "family ="], "--where does not parse as SQL"),
    (["vhdplay-catalog", "--env.taskset.mode", "blind"], "unknown mode 'blind'"),
    (["vhdplay-endless", "--env.taskset.tier", "legendary"], "unknown tier 'legendary'"),
    (["vhdplay-endless", "--env.taskset.families", "nosuch"], "nosuch"),
])
def test_vf_eval_refuses_bad_taskset_options_before_any_rollout(tmp_path, argv, needle):
    command = [str(SIDECARS / "verifiers" / "bin" / "vf-eval"), *argv, "--env.agent.harness.id", "null",
               "--model", "none", "--client.base-url", "http://127.0.0.1:9/v1"]
    completed = subprocess.run(command, cwd=tmp_path, env=_sidecar_env(), capture_output=True, text=True,
                               timeout=300)
    output = " ".join((completed.stdout + completed.stderr).replace("│", " ").split())  # verifiers boxes its error
    assert completed.returncode != 0 and needle in output, output[-2000:]
    assert "Traceback" not in output and not (tmp_path / "outputs").exists()


SAMPLE = """
import json, sys
from integrations.vf.catalog import VhdCatalogConfig, VhdCatalogTaskset
p = json.load(sys.stdin)
def tasks(**options):
    config = VhdCatalogConfig(warehouse=p["warehouse"], where="family IN ('knapsack', 'lp')", **options)
    return [[t.data.env_id, t.data.family, t.data.sample_seed, t.data.seed] for t in VhdCatalogTaskset(config)]
print(json.dumps({"draws": {seed: tasks(limit=2, seed=seed) for seed in range(4)}, "again": tasks(limit=2, seed=1),
                  "default": tasks(limit=2), "every": tasks()}))
"""


def test_catalog_taskset_limit_is_a_seeded_sample_of_every_family(warehouse):
    """limit 2 over knapsack and lp: one of each (the first two by env_id are both knapsacks), the same for one
    seed, another for another seed, the seed in each task's data (the generator's `seed` stays None)."""
    answer = run_in_sidecar("verifiers", SAMPLE, {"warehouse": warehouse}, env=_sidecar_env())
    pair = "family IN ('knapsack', 'lp')"
    assert {s.family for s in select_specs(pair, None, warehouse)[:2]} == {"knapsack"}
    for seed, tasks in answer["draws"].items():
        assert {family for _, family, _, _ in tasks} == {"knapsack", "lp"}
        assert [env_id for env_id, *_ in tasks] == [s.env_id for s in select_specs(pair, 2, warehouse, int(seed))]
        assert {(sample_seed, seed_) for *_, sample_seed, seed_ in tasks} == {(int(seed), None)}
    assert answer["again"] == answer["draws"]["1"] and answer["default"] == answer["draws"]["0"]
    assert len({tuple(env_id for env_id, *_ in tasks) for tasks in answer["draws"].values()}) > 1
    assert len(answer["every"]) == len(select_specs(pair, None, warehouse))
    assert {sample_seed for *_, sample_seed, _ in answer["every"]} == {None}


@pytest.mark.parametrize("where, needle", [
    ("no_such_column = 1", "does not run on the catalog"),
    ("family = 'nothing'", "no environment matches"),
    (None, "no warehouse at"),
])
def test_vf_eval_refuses_a_where_the_catalog_cannot_run_before_any_rollout(warehouse, tmp_path, where, needle):
    location = str(tmp_path / "no_warehouse") if where is None else warehouse
    command = [str(SIDECARS / "verifiers" / "bin" / "vf-eval"), "vhdplay-catalog", "--env.taskset.warehouse", location,
               *(["--env.taskset.where", where] if where else []), "--env.agent.harness.id", "null", "--model",
               "none", "--client.base-url", "http://127.0.0.1:9/v1"]
    completed = subprocess.run(command, cwd=tmp_path, env=_sidecar_env(), capture_output=True, text=True,
                               timeout=300)
    output = " ".join((completed.stdout + completed.stderr).replace("│", " ").split())
    assert completed.returncode != 0 and needle in output, output[-2000:]
    assert "Traceback" not in output and not (tmp_path / "outputs").exists()


SERVED = """
import asyncio, json, sys
from verifiers.v1.configs.client import EvalClientConfig
from verifiers.v1.serve.client import EnvClient
from verifiers.v1.serve.server import EnvServer
from verifiers.v1.types import SamplingConfig
from verifiers.v1.utils.loaders import resolve_env_config
from envs.catalog import load_spec
from integrations.vf.catalog import VhdCatalogTaskset
from integrations.vf.common import VhdTaskConfig, task_of
from schemas.envspec import EnvSpec

p = json.load(sys.stdin)
config = resolve_env_config({
    "taskset": {"id": "vhdplay-catalog", "warehouse": p["warehouse"], "where": p["where"], "mode": "revealed"},
    "agent": {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}, "max_turns": 60}})
inside = [task.data.model_dump(mode="json") for task in VhdCatalogTaskset(config.taskset)]
def sent(spec_json):   # a task as a client with a wider taskset (or a forged one) sends it: its dumped data
    spec = EnvSpec.model_validate_json(spec_json)
    return task_of(spec, "revealed", VhdTaskConfig()).data.model_dump(mode="json")
outside = sent(load_spec(p["outside"], p["warehouse"]).model_dump_json())
unknown = sent(p["unknown_spec"])
forged = {**inside[0], "spec_json": outside["spec_json"]}   # an inside id over an outside environment

async def main():
    server = EnvServer(config=config, address="tcp://127.0.0.1:0")
    serving = asyncio.create_task(server.run())
    client = EnvClient(server.address)
    await client.wait_for_server_startup()
    model = EvalClientConfig(base_url=p["api_base"], api_key_var="VHD_LOCAL_KEY")
    answers = {}
    for name, data in [("outside", outside), ("unknown", unknown), ("forged", forged),
                       *((f"inside{k}", d) for k, d in enumerate(inside))]:
        episode = (await client.run(model, "oracle", SamplingConfig(max_tokens=512), data)).model_dump(mode="json")
        (trace,) = episode["traces"]
        errors = [e["message"] for e in episode["errors"] + trace["errors"]]
        answers[name] = {"errors": errors, "score": (trace["rewards"].get("env_score") or {}).get("score")}
    await client.close()
    serving.cancel()
    return answers

print(json.dumps(asyncio.run(main())))
"""


def test_a_served_catalog_taskset_refuses_a_task_outside_its_where(warehouse):
    """verifiers' env server (what `vf-eval` and prime-rl ship tasks to) rebuilds each task from the data its client
    sends. A task of an environment outside the taskset's where is refused in setup with the very error of an
    environment the catalog does not hold, before any model call; an inside task still plays to its reward."""
    where = "family = 'knapsack'"
    inside = select_specs(where, None, warehouse)
    outside = select_specs(f"NOT ({where})", None, warehouse)[0]
    unknown = spec_from_seed(10_000, ["knapsack"])
    assert unknown.env_id not in {s.env_id for s in select_specs("true", None, warehouse)}
    model = OracleChatServer(inside, "revealed")
    try:
        answer = run_in_sidecar("verifiers", SERVED, {
            "warehouse": warehouse, "where": where, "outside": outside.env_id, "api_base": model.api_base,
            "unknown_spec": unknown.model_dump_json()}, env=_sidecar_env(), timeout=600)
    finally:
        model.close()

    def refusal(case: str) -> str:
        (message,) = answer[case]["errors"]  # the setup's refusal alone: no model call, no score
        assert answer[case]["score"] is None and "\n" not in message
        return re.sub(r"'[A-Za-z0-9_.-]+'", "'<id>'", message)

    assert "unknown environment id '<id>'; list ids with" in refusal("unknown")
    assert refusal("outside") == refusal("unknown") == refusal("forged")
    assert outside.env_id in answer["outside"]["errors"][0] and unknown.env_id in answer["unknown"]["errors"][0]
    for k in range(len(inside)):
        assert answer[f"inside{k}"]["errors"] == [] and answer[f"inside{k}"]["score"] == pytest.approx(1.0)


HOSTILE_REPLAY = """
import json, sys
from integrations.vf.common import replay, task_of, VhdTaskConfig
from schemas.envspec import EnvSpec
p = json.load(sys.stdin)
task = task_of(EnvSpec.model_validate_json(p["spec_json"]), "hidden", VhdTaskConfig())
deep = 1
for _ in range(100_000):
    deep = [deep]
calls = [{"tool": p["tool"], "arguments": {p["argument"]: [10 ** 5000]}},
         {"tool": p["tool"], "arguments": {p["argument"]: deep}},
         {"tool": p["tool"], "arguments": {p["argument"]: 1}}]
env = replay(task.data, calls)
print(json.dumps({"turns": env.turns, "errors": env.errors, "score": env.score(),
                  "results": [step["result"] for step in env.trajectory]}))
"""


def test_the_rewards_replay_passes_hostile_calls_through_the_guard():
    """verifiers' reward replays the rollout's recorded calls (integrations.vf.common.replay): a call whose
    arguments hold a 5,000-digit integer inside a list, or nest 100,000 deep, is the environment's error there as
    in the toolset (schemas.payload's guard), not an exception that loses the rollout's reward."""
    from tests.support import make_spec

    spec = make_spec("inventory_dp", 3)
    order = next(t for t in spec.rendering.tools if t.operation == "place_order")
    answer = run_in_sidecar("verifiers", HOSTILE_REPLAY, {
        "spec_json": spec.model_dump_json(), "tool": order.name,
        "argument": next(iter(order.parameters["properties"]))}, env=_sidecar_env())
    assert (answer["turns"], answer["errors"]) == (3, 2)
    assert "must be an integer" in answer["results"][0]["error"]
    assert "more than 64 deep" in answer["results"][1]["error"] and "error" not in answer["results"][2]
