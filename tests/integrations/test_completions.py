"""`score_completion(env_row, messages)` and `vhd score`: a finished chat's tool calls, replayed against its
environment, earn what the episode earned when it was played (the oracle's 1.0, a random agent's score with its
errors), in OpenAI's tool_calls form and in the <tool_call> text form; hostile calls are per-call errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from envs.agents import play
from envs.catalog import select_specs
from envs.environment import Environment
from integrations.completions import parse_action, score_completion
from integrations.rows import trainer_rows, write_trainer_rows
from schemas.envspec import MODES
from tests.evaluation.support import generated_warehouse
from tests.integrations.support import ROOT
from tests.support import make_spec

FAMILIES = ("knapsack", "inventory_dp", "routing", "lp", "scheduling")


def _native(trajectory: list[dict]) -> list[dict]:
    """A chat as an OpenAI-compatible server records it: each call an assistant message with tool_calls (arguments
    as a JSON string), each observation a tool message."""
    messages = [{"role": "system", "content": "instructions"}, {"role": "user", "content": "Begin."}]
    for k, step in enumerate(trajectory):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{k}", "type": "function",
             "function": {"name": step["tool"], "arguments": json.dumps(step["arguments"])}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{k}", "content": json.dumps(step["result"])})
    return messages


def _text(trajectory: list[dict]) -> list[dict]:
    """The same chat in the text form of the rows' prompts (SkyRL, chat-template-only trainers)."""
    messages = [{"role": "system", "content": "instructions"}, {"role": "user", "content": "Begin."}]
    for step in trajectory:
        call = json.dumps({"name": step["tool"], "arguments": step["arguments"]})
        messages.append({"role": "assistant", "content": f"I will call a tool.\n<tool_call>\n{call}\n</tool_call>"})
        messages.append({"role": "user", "content": json.dumps(step["result"])})
    return messages


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("family", FAMILIES)
def test_the_oracles_transcript_scores_one(family, mode):
    spec = make_spec(family, 0)
    played = play(Environment(spec, mode), "oracle")
    assert played.score == pytest.approx(1.0)
    for fmt, build in (("trl", _native), ("skyrl", _text)):
        (row,) = trainer_rows([spec], fmt, [mode])
        result = score_completion(row, build(played.trajectory))
        assert (result.env_id, result.mode) == (spec.env_id, mode)
        assert result.score == pytest.approx(1.0) and result.u == pytest.approx(played.u)
        assert (result.turns, result.calls, result.done, result.errors) == (played.turns, played.turns, True, [])


@pytest.mark.parametrize("family", FAMILIES)
def test_a_random_agents_transcript_scores_what_it_earned(family):
    spec = make_spec(family, 1)
    failures = 0
    for seed in range(6):
        mode = MODES[seed % len(MODES)]
        played = play(Environment(spec, mode), "random", seed=seed)
        expected_errors = [(k, step["tool"], step["result"]["error"]) for k, step in enumerate(played.trajectory)
                           if "error" in step["result"]]
        assert len(expected_errors) == played.errors
        for build in (_native, _text):
            result = score_completion(spec, build(played.trajectory), mode)
            assert result.score == pytest.approx(played.score) and result.u == pytest.approx(played.u)
            assert result.turns == played.turns and result.calls == len(played.trajectory)
            assert [(e["call"], e["tool"], e["error"]) for e in result.errors] == expected_errors
            assert all(e["message"] == 2 + 2 * e["call"] for e in result.errors)  # the assistant message's index
        failures += played.errors
    assert failures > 0  # the random agent's mistakes were replayed, not only its good calls


def test_hostile_calls_are_per_call_errors_that_spend_turns():
    spec = make_spec("knapsack", 0)
    env = Environment(spec, "revealed")
    tool = next(t for t in env.tool_specs() if t.kind == "probe")
    argument = next(iter(tool.parameters["properties"]))
    huge = f'{{"{argument}": 1{"0" * 5000}}}'  # an integer of 5,001 digits
    deep = f'{{"{argument}": {"[" * 990}{"]" * 990}}}'  # reads as JSON, nests far too deep to show
    calls = [
        {"name": tool.name, "arguments": huge},
        {"name": tool.name, "arguments": deep},
        {"name": tool.name, "arguments": "[" * 100_000},  # nesting too deep to read
        {"name": tool.name, "arguments": "not json"},
        {"name": tool.name, "arguments": [1, 2]},
        {"name": tool.name, "arguments": {argument: 10 ** 5000}},  # an object's huge integer
        {"name": None, "arguments": "{}"},
    ]
    text_calls = (f'<tool_call>{{"name": "{tool.name}", "arguments": {huge}}}</tool_call>'
                  f'<tool_call>{"[" * 100_000}</tool_call><tool_call>nope</tool_call>')
    messages = [{"role": "assistant", "tool_calls": [{"function": call} for call in calls]},
                {"role": "assistant", "tool_calls": ["not a call"]},
                {"role": "assistant", "content": text_calls},
                {"role": "assistant", "content": "Thinking it over; no call in this message."}]
    result = score_completion(spec, messages, "revealed")
    assert spec.turn_budget > 11 and result.calls == result.turns == 11 and not result.done
    assert [e["call"] for e in result.errors] == list(range(11))
    texts = [e["error"] for e in result.errors]
    assert "too deeply" in texts[1] and "too deeply" in texts[2] and "not valid JSON" in texts[3]
    assert "must be a JSON object" in texts[4] and "names no tool" in texts[6] and "not {" in texts[7]
    assert all("\n" not in text and len(text) < 500 for text in texts)


def test_parse_action_reads_the_call_format_and_refuses_the_rest():
    assert parse_action('<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>') == ("a", {"x": 1})
    assert parse_action('```json\n{"tool": "a", "arguments": "{\\"x\\": 2}"}\n```') == ("a", {"x": 2})
    digits = "1" + "0" * 5000
    for text in (f'{{"name": "a", "arguments": {{"x": {digits}}}}}',
                 f'{{"name": "a", "arguments": "{{\\"x\\": {digits}}}"}}'):
        name, arguments = parse_action(text)  # an integer of any length is read, for the environment to refuse
        assert name == "a" and arguments["x"] > 10 ** 900
    too_deep = "[" * 100_000
    for text in ("hello", '{"name": 3}', '["a", {}]', too_deep, f"<tool_call>{too_deep}</tool_call>", None, 7,
                 '<tool_call>{"name": "a"}' + " " * (1 << 20) + "</tool_call>"):  # over schemas.payload's size
        assert parse_action(text) is None
    # a call naming a tool whose arguments do not read as an object: handed on, for the environment's own error
    for arguments in (too_deep, "not json", "[1, 2]"):
        assert parse_action(json.dumps({"name": "a", "arguments": arguments})) == ("a", arguments)
    assert parse_action('<tool_call> {"name": "a"} </tool_call> <tool_call>{"name": "b"}</tool_call>') == ("a", {})
    assert parse_action("<tool_call>" * 3 + '{"name": "a"}</tool_call>') is None  # the first tag's block is no call


@pytest.mark.parametrize("env_row, messages, needle", [
    ("not a row", [], "env_row must be a row of vhd export"),
    ({"mode": "hidden"}, [], "holds no spec_json and mode"),
    ({"mode": "hidden", "spec_json": "{}"}, [], "not a vhdplay environment spec"),
    (None, {"role": "assistant"}, "messages must be a list"),
    (None, ["text"], "message 0 is a str"),
])
def test_a_malformed_row_or_chat_is_one_line(env_row, messages, needle):
    env_row = make_spec("lp", 0) if env_row is None else env_row
    with pytest.raises(ValueError, match=needle) as raised:
        score_completion(env_row, messages)
    assert "\n" not in str(raised.value)


def test_a_rows_mode_is_its_own():
    spec = make_spec("lp", 0)
    (row,) = trainer_rows([spec], "trl", ["hidden"])
    with pytest.raises(ValueError, match="is the hidden mode of"):
        score_completion(row, [], "written")
    assert score_completion(row, []).score == Environment(spec, "hidden").score()  # no call: the idle score


# --- vhd score ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


def vhd(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=os.environ.copy())


def test_vhd_score_scores_a_transcript_from_the_warehouse_and_from_a_row_file(warehouse, tmp_path):
    specs = select_specs("family IN ('knapsack', 'routing')", None, warehouse)
    spec = specs[0]
    oracle_chat = tmp_path / "oracle.json"
    played = play(Environment(spec, "revealed"), "oracle")
    oracle_chat.write_text(json.dumps({"messages": _native(played.trajectory)}))
    completed = vhd("score", str(oracle_chat), "--env-id", spec.env_id, "--mode", "revealed", "--warehouse", warehouse)
    assert completed.returncode == 0, completed.stderr
    answer = json.loads(completed.stdout)
    assert (answer["env_id"], answer["mode"], answer["score"], answer["errors"]) == (spec.env_id, "revealed", 1.0, [])
    assert answer["u"] == pytest.approx(played.u) and answer["turns"] == played.turns

    random_played = play(Environment(spec, "hidden"), "random", seed=4)
    random_chat = tmp_path / "random.json"
    random_chat.write_text(json.dumps(_text(random_played.trajectory)))
    rows = tmp_path / "rows.jsonl"
    write_trainer_rows(trainer_rows(specs, "skyrl", MODES), rows, "skyrl")
    completed = vhd("score", str(random_chat), "--row", str(rows), "--env-id", spec.env_id, "--mode", "hidden")
    assert completed.returncode == 0, completed.stderr
    answer = json.loads(completed.stdout)
    assert answer["score"] == pytest.approx(random_played.score) and answer["u"] == pytest.approx(random_played.u)
    assert len(answer["errors"]) == random_played.errors and answer["turns"] == random_played.turns
    one_row = tmp_path / "row.json"
    one_row.write_text(json.dumps(trainer_rows([spec], "trl", ["hidden"])[0]))
    again = vhd("score", str(random_chat), "--row", str(one_row))
    assert again.returncode == 0 and json.loads(again.stdout) == answer


def test_vhd_score_bad_input_gets_one_line(warehouse, tmp_path):
    spec = select_specs("true", None, warehouse)[0]
    chat = tmp_path / "chat.json"
    chat.write_text("[]")
    not_json = tmp_path / "bad.json"
    not_json.write_text("[{")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    rows = tmp_path / "rows.jsonl"
    write_trainer_rows(trainer_rows([spec], "trl", MODES), rows, "trl")
    cases = [
        ([str(tmp_path / "missing.json"), "--env-id", spec.env_id], "no transcript at"),
        ([str(not_json), "--env-id", spec.env_id], "is not JSON"),
        ([str(deep), "--env-id", spec.env_id], "too deeply"),
        ([str(chat)], "--env-id ID (from the warehouse) or --row FILE"),
        ([str(chat), "--env-id", "knapsack-doesnotexist"], "unknown environment id 'knapsack-doesnotexist'"),
        ([str(chat), "--row", str(rows)], "3 rows of"),
        ([str(chat), "--row", str(rows), "--env-id", "nope"], "no row of"),
        ([str(chat), "--row", str(tmp_path / "none.jsonl")], "no row file at"),
        ([str(chat), "--row", str(not_json)], "is not JSON"),
    ]
    for argv, needle in cases:
        completed = vhd("score", *argv, "--warehouse", warehouse)
        lines = [line for line in completed.stderr.splitlines() if line.strip()]
        assert completed.returncode == 2 and len(lines) == 1 and needle in lines[0], (argv, completed.stderr)


def test_tool_calls_given_as_objects_pass_the_guard_not_crash():
    """A chat handed over as Python objects (a reward function's completions): arguments holding a huge integer
    at any depth, a key or value JSON has no type for, nesting 100,000 deep, are each the environment's error."""
    spec = make_spec("inventory_dp", 3)
    order = next(t for t in spec.rendering.tools if t.operation == "place_order")
    argument = next(iter(order.parameters["properties"]))
    deep = 1
    for _ in range(100_000):
        deep = [deep]
    hostile = [{argument: [10 ** 5000]}, {argument: {"k": 10 ** 5000}}, {10 ** 5000: 1}, {argument: b"x"},
               {argument: deep}, (1, 2)]
    messages = [{"role": "assistant", "tool_calls": [{"function": {"name": order.name, "arguments": arguments}}
                                                     for arguments in hostile]}]
    result = score_completion(spec, messages, "hidden")
    assert result.turns == result.calls == len(hostile) and [e["call"] for e in result.errors] == [0, 1, 2, 3, 4, 5]
    texts = [e["error"] for e in result.errors]
    assert "must be an integer, got [1000" in texts[0] and "key of type int" in texts[2]
    assert "type bytes" in texts[3] and "more than 64 deep" in texts[4] and "must be a JSON object" in texts[5]
    assert all("\n" not in text and len(text) < 500 for text in texts), texts


def test_a_reply_whose_arguments_do_not_read_is_the_environments_error():
    """A <tool_call> naming a tool whose arguments string is nested 100,000 deep, or not JSON, is the environment's
    own error (a turn), as through serve-envs or MCP, not "no call"."""
    spec = make_spec("inventory_dp", 3)
    calls = [json.dumps({"name": "turns_left", "arguments": text}) for text in ("[" * 100_000, "not json")]
    messages = [{"role": "assistant", "content": f"<tool_call>{call}</tool_call>"} for call in calls]
    result = score_completion(spec, messages, "hidden")
    assert result.turns == 2
    assert "too deeply" in result.errors[0]["error"] and "not valid JSON" in result.errors[1]["error"]
