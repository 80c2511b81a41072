"""Hostile values: stored text printed exactly (never read as markup), strict JSON out, overflowing numbers refused.

Titles and stories come from an LLM, so a value may hold Rich markup (`[/x]`, `[bold red]`), emoji codes or a
terminal's escape sequences; a number may be 1e308 or NaN. Every test runs the real `vhd` command over a real
warehouse (landed and committed through warehouse.landing, no Prefect needed).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import mechanisms
from cli.solving import solve_report
from envs.calculator import CalculatorError, evaluate
from envs.environment import Environment
from mechanisms.base import ParamsError
from schemas.strict_json import dumps, finite
from tests.cli.test_cli import assert_one_line_error, vhd
from tests.support import make_spec
from tests.warehouse.test_landing import DATE, environments_frame
from warehouse.landing import commit_run, land
from warehouse.location import resolve_warehouse

HOSTILE = "[bold red]ALERT[/bold red] x [/x] [link=http://evil]y[/link] :smile: \\[z]"
ESCAPE = "\x1b[31mred\x1b[0m"


def _strict(text: str):
    """json.loads that refuses what strict parsers refuse (Infinity, NaN)."""
    def refuse(name):
        raise AssertionError(f"invalid JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def _hostile_spec():
    spec = make_spec("inventory_dp", 0)
    rendering = spec.rendering.model_copy(update={
        "title": HOSTILE, "instructions": {**spec.rendering.instructions, "hidden": f"Story: {HOSTILE} {ESCAPE}"}})
    return spec.model_copy(update={"rendering": rendering})


def land_specs(location: str, specs, titles: list[str] | None = None) -> str:
    """A committed warehouse at `location` holding these real specs (no Prefect needed); its URL."""
    wh = resolve_warehouse(location)
    frame = environments_frame([spec.env_id for spec in specs])
    frame["family"] = [spec.family for spec in specs]
    frame["title"] = titles or [spec.rendering.title for spec in specs]
    frame["spec_json"] = [spec.canonical_json() for spec in specs]
    commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", frame, DATE, "s1")]}, {})
    return wh.url


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """A warehouse with one real environment whose title and story are hostile."""
    spec = _hostile_spec()
    return land_specs(str(tmp_path_factory.mktemp("hostile") / "wh"), [spec], [HOSTILE]), spec.env_id


# --- values printed literally ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["[/x]", HOSTILE, "[bold]", "a [red]b[/] c", ":thumbs_up:", "[/]"])
@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_query_values_print_exactly_as_stored(warehouse, value, fmt):
    url, _ = warehouse
    quoted = value.replace("'", "''")
    result = vhd("query", f"SELECT '{quoted}' AS a, 1 AS \"[/col]\"", "--format", fmt, "--warehouse", url)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    if fmt == "json":
        assert _strict(result.stdout) == [{"a": value, "[/col]": 1}]
    else:
        assert value in result.stdout and "[/col]" in result.stdout


def test_query_of_duckdb_settings_prints_in_the_table_format(warehouse):
    url, _ = warehouse
    result = vhd("query", "SELECT name, value, description FROM duckdb_settings()", "--warehouse", url)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "temp_directory" in result.stdout


def test_table_shows_control_characters_instead_of_sending_them(warehouse):
    url, _ = warehouse
    result = vhd("query", "SELECT title || chr(27) || '[2J' AS t FROM environments", "--warehouse", url)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and HOSTILE + "\\x1b[2J" in result.stdout
    csv_out = vhd("query", "SELECT chr(27) || '[2J' AS t", "--format", "csv", "--warehouse", url, check=True)
    assert csv_out.stdout == "t\n\x1b[2J\n"  # csv is the data as stored


def test_show_prints_title_and_story_exactly(warehouse):
    url, env_id = warehouse
    result = vhd("show", env_id, "--warehouse", url)
    assert result.returncode == 0, result.stderr
    assert HOSTILE in result.stdout  # the title line and the story
    assert result.stdout.count(HOSTILE) == 2
    assert "\\x1b[31mred\\x1b[0m" in result.stdout and "\x1b" not in result.stdout


def test_human_play_prints_instructions_and_observations_exactly(warehouse):
    url, env_id = warehouse
    result = vhd("play", env_id, "--agent", "human", "--mode", "hidden", "--warehouse", url,
                 input='calculator {"expression": "[/x]"}\nno_such_tool_[/x] {}\nquit\n', timeout=120)
    assert result.returncode == 0, result.stderr
    assert HOSTILE in result.stdout
    assert "cannot parse expression '[/x]'" in result.stdout and "unknown tool 'no_such_tool_[/x]'" in result.stdout


# --- strict JSON out ---------------------------------------------------------------------------------------------

def test_query_json_writes_non_finite_numbers_as_null(warehouse):
    url, _ = warehouse
    result = vhd("query", "SELECT 'inf'::DOUBLE AS a, '-inf'::DOUBLE AS b, 'nan'::DOUBLE AS c, 1.5::DOUBLE AS d, "
                          "['inf'::DOUBLE, 2.0] AS e, {'x': 'nan'::DOUBLE} AS f", "--format", "json",
                 "--warehouse", url)
    assert result.returncode == 0, result.stderr
    assert "Infinity" not in result.stdout and "NaN" not in result.stdout
    assert _strict(result.stdout) == [{"a": None, "b": None, "c": None, "d": 1.5, "e": [None, 2.0],
                                       "f": {"x": None}}]


def test_play_json_is_strict(warehouse):
    url, env_id = warehouse
    result = vhd("play", env_id, "--agent", "random", "--format", "json", "--warehouse", url)
    assert result.returncode == 0, result.stderr
    assert _strict(result.stdout)["env_id"] == env_id


def test_strict_dumps_converts_every_non_finite_number():
    value = {"a": math.inf, "b": [math.nan, 1.0, (-math.inf,)], "c": np.float64("nan"), "d": np.array([1.0, np.inf]),
             "e": np.int64(3), "f": "NaN", "g": 10**30}
    text = dumps(value)
    assert _strict(text) == {"a": None, "b": [None, 1.0, [None]], "c": None, "d": [1.0, None], "e": 3, "f": "NaN",
                             "g": 10**30}
    assert finite(math.inf) is None and finite(2.5) == 2.5
    assert dumps({"x": object()}, default=lambda _: math.nan) == '{"x": null}'


@pytest.mark.parametrize("expression", ["1e308 * 10", "1e308 * 10 - 1e308 * 10", "1e400", "-(9.0 ** 64) ** 64"])
def test_the_calculator_refuses_non_finite_results(expression):
    with pytest.raises(CalculatorError, match="the result is not a finite number \\(overflow\\)$"):
        evaluate(expression)


def test_calculator_observations_are_strict_json():
    env = Environment(make_spec("inventory_dp", 1), "hidden")
    calculator = next(t.name for t in env.tool_specs() if t.operation == "calculator")
    observation = env.call(calculator, {"expression": "1e308 * 10"})
    assert "not a finite number" in _strict(observation)["error"]
    assert _strict(env.call(calculator, {"expression": "2 ** 10"})) == {"result": 1024.0}


# --- vhd solve: overflowing numbers refused with one line ---------------------------------------------------------

def _knapsack_file(tmp_path, value, raw=None):
    data = json.loads(vhd("solve", "knapsack", "--example", check=True).stdout)
    data["values"] = [value] * len(data["values"])
    text = json.dumps(data) if raw is None else json.dumps(data).replace(json.dumps(value), raw, 1)
    path = tmp_path / "params.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("value", "raw", "needle"), [
    (1e308, None, "values[0] in"),
    (1e13, None, "is 1e+13; numbers in parameters must be at most 1e+12"),
    (-1e300, None, "at most 1e+12 in magnitude"),
    (1.0, "Infinity", "Infinity is not a number that JSON allows"),
    (1.0, "NaN", "NaN is not a number that JSON allows"),
    (1.0, "9" * 400, "an integer of over 300 digits"),
    (1.0, "9" * 5000, "holds a number too long to read"),
    (1.0, "[" * 100_000 + "]" * 100_000, "nests lists or objects too deeply"),
])
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_solve_refuses_overflowing_numbers_with_one_line(tmp_path, value, raw, needle, fmt):
    result = vhd("solve", "knapsack", "--params", _knapsack_file(tmp_path, value, raw), "--format", fmt)
    assert_one_line_error(result, needle)
    assert result.stdout == "" and "inf" not in result.stdout


def test_solve_refuses_a_non_finite_reference():
    mechanism = mechanisms.get("knapsack")
    data = mechanism.sample(np.random.default_rng(0), mechanism.default_size,
                            mechanism.default_horizon).model_dump(mode="json")
    data["values"] = [1e308] * len(data["values"])
    with np.errstate(over="ignore"), pytest.raises(ParamsError, match=r"^the instance's u\* is inf"):
        solve_report(mechanism, mechanism.params_from_data(data))


def test_solve_still_answers_large_but_safe_numbers(tmp_path):
    result = vhd("solve", "knapsack", "--params", _knapsack_file(tmp_path, 1e12), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert math.isfinite(_strict(result.stdout)["u_star"])


def test_eval_prints_a_where_condition_exactly(prefect_server, warehouse):
    url, _ = warehouse
    result = vhd("eval", "--agent", "oracle", "--where", "title = '[/x] nothing'", "--warehouse", url)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "no environment matched --where \"title = '[/x] nothing'\"" in result.stdout


def test_an_environment_landed_before_its_family_changed_refuses_to_play_with_one_line(tmp_path):
    spec = make_spec("knapsack", 0)
    old = spec.model_copy(update={"version": mechanisms.get("knapsack").version - 1})
    url = land_specs(str(tmp_path / "wh"), [old])
    result = vhd("play", old.env_id, "--agent", "oracle", "--warehouse", url)
    assert_one_line_error(result, f"generated for version {old.version}", "generate it again")


# --- numeric options: finite and bounded (cli.main.Bound) ----------------------------------------------------------

@pytest.mark.parametrize(("argv", "needle"), [
    (["query", "SELECT 1", "--timeout", "inf"], "--timeout inf is above the maximum of 86,400 seconds (one day); "
                                                "leave --timeout out for no limit"),
    (["query", "SELECT 1", "--timeout", "1e400"], "--timeout inf is above the maximum of 86,400 seconds"),
    (["query", "SELECT 1", "--timeout", "1e20"], "--timeout 1e+20 is above the maximum of 86,400 seconds"),
    (["query", "SELECT 1", "--timeout", "nan"], "--timeout must be a number, got nan"),
    (["query", "SELECT 1", "--timeout=-inf"], "--timeout must be a positive number of seconds, got -inf"),
    (["serve-envs", "--session-ttl", "1e400"], "--session-ttl inf is above the maximum of 86,400 seconds"),
    (["serve-envs", "--session-ttl", "nan"], "--session-ttl must be a number, got nan"),
    (["generate", "--max-cost-usd", "inf"], "--max-cost-usd inf is above the maximum of 1,000,000 USD"),
    (["generate", "--max-cost-usd", "nan"], "--max-cost-usd must be a number, got nan"),
    (["warehouse", "clean", "--min-age-hours", "inf"], "--min-age-hours inf is above the maximum of 87,600 hours"),
    (["export", "--out", "x.jsonl", "--limit", "9" * 4000], "--limit 999999... (an integer of 4000 digits) is above"),
], ids=lambda value: value if isinstance(value, str) else " ".join(value[:4])[:40])
def test_non_finite_and_huge_numbers_are_refused_with_one_line(warehouse, tmp_path, argv, needle):
    """Issue 31 (9): `--timeout inf` (1e400, 1e20) was an OverflowError in a thread and exit code 0; `--session-ttl
    1e400` meant never; `--limit 10**30` a DuckDB conversion error that did not name --limit."""
    url, _ = warehouse
    result = vhd(*argv, "--warehouse", url, cwd=tmp_path, timeout=60,
                 env={"VHD_PREFECT_START_TIMEOUT": "1", "PREFECT_API_URL": "http://127.0.0.1:9/api"})
    assert_one_line_error(result, needle)
    assert result.returncode == 2 and result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_every_numeric_option_of_every_command_has_a_bound():
    """A numeric option added without a Bound would take inf, nan or 10**30 again: each one declares its range, and
    its bounds are accepted while one past them is refused."""
    from cli.main import COMMANDS, build_parser

    parser = build_parser()
    checked = 0
    for name in COMMANDS:
        command = parser.commands[name]
        bounds = getattr(command, "bounds", {})
        for action in command._actions:
            if action.type in (int, float):
                assert action.dest in bounds, f"vhd {name} {action.option_strings[0]} has no Bound"
                flag, bound = bounds[action.dest]
                assert flag == action.option_strings[0]
                for inside in (bound.low if not bound.low_open else bound.low + 1, bound.high):
                    assert bound.refusal(flag, action.type(inside)) is None, (name, flag, inside)
                assert flag in bound.refusal(flag, action.type(bound.high) + 1)
                assert flag in bound.refusal(flag, action.type(bound.low) - 1)
                if action.type is float:
                    for wild in (math.inf, -math.inf, math.nan):
                        assert flag in bound.refusal(flag, wild)
                checked += 1
    assert checked >= 24
