"""The command line offers what the registries hold: every choice and default comes from its owner."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import evaluation.episodes
import evaluation.llm_agent
import schemas.shard
import setter
from cli.main import COMMANDS, EVAL_REPORT, HUMAN, build_parser
from cli.output import DOCUMENT_FORMATS, FORMATS
from envs.agents import AGENTS
from envs.export import EXPORT_FORMATS
from integrations.rows import TRAINER_FORMATS
from schemas.envspec import DEFAULT_MODE, MODES
from schemas.tiers import TIERS
from setter.local_server import DEFAULT_N_CTX
from warehouse.reports import REPORTS


def _options(command: str) -> dict[str, object]:
    """The built command's actions by option string (or positional name)."""
    sub = next(a for a in build_parser(command)._actions if a.dest == "command")
    parser = sub.choices[command]
    return {(action.option_strings or [action.dest])[-1]: action for action in parser._actions}


def test_choices_and_defaults_come_from_their_owners():
    generate = _options("generate")
    assert tuple(generate["--plan"].choices) == tuple(schemas.shard.PLANS)
    assert generate["--tier"].choices == TIERS
    assert generate["--setter"].choices == setter.SETTERS and generate["--setter"].default == setter.DEFAULT_SETTER
    assert generate["--runner"].choices == schemas.shard.RUNNERS
    assert generate["--split"].default == schemas.shard.DEFAULT_SPLIT
    assert generate["--shard-size"].default == schemas.shard.DEFAULT_SHARD_SIZE
    assert _options("serve")["--count"].default == schemas.shard.DEFAULT_COUNT
    assert _options("doctor")["--runner"].choices == schemas.shard.RUNNERS
    play = _options("play")
    assert play["--mode"].choices == MODES and play["--mode"].default == DEFAULT_MODE
    assert tuple(play["--agent"].choices) == (*AGENTS, HUMAN)
    ev = _options("eval")
    assert ev["--agent"].choices == evaluation.episodes.AGENT_CHOICES
    assert ev["--agent"].default == evaluation.episodes.LITELLM
    assert ev["--tool-calls"].choices == evaluation.llm_agent.TOOL_CALL_FORMATS
    assert ev["--max-tokens"].default == evaluation.llm_agent.AgentConfig.max_tokens
    assert _options("serve-mcp")["--mode"].choices == MODES
    assert tuple(_options("export")["--format"].choices) == (*EXPORT_FORMATS, *TRAINER_FORMATS)
    assert tuple(_options("report")["kind"].choices) == (*REPORTS, EVAL_REPORT)
    assert _options("llm")["--n-ctx"].default == DEFAULT_N_CTX
    for command in ("query", "report", "eval"):
        assert _options(command)["--format"].choices == FORMATS
    for command in ("families", "solve", "show", "play", "doctor"):
        assert _options(command)["--format"].choices == DOCUMENT_FORMATS


def test_generate_takes_tier_and_still_the_old_difficulty_flag(capsys):
    """--tier is the flag (the environments' tier column); --difficulty, its old name, still works for old nightly
    scripts, with a note, hidden from the help; both at once are refused."""
    def parse(*argv):
        return build_parser("generate").parse_args(["generate", *argv])

    assert parse("--tier", "hard").tier == "hard" and parse().tier is None
    assert capsys.readouterr().err == ""
    assert parse("--difficulty", "frontier").tier == "frontier"
    assert capsys.readouterr().err.strip() == ("note: --difficulty is now --tier (same values); --difficulty still "
                                               "works but is deprecated")
    sub = next(a for a in build_parser("generate")._actions if a.dest == "command")
    helped = sub.choices["generate"].format_help()
    assert "--tier" in helped and "--difficulty" not in helped
    for argv in (("--difficulty", "legendary"), ("--tier", "easy", "--difficulty", "hard")):
        with pytest.raises(SystemExit):
            parse(*argv)
        assert ("invalid choice: 'legendary'" if "legendary" in argv else "not allowed with argument --tier") \
            in capsys.readouterr().err


def test_the_stages_plan_and_run_with_the_constants_the_parser_offers():
    """tasks.plan and flows.runners import Prefect, which the parser must not (the local server's URL is set before
    Prefect reads its settings): both take the plan's defaults and the runners from schemas.shard, as the parser."""
    from flows.runners import RUNNERS
    from tasks import plan

    assert RUNNERS is schemas.shard.RUNNERS and plan.PLANS is schemas.shard.PLANS
    assert (plan.DEFAULT_COUNT, plan.DEFAULT_SHARD_SIZE) == (schemas.shard.DEFAULT_COUNT,
                                                              schemas.shard.DEFAULT_SHARD_SIZE)
    from flows.generate import generate

    for function in (plan.plan_shards, generate.fn):
        assert inspect.signature(function).parameters["split"].default == schemas.shard.DEFAULT_SPLIT


@pytest.mark.parametrize("command", list(COMMANDS))
def test_building_one_command_imports_no_prefect(command):
    """cli.main sets PREFECT_API_URL after parsing and before Prefect is first imported."""
    code = (f"import sys; from cli.main import build_parser; build_parser({command!r}); "
            "sys.exit('prefect' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_the_help_of_every_command_builds():
    assert build_parser().format_help()
    for command in COMMANDS:
        sub = next(a for a in build_parser(command)._actions if a.dest == "command")
        assert sub.choices[command].format_help()
