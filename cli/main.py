"""`vhd`: generate environments, query the catalog, play environments, read reports, serve the nightly job."""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys

from cli.output import FORMATS
from schemas.tiers import TIERS

EPILOG = "Every command reads the warehouse from --warehouse, else $VHD_WAREHOUSE, else ./vhd_warehouse."


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vhd", description=__doc__, epilog=EPILOG)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text, description=help_text, epilog=EPILOG)
        command.add_argument("--warehouse", help="warehouse location: a folder or s3://bucket/prefix")
        return command

    gen = add("generate", "sample, solve, render and validate N admitted environments and land them")
    gen.add_argument("--count", type=int, help="admitted environments to produce (default 300)")
    gen.add_argument("--plan", dest="plan_name", choices=("paper",),
                     help="a named dataset instead of --count/--families/--split: 'paper' = 3,300 environments "
                          "(2,200 train + 300 held_out from the trained families, 800 ood from the other eight)")
    gen.add_argument("--families", help="comma-separated family ids or group names, or 'diagnostic' (default: all)")
    gen.add_argument("--date", help="the run's date, YYYY-MM-DD (default today); seeds derive from it")
    gen.add_argument("--split", default="train", help="split label written with every environment")
    gen.add_argument("--difficulty", choices=TIERS,
                     help="draw every family from this tier's cells and budgets and admit only environments "
                          "measured at it (see the README's difficulty tiers); default: the families' plain grids")
    gen.add_argument("--setter", default="template", choices=["template", "litellm"], help="who renders the tools")
    gen.add_argument("--model", help="litellm model for --setter litellm, e.g. openai/gpt-4o-mini")
    gen.add_argument("--fallback-model", help="litellm model tried when --model still fails after its retries")
    gen.add_argument("--max-cost-usd", type=float,
                     help="stop asking the model once the run's LLM calls cost this much; what is admitted lands")
    gen.add_argument("--shard-size", type=int, default=100, help="instances per shard (default 100)")
    gen.add_argument("--workers", type=int,
                     help="threads of the task runner (default 4), or with --runner dask and no address the local "
                          "cluster's worker processes (default 2)")
    gen.add_argument("--processes", type=int,
                     help="worker processes for the stages' CPU work with --runner threads (default: one per core for "
                          "200 or more environments, else none; 0 = everything in this process)")
    gen.add_argument("--runner", choices=("threads", "dask"), default="threads",
                     help="where the stages run: 'threads' in this process (default), or 'dask' through prefect-dask "
                          "on a local cluster or the one at --dask-address, landing the same environments; with dask "
                          "the progress bar only updates when the run ends, and --max-cost-usd is refused")
    gen.add_argument("--dask-address", metavar="tcp://HOST:PORT",
                     help="scheduler of a running Dask cluster for --runner dask (see README, 'Scaling out on Dask')")
    gen.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")

    query = add("query", "run a read-only SQL query over the catalog views (environments, attempts, llm_calls, runs)")
    query.add_argument("sql")
    query.add_argument("--format", choices=FORMATS, default="table")
    query.add_argument("--timeout", type=float, metavar="SECONDS",
                       help="stop the query if it runs longer than this, with one line (exit code 2); default: no "
                            "limit (Ctrl-C stops it at any time)")

    fams = add("families", "list the registered mechanism families")
    fams.add_argument("--format", choices=("table", "json"), default="table")

    solve = add("solve", "solve one instance given as data: u*, the optimal plan and the solver used")
    solve.add_argument("family", help="family id, e.g. knapsack (see vhd families)")
    source = solve.add_mutually_exclusive_group(required=True)
    source.add_argument("--params", help="JSON file of the family's parameters ('-' reads standard input)")
    source.add_argument("--example", action="store_true",
                        help="print a sampled instance's parameters as JSON: a starting point for --params")
    solve.add_argument("--seed", type=int, default=0, help="seed of the --example instance")
    solve.add_argument("--format", choices=("table", "json"), default="table")

    show = add("show", "show one environment: its rendering, tools and reference values")
    show.add_argument("env_id")
    show.add_argument("--format", choices=("table", "json"), default="table")

    play = add("play", "play an environment with a baseline agent, or type tool calls yourself (--agent human)")
    play.add_argument("env_id")
    play.add_argument("--mode", choices=("written", "revealed", "hidden"), default="hidden")
    play.add_argument("--agent", choices=("oracle", "default", "informed", "idle", "random", "human"),
                      default="oracle")
    play.add_argument("--seed", type=int, default=0, help="seed of the random agent")
    play.add_argument("--format", choices=("table", "json"), default="table")

    report = add("report", "the dataset report (one HTML file and a terminal summary), or one kind as terminal tables")
    report.add_argument("kind", nargs="?", choices=("cost", "diversity", "setter", "eval"),
                        help="none: the whole report (size, cost, admission, diversity, difficulty) as --out HTML; "
                             "cost: USD and tokens; diversity: coverage; setter: first-attempt admission, attempts, "
                             "rewritten interfaces, tokens and USD per admitted environment; eval: mean score in "
                             "written, revealed and hidden mode per family and agent, from vhd eval")
    report.add_argument("--format", choices=FORMATS, default="table")
    report.add_argument("--since", help="the whole report over rows dated YYYY-MM-DD or later (default: all rows)")
    report.add_argument("--out", default="report.html",
                        help="where the whole report's HTML goes: a file path or s3:// URL (default report.html)")

    serve = add("serve", "register and serve the nightly generation as a Prefect deployment (needs a server)")
    serve.add_argument("--cron", default="0 2 * * *", help="schedule, cron syntax (default '0 2 * * *')")
    serve.add_argument("--timezone", default="UTC", help="time zone of the schedule (default UTC)")
    serve.add_argument("--count", type=int, default=300, help="environments per night")
    serve.add_argument("--families", help="family mix of the nightly run")
    serve.add_argument("--name", default="nightly", help="deployment name (default nightly)")
    serve.add_argument("--setter", default="template", choices=["template", "litellm"], help="who renders the tools")
    serve.add_argument("--model", help="litellm model for --setter litellm, e.g. openai/gpt-4o-mini")
    serve.add_argument("--workers", type=int, default=4, help="threads of each night's task runner (default 4)")

    doctor = add("doctor", "print the configuration in force and check that each service it needs is reachable")
    doctor.add_argument("--setter", default="template", choices=["template", "litellm"],
                        help="the setter to check for (litellm: its endpoint or provider keys are needed)")
    doctor.add_argument("--model", help="litellm model to check (price, keys)")
    doctor.add_argument("--fallback-model", help="fallback litellm model to check")
    doctor.add_argument("--runner", choices=("threads", "dask"), default="threads", help="the runner to check for")
    doctor.add_argument("--dask-address", metavar="tcp://HOST:PORT", help="dask scheduler to check")
    doctor.add_argument("--format", choices=("table", "json"), default="table")

    house = add("warehouse", "check the warehouse for damaged, missing or duplicated files and crash leftovers, "
                             "compact it, or clean the leftovers")
    house.add_argument("action", choices=("check", "compact", "clean"),
                       help="check: one line per problem (exit code 1 if any) and per leftover (files a crash left, "
                            "invisible to queries; exit code 0 if only those); compact: merge the small files of "
                            "each table and date into one, atomically, without changing any query result (one at a "
                            "time; refused while a committed file is damaged); clean: delete the leftovers older "
                            "than --min-age-hours")
    house.add_argument("--min-age-hours", type=float, default=24.0,
                       help="clean: leave unlisted files younger than this alone, a run may still commit them "
                            "(default 24)")

    ev = add("eval", "play an agent (a baseline or any litellm model) over selected environments; land the episodes")
    ev.add_argument("--agent", choices=("oracle", "default", "informed", "idle", "random", "litellm"),
                    default="litellm")
    ev.add_argument("--model", help="litellm model for --agent litellm, e.g. openai/gpt-4o-mini")
    ev.add_argument("--mode", default="hidden", help="written, revealed, hidden, several comma-separated, or all")
    ev.add_argument("--where", default="true", help="SQL condition over the environments table, e.g. \"family = "
                                                    "'knapsack' AND split = 'held_out'\" (default: all)")
    ev.add_argument("--limit", type=int, help="at most N environments (in env_id order)")
    ev.add_argument("--concurrency", type=int, default=4, help="episodes played at once (default 4)")
    ev.add_argument("--seed", type=int, default=0, help="seed of the random agent")
    ev.add_argument("--max-turns", type=int, help="model calls per episode (default: the environment's turn budget)")
    ev.add_argument("--max-tokens", type=int, default=512, help="completion tokens per model call (default 512)")
    ev.add_argument("--tool-calls", choices=("native", "json"), default="native",
                    help="native: OpenAI tool calls (default); json: tools described in the prompt, the answer "
                         "constrained to {\"tool\", \"arguments\"} (for small local models behind llama.cpp)")
    ev.add_argument("--api-base", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (vhd llm serve)")
    ev.add_argument("--format", choices=FORMATS, default="table")

    serve_envs = add("serve-envs", "serve the catalog's environments over HTTP: sessions for remote rollouts")
    serve_envs.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve_envs.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve_envs.add_argument("--session-ttl", type=float, default=600.0,
                            help="seconds a session may stay idle before it expires (default 600)")

    serve_mcp = add("serve-mcp", "serve one environment's tools as an MCP server over stdio")
    serve_mcp.add_argument("env_id")
    serve_mcp.add_argument("--mode", choices=("written", "revealed", "hidden"), default="hidden")

    openenv = add("serve-openenv", "serve the catalog as an OpenEnv environment: MCP tool calls as actions, "
                                    "the Task API over splits and catalog rows")
    openenv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    openenv.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    openenv.add_argument("--max-sessions", type=int, default=256,
                         help="concurrent WebSocket sessions (default 256; one more gets CAPACITY_REACHED)")
    openenv.add_argument("--where", default="true", help="SQL condition: the environments the Task API lists")
    openenv.add_argument("--mode", default="hidden", help="modes the Task API lists per environment (default hidden)")

    export = add("export", "export selected environments for trainers: one row per environment and mode "
                           "(env id, system prompt, tools, spec)")
    export.add_argument("--where", default="true", help="SQL condition over the environments table (default: all)")
    export.add_argument("--mode", default="all", help="written, revealed, hidden, comma-separated, or all (default)")
    export.add_argument("--limit", type=int, help="at most N environments (in env_id order)")
    export.add_argument("--format", choices=("jsonl", "parquet", "trl", "skyrl", "hf"),
                        help="default: from --out's suffix, else jsonl; trl, skyrl: chat-message prompt and difficulty "
                             "columns (.parquet or .jsonl); hf: a dataset folder, one configuration per family")
    export.add_argument("--out", required=True, help="file to write (a folder for --format hf)")

    llm = add("llm", "the local model: 'serve' runs gemma-3-270m on 127.0.0.1 for --setter litellm, offline")
    llm.add_argument("action", choices=("serve",))
    llm.add_argument("--port", type=int, help="port on 127.0.0.1 (default 8080)")
    llm.add_argument("--n-ctx", type=int, default=8192, help="context window in tokens (default 8192)")
    llm.add_argument("--log", help="server log file (default: a temporary file, named at start)")

    server = sub.add_parser("server", help="the local Prefect server that vhd starts when PREFECT_API_URL is unset: "
                                           "status, start, stop",
                            description="The local Prefect server: the first command that needs a Prefect API "
                                        "(generate, eval, serve) starts it in the background when PREFECT_API_URL "
                                        "is unset; later commands reuse it. Its database and log live in "
                                        "$VHD_HOME/prefect-server (default ~/.local/share/vhdplay/prefect-server).")
    server.add_argument("action", choices=("status", "start", "stop"),
                        help="status: where it listens and whether it answers; start: start it now if it is not "
                             "running; stop: stop it and its processes")
    return parser


# commands that run Prefect flows or register deployments: without a configured API they use the local server
NEEDS_API = frozenset({"generate", "eval", "serve"})
# commands that run in a worker thread so that Ctrl-C and SIGTERM stop them within seconds (cli.interrupts); the
# servers (serve, serve-envs, serve-mcp, llm), `play` (a human may type) and `server` keep the main thread and
# stop on Ctrl-C as their servers do
INTERRUPTIBLE = frozenset({"generate", "eval", "query", "report", "export", "warehouse", "show", "solve",
                           "families", "doctor"})


def main(argv: list[str] | None = None) -> int:
    # At exit, after every atexit handler (Prefect's log and event drains included: this one is registered first,
    # so it runs last), skip the garbage collector's passes over the imported libraries' objects while modules are
    # torn down: ~1.2 s of every command on 2 cores. Python does not promise finalizers at exit anyway.
    atexit.register(gc.freeze)
    args = build_parser().parse_args(argv)
    from cli.commands import preflight

    refusal = preflight(args)  # bad input gets its one line before a Prefect server is started or any work
    if refusal is not None:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    from cli.prefect_server import ServerStartError, use_local_server

    try:
        # Before Prefect is imported (it reads its settings once): without a configured API, the local server's
        # URL, started in the background if needed and reused by later commands. Doctor only looks at it.
        if args.command in NEEDS_API or args.command == "doctor":
            use_local_server(start=args.command != "doctor")
    except ServerStartError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    # Prefect's per-task INFO lines would drown the progress bar; warnings and errors still show.
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from cli import commands

    command = getattr(commands, f"cmd_{args.command.replace('-', '_')}")
    try:
        if args.command in INTERRUPTIBLE:
            from cli import interrupts

            return interrupts.run(command, args) or 0
        return command(args) or 0
    except BrokenPipeError:  # the reader (head, less) went away: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("interrupted; committed runs are intact", file=sys.stderr)
        return 130
    except ServerStartError as error:  # `vhd server start`
        print(f"error: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 - the user-facing error boundary
        if not commands.is_user_error(error):
            raise
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
