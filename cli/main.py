"""`vhd`: generate environments, query the catalog, play environments, read reports, serve the nightly job."""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from cli.output import DOCUMENT_FORMATS, FORMATS
from cli.shared import EVAL_REPORT, HUMAN
from schemas.errors import UserError
from schemas.tiers import TIERS

EPILOG = "Every command reads the warehouse from --warehouse, else $VHD_WAREHOUSE, else ./vhd_warehouse."


class _RenamedOption(argparse.Action):
    """An option's old name, still accepted: stores under the new option's dest, with a one-line note on stderr."""

    def __init__(self, option_strings, dest, new: str, **kwargs) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"note: {option_string} is now {self.new} (same values); {option_string} still works but is "
              "deprecated", file=sys.stderr)
        setattr(namespace, self.dest, values)


@dataclass(frozen=True)
class Bound:
    """The range of a numeric option. cli.main checks every option declared with one (check_bounds) before the
    command's own checks and before any work: a value outside it is one line naming the option and exit code 2.
    A float must be finite as well (inf, 1e400 and nan are refused)."""

    low: float
    high: float
    low_text: str
    """The minimum as the refusal says it: "at least 1", "positive", "0 or more"."""
    high_text: str = ""
    """What follows the maximum in the refusal: its unit, why, what to do instead."""
    low_open: bool = False
    """`low` itself is refused too (a positive number of seconds)."""
    grouped: bool = True
    """Show integers with thousands separators (1,000,000); not for port numbers."""

    def shown(self, value: float) -> str:
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer() and abs(value) < 1e15):
            return f"{value:g}"
        digits = str(abs(int(value)))
        if len(digits) > 40:  # 10**4000: the head and its size, not a screenful of digits
            return f"{'-' if value < 0 else ''}{digits[:6]}... (an integer of {len(digits)} digits)"
        return f"{int(value):,}" if self.grouped else str(int(value))

    def refusal(self, flag: str, value: float) -> str | None:
        """The one line refusing `value` for `flag`, or None when it is within the range."""
        if isinstance(value, float) and math.isnan(value):
            return f"{flag} must be a number, got nan"
        if value < self.low or (self.low_open and value <= self.low):
            return f"{flag} must be {self.low_text}, got {self.shown(value)}"
        if value > self.high:
            return f"{flag} {self.shown(value)} is above the maximum of {self.shown(self.high)}{self.high_text}"
        return None


MAX_SECONDS = 86_400.0  # --timeout, --session-ttl: one day
MAX_SEED = 2**63 - 1  # a seed is stored and passed on as a 64-bit integer
MAX_LIMIT = 1_000_000_000  # --limit: environments in a sample (a larger limit than the catalog is the catalog)
MAX_THREADS = 256  # --workers, --concurrency: threads (or dask worker processes) of one command
PROCESSES_PER_CORE = 4  # --processes: at most this many worker processes per core this process may use
SEED = Bound(0, MAX_SEED, "0 or more", " (seeds are 64-bit integers)")
PORT = Bound(1, 65535, "1-65535", grouped=False)


def usable_cores() -> int:
    """The cores this process may use (tasks.pool's default of one worker process per core)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _number(command: argparse.ArgumentParser, flag: str, kind: type, bound: Bound, **kwargs) -> None:
    """A numeric option (int or float) and its range, which check_bounds checks before anything runs."""
    action = command.add_argument(flag, type=kind, **kwargs)
    command.bounds = {**getattr(command, "bounds", {}), action.dest: (flag, bound)}


def check_bounds(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """UserError, one line naming the option, for a numeric option of the command outside its Bound."""
    built = getattr(parser, "commands", {}).get(args.command)
    for dest, (flag, bound) in getattr(built, "bounds", {}).items():
        value = getattr(args, dest, None)
        if value is not None and (refusal := bound.refusal(flag, value)) is not None:
            raise UserError(refusal)


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser, whose refusal of bad arguments is one line (argparse prints the whole usage block first):
    the problem, and where to read the command's options."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `vhd` parser. With `command`, only that command's options are built and the others are listed by name and
    help: the options' choices and defaults come from the registries and constants that own them (the families'
    agents, the export formats, ...), which a command need not import to run another one."""
    parser = OneLineParser(prog="vhd", description=__doc__, epilog=EPILOG)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parser.commands = {}  # each command's parser, whose `bounds` check_bounds reads
    for name, entry in COMMANDS.items():
        if entry.warehouse:
            built = sub.add_parser(name, help=entry.help, description=entry.description or entry.help, epilog=EPILOG)
            built.add_argument("--warehouse", help="warehouse location: a folder or s3://bucket/prefix")
        else:
            built = sub.add_parser(name, help=entry.help, description=entry.description or entry.help)
        parser.commands[name] = built
        if command is None or command == name:
            entry.options(built)
    return parser


def _generate_options(gen: argparse.ArgumentParser) -> None:
    from schemas.shard import DEFAULT_COUNT, DEFAULT_SHARD_SIZE, DEFAULT_SPLIT, MAX_COUNT, PLANS, plan_description

    _number(gen, "--count", int, _count_bound(MAX_COUNT), help=f"admitted environments to produce (default "
                                                               f"{DEFAULT_COUNT}, at most {MAX_COUNT:,})")
    gen.add_argument("--plan", dest="plan_name", choices=tuple(PLANS),
                     help="a named dataset instead of --count/--families/--split: "
                          + "; ".join(plan_description(name) for name in PLANS))
    gen.add_argument("--families", help="comma-separated family ids or group names, or 'diagnostic' (default: all)")
    gen.add_argument("--date", help="the run's date, YYYY-MM-DD (default today); seeds derive from it")
    gen.add_argument("--split", default=DEFAULT_SPLIT, help="split label written with every environment")
    tier = gen.add_mutually_exclusive_group()
    tier.add_argument("--tier", choices=TIERS,
                      help="draw every family from this tier's cells and budgets and admit only environments "
                           "measured at it (the environments' tier column; see the README's difficulty tiers); "
                           "default: the families' plain grids")
    tier.add_argument("--difficulty", dest="tier", choices=TIERS, action=_RenamedOption, new="--tier",
                      help=argparse.SUPPRESS)  # the flag's name before it was --tier: old nightly scripts still run
    _setter_options(gen, "who renders the tools")
    gen.add_argument("--fallback-model", help="litellm model tried when --model still fails after its retries")
    _number(gen, "--max-cost-usd", float,
            Bound(0, 1_000_000, "positive", " USD; leave --max-cost-usd out for no limit", low_open=True),
            help="stop asking the model once the run's LLM calls cost this much; what is admitted lands")
    _number(gen, "--shard-size", int, Bound(1, MAX_COUNT, "positive", " instances per shard (the most a run makes)"),
            default=DEFAULT_SHARD_SIZE, help=f"instances per shard (default {DEFAULT_SHARD_SIZE})")
    _number(gen, "--workers", int, _threads_bound(),
            help=f"threads of the task runner (default 4), or with --runner dask and no address the local "
                 f"cluster's worker processes (default 2); at most {MAX_THREADS}")
    cores = usable_cores()
    _number(gen, "--processes", int,
            Bound(0, PROCESSES_PER_CORE * cores, "0 or more",
                  f" worker processes ({PROCESSES_PER_CORE} per core, {cores} core(s) here)"),
            help="worker processes for the stages' CPU work with --runner threads (default: one per core for "
                 "200 or more environments, else none; 0 = everything in this process; at most "
                 f"{PROCESSES_PER_CORE} per core)")
    _runner_options(gen, "where the stages' CPU work runs: worker processes of this machine ('threads', the default), "
                         "or 'dask': a local cluster or the one at --dask-address, landing the same environments; "
                         "with dask the progress bar moves as each shard's stages complete",
                    "scheduler of a running Dask cluster for --runner dask (see README, 'Scaling out on Dask')")
    gen.add_argument("--stage-cache", metavar="URL",
                     help="keep the stages' results in s3://bucket/prefix (S3 set up as for the warehouse), another "
                          "fsspec URL, a folder or a Prefect storage block TYPE/NAME, so that a re-run on any host "
                          "naming it takes the finished stages from there (default $VHD_STAGE_CACHE, else Prefect's "
                          "local result storage)")
    gen.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
    _prefect_port_option(gen)


def _count_bound(maximum: int) -> Bound:
    return Bound(1, maximum, "a positive integer", " environments per run; generate a larger dataset as several "
                                                   "runs (e.g. one per --date)")


def _threads_bound() -> Bound:
    return Bound(1, MAX_THREADS, "at least 1", " threads")


def _prefect_port_option(command: argparse.ArgumentParser) -> None:
    from cli.prefect_server import ENV_PORT, PREFERRED_PORT

    command.add_argument("--prefect-port", metavar="PORT",
                         help="port of the local Prefect server when this command starts it (default "
                              f"${ENV_PORT}, else {PREFERRED_PORT}, or a free port when that is taken); refused when "
                              "another program holds it, or the local server already runs on another port; "
                              "PREFECT_API_URL set: that server is used instead")


def _setter_options(command: argparse.ArgumentParser, help_text: str,
                    model_help: str = "litellm model for --setter litellm, e.g. openai/gpt-4o-mini") -> None:
    """--setter (the setter registry's names and default) and --model."""
    from setter import DEFAULT_SETTER, SETTERS

    command.add_argument("--setter", default=DEFAULT_SETTER, choices=SETTERS, help=help_text)
    command.add_argument("--model", help=model_help)


def _runner_options(command: argparse.ArgumentParser, help_text: str, address_help: str) -> None:
    """--runner (the runners a run may use, threads first) and --dask-address."""
    from schemas.shard import RUNNERS

    command.add_argument("--runner", choices=RUNNERS, default=RUNNERS[0], help=help_text)
    command.add_argument("--dask-address", metavar="tcp://HOST:PORT", help=address_help)


def _mode_option(command: argparse.ArgumentParser, several: bool = False, help_text: str | None = None) -> None:
    """--mode: one of the modes (default hidden), or with `several` a comma-separated list or 'all'."""
    from schemas.envspec import DEFAULT_MODE, MODES

    if several:
        command.add_argument("--mode", default=DEFAULT_MODE,
                             help=help_text or f"{', '.join(MODES)}, several comma-separated, or all")
    else:
        command.add_argument("--mode", choices=MODES, default=DEFAULT_MODE)


def _query_options(query: argparse.ArgumentParser) -> None:
    query.add_argument("sql")
    query.add_argument("--format", choices=FORMATS, default=FORMATS[0])
    _number(query, "--timeout", float,
            Bound(0, MAX_SECONDS, "a positive number of seconds", " seconds (one day); leave --timeout out for no "
                                                                  "limit", low_open=True),
            metavar="SECONDS", help="stop the query if it runs longer than this (at most a day), with one line (exit "
                                    "code 2); default: no limit (Ctrl-C stops it at any time)")


def _families_options(fams: argparse.ArgumentParser) -> None:
    fams.add_argument("--format", choices=DOCUMENT_FORMATS, default=DOCUMENT_FORMATS[0])


def _solve_options(solve: argparse.ArgumentParser) -> None:
    solve.add_argument("family", help="family id, e.g. knapsack (see vhd families)")
    source = solve.add_mutually_exclusive_group(required=True)
    source.add_argument("--params", help="JSON file of the family's parameters ('-' reads standard input)")
    source.add_argument("--example", action="store_true",
                        help="print a sampled instance's parameters as JSON: a starting point for --params")
    _number(solve, "--seed", int, SEED, default=0, help="seed of the --example instance")
    solve.add_argument("--format", choices=DOCUMENT_FORMATS, default=DOCUMENT_FORMATS[0])


def _show_options(show: argparse.ArgumentParser) -> None:
    show.add_argument("env_id")
    show.add_argument("--format", choices=DOCUMENT_FORMATS, default=DOCUMENT_FORMATS[0])


def _play_options(play: argparse.ArgumentParser) -> None:
    from envs.agents import AGENTS

    play.add_argument("env_id")
    _mode_option(play)
    play.add_argument("--agent", choices=(*AGENTS, HUMAN), default="oracle",
                      help=f"a baseline agent, or {HUMAN}: type the tool calls yourself")
    _number(play, "--seed", int, SEED, default=0, help="seed of the random agent")
    play.add_argument("--format", choices=DOCUMENT_FORMATS, default=DOCUMENT_FORMATS[0])


def _report_options(report: argparse.ArgumentParser) -> None:
    from warehouse.reports import REPORTS

    report.add_argument("kind", nargs="?", choices=(*REPORTS, EVAL_REPORT),
                        help="none: the whole report (size, cost, admission, diversity, difficulty) as --out HTML; "
                             "cost: USD and tokens; diversity: coverage; setter: first-attempt admission, attempts, "
                             "rewritten interfaces, tokens and USD per admitted environment; eval: mean score in "
                             "written, revealed and hidden mode per family and agent, from vhd eval")
    report.add_argument("--format", choices=FORMATS, default=FORMATS[0])
    report.add_argument("--since", help="the whole report over rows dated YYYY-MM-DD or later (default: all rows)")
    report.add_argument("--out", default="report.html",
                        help="where the whole report's HTML goes: a file path or s3:// URL (default report.html)")


def _serve_options(serve: argparse.ArgumentParser) -> None:
    from schemas.shard import DEFAULT_COUNT, MAX_COUNT

    serve.add_argument("--cron", default="0 2 * * *", help="schedule, cron syntax (default '0 2 * * *')")
    serve.add_argument("--timezone", default="UTC", help="time zone of the schedule (default UTC)")
    _number(serve, "--count", int, _count_bound(MAX_COUNT), default=DEFAULT_COUNT, help="environments per night")
    serve.add_argument("--families", help="family mix of the nightly run")
    serve.add_argument("--name", default="nightly", help="deployment name (default nightly)")
    _setter_options(serve, "who renders the tools")
    _number(serve, "--workers", int, _threads_bound(), default=4,
            help="threads of each night's task runner (default 4)")


def _doctor_options(doctor: argparse.ArgumentParser) -> None:
    _setter_options(doctor, "the setter to check for (litellm: its endpoint or provider keys are needed)",
                    "litellm model to check (price, keys)")
    doctor.add_argument("--fallback-model", help="fallback litellm model to check")
    _runner_options(doctor, "the runner to check for", "dask scheduler to check")
    doctor.add_argument("--format", choices=DOCUMENT_FORMATS, default=DOCUMENT_FORMATS[0])


def _warehouse_options(house: argparse.ArgumentParser) -> None:
    house.add_argument("action", choices=("check", "compact", "clean"),
                       help="check: one line per problem (exit code 1 if any) and per leftover (files a crash left, "
                            "invisible to queries; exit code 0 if only those); compact: merge the small files of "
                            "each table and date into one, atomically, without changing any query result (one at a "
                            "time; refused while a committed file is damaged); clean: delete the leftovers older "
                            "than --min-age-hours")
    _number(house, "--min-age-hours", float, Bound(0, 87_600, "0 or more", " hours (ten years)"), default=24.0,
                       help="clean: leave unlisted files younger than this alone, a run may still commit them "
                            "(default 24)")


def _eval_options(ev: argparse.ArgumentParser) -> None:
    from evaluation.episodes import AGENT_CHOICES, LITELLM
    from evaluation.llm_agent import TOOL_CALL_FORMATS, AgentConfig

    ev.add_argument("--agent", choices=AGENT_CHOICES, default=LITELLM)
    ev.add_argument("--model", help="litellm model for --agent litellm, e.g. openai/gpt-4o-mini")
    _mode_option(ev, several=True)
    ev.add_argument("--where", default="true", help="SQL condition over the environments table, e.g. \"family = "
                                                    "'knapsack' AND split = 'held_out'\" (default: all)")
    _number(ev, "--limit", int, _limit_bound(),
            help="a seeded random sample of N environments, stratified by family (every family once N reaches their "
                 "number; --seed draws it)")
    _number(ev, "--concurrency", int, Bound(1, MAX_THREADS, "at least 1", " episodes at once"), default=4,
            help="episodes played at once (default 4)")
    _number(ev, "--seed", int, SEED, default=0, help="seed of the random agent and of the --limit sample (default 0)")
    _number(ev, "--max-turns", int, Bound(1, 10_000, "at least 1", " model calls per episode"),
            help="model calls per episode (default: the environment's turn budget)")
    _number(ev, "--max-tokens", int, Bound(1, 1_000_000, "at least 1", " tokens per model call"),
            default=AgentConfig.max_tokens,
                    help=f"completion tokens per model call (default {AgentConfig.max_tokens})")
    ev.add_argument("--tool-calls", choices=TOOL_CALL_FORMATS, default=AgentConfig.tool_calls,
                    help="native: OpenAI tool calls (default); json: tools described in the prompt, the answer "
                         "constrained to {\"tool\", \"arguments\"} (for small local models behind llama.cpp)")
    ev.add_argument("--api-base", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (vhd llm serve)")
    ev.add_argument("--format", choices=FORMATS, default=FORMATS[0])


def _limit_bound() -> Bound:
    return Bound(1, MAX_LIMIT, "at least 1", " environments in a sample; leave --limit out for all of them")


def _serve_envs_options(serve_envs: argparse.ArgumentParser) -> None:
    serve_envs.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    _number(serve_envs, "--port", int, PORT, default=8000, help="port (default 8000)")
    _number(serve_envs, "--session-ttl", float,
            Bound(0, MAX_SECONDS, "positive seconds", " seconds (one day)", low_open=True), default=600.0,
            help="seconds a session may stay idle before it expires (default 600, at most a day)")
    _number(serve_envs, "--max-sessions", int, SESSIONS, default=10_000,
            help="sessions open at once, all clients together (default 10,000; one more is 429)")
    _sessions_per_client_option(serve_envs, 2_500)
    _number(serve_envs, "--body-timeout", float,
            Bound(0, 600.0, "positive seconds", " seconds", low_open=True), default=5.0,
            help="seconds a request's whole body may take after its headers; a client that stalls is answered 408 "
                 "and its connection closed (default 5)")
    serve_envs.add_argument("--where", default="true",
                            help="SQL condition over the environments table: the only environments served (an id "
                                 "outside it is refused as unknown), e.g. \"split = 'train'\" (default: all)")


SESSIONS = Bound(1, 10_000, "at least 1", " sessions")


def _sessions_per_client_option(serve: argparse.ArgumentParser, default: int) -> None:
    _number(serve, "--sessions-per-client", int, SESSIONS, default=default,
            help=f"sessions one client (peer address: clients behind one proxy or NAT are one client) may hold at "
                 f"once; one more is refused for that client only (default {default:,}, a quarter of the default "
                 "--max-sessions)")


def _serve_mcp_options(serve_mcp: argparse.ArgumentParser) -> None:
    serve_mcp.add_argument("env_id")
    _mode_option(serve_mcp)


def _serve_openenv_options(openenv: argparse.ArgumentParser) -> None:
    from schemas.envspec import DEFAULT_MODE

    openenv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    _number(openenv, "--port", int, PORT, default=8000, help="port (default 8000)")
    _number(openenv, "--max-sessions", int, SESSIONS, default=256,
            help="sessions open at once, WebSocket and /mcp ones together (default 256; one more gets "
                 "CAPACITY_REACHED)")
    _sessions_per_client_option(openenv, 64)
    openenv.add_argument("--where", default="true",
                         help="SQL condition: the environments the Task API lists, the only ones a session may reset "
                              "to (an id outside it is refused as unknown)")
    _mode_option(openenv, several=True,
                 help_text=f"modes the Task API lists per environment (default {DEFAULT_MODE})")


def _score_options(score: argparse.ArgumentParser) -> None:
    score.add_argument("transcript", help="JSON file of the chat: a list of OpenAI messages (assistant tool_calls, or "
                                          "<tool_call>{...}</tool_call> in the text), or {\"messages\": [...]}")
    score.add_argument("--env-id", help="the environment, from the warehouse; with --row: which of its rows")
    score.add_argument("--row", help="a row file of vhd export (.json, .jsonl, .parquet, an hf folder) instead of the "
                                     "warehouse; one row, or the one --env-id and --mode select")
    from schemas.envspec import DEFAULT_MODE, MODES

    score.add_argument("--mode", choices=MODES,
                       help=f"the environment's mode (default {DEFAULT_MODE}; with --row: which of its rows)")


def _export_options(export: argparse.ArgumentParser) -> None:
    from cli.evaluate import ALL_MODES
    from envs.export import EXPORT_FORMATS
    from integrations.rows import TRAINER_FORMATS
    from schemas.envspec import MODES

    export.add_argument("--where", default="true", help="SQL condition over the environments table (default: all)")
    export.add_argument("--mode", default=ALL_MODES, help=f"{', '.join(MODES)}, comma-separated, or all (default)")
    _number(export, "--limit", int, _limit_bound(),
            help="a seeded random sample of N environments, stratified by family (every family once N reaches their "
                 "number; default: all)")
    _number(export, "--seed", int, SEED, default=0,
            help="seed of the --limit sample (default 0; the same seed, the same sample), recorded in the trl, skyrl "
                 "and hf rows' sample_seed")
    export.add_argument("--format", choices=(*EXPORT_FORMATS, *TRAINER_FORMATS),
                        help=f"default: from --out's suffix, else {EXPORT_FORMATS[0]}; trl, skyrl: chat-message prompt "
                             "and difficulty columns (.parquet or .jsonl); hf: a Hugging Face dataset folder with a "
                             "default configuration of every family and one per family, splits from the rows' split "
                             "(train, held_out, ood), and a dataset card")
    export.add_argument("--out", required=True,
                        help="file to write, its suffix the format's (jsonl: .jsonl; parquet: .parquet; trl, skyrl: "
                             ".parquet or .jsonl), or a new or empty folder for --format hf")
    export.add_argument("--force", action="store_true", help="replace --out when that file is already there")


def _llm_options(llm: argparse.ArgumentParser) -> None:
    from setter.local_server import DEFAULT_N_CTX, DEFAULT_PORT

    llm.add_argument("action", choices=("serve",))
    _number(llm, "--port", int, PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
    _number(llm, "--n-ctx", int, Bound(512, 131_072, "at least 512 tokens", " tokens"), default=DEFAULT_N_CTX,
                     help=f"context window in tokens (default {DEFAULT_N_CTX})")
    llm.add_argument("--log", help="server log file (default: a temporary file, named at start)")


def _server_options(server: argparse.ArgumentParser) -> None:
    server.add_argument("action", choices=("status", "start", "stop"),
                        help="status: where it listens and whether it answers; start: start it now if it is not "
                             "running; stop: stop it and its processes")
    _prefect_port_option(server)


SERVER_DESCRIPTION = ("The local Prefect server: the first command that needs a Prefect API (generate, eval, serve) "
                      "starts it in the background when PREFECT_API_URL is unset; later commands reuse it. Its "
                      "database and log live in $VHD_HOME/prefect-server (default "
                      "~/.local/share/vhdplay/prefect-server).")


@dataclass(frozen=True)
class Command:
    """One `vhd` command: its help line, the function that adds its options, and the function that runs it."""

    help: str
    options: Callable[[argparse.ArgumentParser], None]
    handler: str
    """"module:function" taking the parsed arguments and returning the exit code (None: 0). Named, not imported:
    the module is imported only to run its command (a command does not import the others' dependencies)."""
    check: str | None = None
    """"module:function" that checks the input before a Prefect server is started or reused (UserError: one line)."""
    needs_api: bool = False
    """It runs Prefect flows or registers deployments: without a configured API it uses the local server."""
    interruptible: bool = False
    """It runs in a worker thread so that Ctrl-C and SIGTERM stop it within seconds (cli.interrupts); the servers
    (serve, serve-envs, serve-mcp, serve-openenv, llm), `play` (a human may type) and `server` keep the main thread
    and stop on Ctrl-C as their servers do."""
    warehouse: bool = True
    """It takes --warehouse."""
    description: str | None = None
    """Its help page's description (default: the help line)."""


def handler_of(reference: str) -> Callable:
    """The function a "module:function" reference of the table names."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


COMMANDS = {
    "generate": Command("sample, solve, render and validate N admitted environments and land them",
                        _generate_options, "cli.commands:cmd_generate", check="cli.commands:check_generate",
                        needs_api=True, interruptible=True),
    "query": Command("run a read-only SQL query over the catalog views (environments, attempts, llm_calls, runs)",
                     _query_options, "cli.commands:cmd_query", interruptible=True),
    "families": Command("list the registered mechanism families", _families_options, "cli.commands:cmd_families",
                        interruptible=True),
    "solve": Command("solve one instance given as data: u*, the optimal plan and the solver used", _solve_options,
                     "cli.commands:cmd_solve", interruptible=True),
    "show": Command("show one environment: its rendering, tools and reference values", _show_options,
                    "cli.commands:cmd_show", interruptible=True),
    "play": Command("play an environment with a baseline agent, or type tool calls yourself (--agent human)",
                    _play_options, "cli.commands:cmd_play"),
    "report": Command("the dataset report (one HTML file and a terminal summary), or one kind as terminal tables",
                      _report_options, "cli.commands:cmd_report", interruptible=True),
    "serve": Command("register and serve the nightly generation as a Prefect deployment (needs a server)",
                     _serve_options, "cli.commands:cmd_serve", check="cli.commands:check_serve", needs_api=True),
    "doctor": Command("print the configuration in force and check that each service it needs is reachable",
                      _doctor_options, "cli.doctor:cmd_doctor", interruptible=True),
    "warehouse": Command("check the warehouse for damaged, missing or duplicated files and crash leftovers, compact "
                         "it, or clean the leftovers", _warehouse_options, "cli.commands:cmd_warehouse",
                         interruptible=True),
    "eval": Command("play an agent (a baseline or any litellm model) over selected environments; land the episodes",
                    _eval_options, "cli.evaluate:cmd_eval", check="cli.commands:check_eval", needs_api=True,
                    interruptible=True),
    "serve-envs": Command("serve the catalog's environments over HTTP: sessions for remote rollouts",
                          _serve_envs_options, "cli.serving:cmd_serve_envs"),
    "serve-mcp": Command("serve one environment's tools as an MCP server over stdio", _serve_mcp_options,
                         "cli.serving:cmd_serve_mcp"),
    "serve-openenv": Command("serve the catalog as an OpenEnv environment: MCP tool calls as actions, the Task API "
                             "over splits and catalog rows", _serve_openenv_options,
                             "cli.integrations:cmd_serve_openenv"),
    "export": Command("export selected environments for trainers: one row per environment and mode (env id, system "
                      "prompt, tools, spec)", _export_options, "cli.export:cmd_export", interruptible=True),
    "score": Command("score one finished chat: replay its tool calls against the environment; print score, u and "
                     "each failed call's error as JSON", _score_options, "cli.completions:cmd_score",
                     interruptible=True),
    "llm": Command("the local model: 'serve' runs gemma-3-270m on 127.0.0.1 for --setter litellm, offline",
                   _llm_options, "cli.llm:cmd_llm"),
    "server": Command("the local Prefect server that vhd starts when PREFECT_API_URL is unset: status, start, stop",
                      _server_options, "cli.prefect_server:cmd_server", warehouse=False,
                      description=SERVER_DESCRIPTION),
}


def command_of(argv: list[str]) -> str:
    """The command an argument list runs ('' when it names none: `vhd --help`)."""
    return next((arg for arg in argv if not arg.startswith("-")), "")


def main(argv: list[str] | None = None) -> int:
    """Run one `vhd` command. Bad input (a UserError, whatever raised it) is one `error: ...` line and exit code 2;
    any other exception is a bug and shows its traceback."""
    # At exit, after every atexit handler (Prefect's log and event drains included: this one is registered first,
    # so it runs last), skip the garbage collector's passes over the imported libraries' objects while modules are
    # torn down: ~1.2 s of every command on 2 cores. Python does not promise finalizers at exit anyway.
    atexit.register(gc.freeze)
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(command_of(argv))
    args = parser.parse_args(argv)
    command = COMMANDS[args.command]
    try:
        check_bounds(parser, args)  # every numeric option within its range: one line naming it, before anything
        if command.check is not None:  # bad input gets its one line before a Prefect server is started or any work
            from cli.prefect_server import asked_port

            asked_port(getattr(args, "prefect_port", None))  # --prefect-port / $VHD_PREFECT_PORT: a port number
            handler_of(command.check)(args)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from cli.prefect_server import ServerStartError, asked_port, use_local_server

    try:
        # Before Prefect is imported (it reads its settings once): without a configured API, the local server's
        # URL, started in the background if needed and reused by later commands. Doctor only looks at it.
        if command.needs_api or args.command == "doctor":
            start = args.command != "doctor"  # the port asked (--prefect-port, $VHD_PREFECT_PORT): checked above
            use_local_server(start=start, port=asked_port(getattr(args, "prefect_port", None)) if start else None)
    except ServerStartError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    # Prefect's per-task INFO lines would drown the progress bar; warnings and errors still show.
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from cli import exhaustion

    exhaustion.watch_prefect_logs()  # a task run on a full disk: not a traceback per shard, one line at the end
    try:
        run = handler_of(command.handler)
        if command.interruptible:
            from cli import interrupts

            code = interrupts.run(run, args) or 0
        else:
            code = run(args) or 0
        if exhaustion.seen():  # what did not land stays invisible; the summary above says what did
            print(f"error: {exhaustion.seen()}", file=sys.stderr)
            return code or 1
        return code
    except BrokenPipeError:  # the reader (head, less) went away: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("interrupted; committed runs are intact", file=sys.stderr)
        return 130
    except ServerStartError as error:  # `vhd server start`
        print(f"error: {error}", file=sys.stderr)
        return 1
    except UserError as error:  # the user-facing error boundary: any other exception keeps its traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (OSError, MemoryError) as error:  # a full disk, too many open files, memory: one line, exit code 1
        line = exhaustion.line_of(error)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
