"""The implementation of the `vhd` commands that need no module of their own (cli.main's table names each
command's handler), and the input checks of the commands that run Prefect flows."""

from __future__ import annotations

import json
from contextlib import contextmanager

from cli.output import arrow_rows, console, escape, literal, print_literal, print_rows, print_sections
from cli.shared import EVAL_REPORT, HUMAN, warehouse_of
from schemas.errors import UserError
from schemas.strict_json import dumps

# The checks run by cli.main before a Prefect server is started or reused (nothing here imports Prefect): bad input
# raises UserError, one line.


def check_generate(args) -> None:
    import mechanisms
    from schemas.shard import check_count, check_families, check_split, parse_date
    from setter import make_setter
    from tasks.stage_cache import check_stage_cache, stage_cache_days

    check_count(args.count)  # before anything else: a count of 10**15 must not be planned
    if args.plan_name is None:
        check_split(args.split)
        if check_families(args.families) is not None:
            mechanisms.resolve_families(args.families)
    parse_date(args.date)
    if args.shard_size <= 0:
        raise UserError(f"--shard-size must be positive, got {args.shard_size}")
    make_setter(args.setter, args.model, args.fallback_model)  # a bad setter or a missing model
    if args.max_cost_usd is not None and not args.max_cost_usd > 0:
        raise UserError(f"--max-cost-usd must be positive, got {args.max_cost_usd}")
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    if args.processes is not None and args.processes < 0:
        raise UserError(f"--processes must be 0 or more, got {args.processes}")
    if args.processes and args.runner == "dask":
        raise UserError("--processes applies to --runner threads; with dask, --workers sets the worker processes")
    stage_cache_days()  # a bad $VHD_STAGE_CACHE_DAYS
    check_stage_cache(args.stage_cache)  # a bad --stage-cache (or $VHD_STAGE_CACHE): a malformed URL, a missing bucket
    warehouse_of(args, read=False, write=True)


def check_eval(args) -> None:
    from cli.evaluate import check_eval_args

    check_eval_args(args)
    warehouse_of(args, write=True)


def check_serve(args) -> None:
    import mechanisms
    from schemas.shard import check_count, check_families

    check_count(args.count)
    if check_families(args.families) is not None:
        mechanisms.resolve_families(args.families)
    from setter import make_setter

    make_setter(args.setter, args.model)  # --model with the template setter, or litellm without one
    if args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    warehouse_of(args, read=False, write=True)


def cmd_generate(args) -> int:
    from setter import make_setter
    from tasks.plan import plan_shards, plan_total

    wh = warehouse_of(args, read=False, write=True)  # checked with the rest of the input by preflight(), before Prefect
    shards = plan_shards(args.date, args.count, args.families, args.split, args.setter, args.model, args.shard_size,
                         args.plan_name, args.fallback_model, args.tier)
    total = plan_total(args.plan_name, args.count)
    make_setter(args.setter, args.model, args.fallback_model)  # fails fast on a bad setter or missing model
    from flows.runners import check_runner

    check_runner(args.runner, args.dask_address, args.max_cost_usd)  # before the bar: a one-line error
    from tasks import pool

    if args.runner == "threads" and pool.processes_for(args.processes, total) > 1:
        pool.start_fork_server()  # the workers' imports run beside this process's (Prefect's, the flow's)
    from cli import interrupts

    interrupts.set_note(interrupts.run_note(wh, shards[0].date))  # Ctrl-C: whether this run committed, how to finish
    from cli.progress import generation_progress
    from flows.generate import run_generate

    with generation_progress(total, enabled=not args.no_progress):
        summary = run_generate(workers=args.workers, runner=args.runner, dask_address=args.dask_address,
                               processes=args.processes, stage_cache=args.stage_cache,
                               date=shards[0].date, count=args.count, families=args.families,
                               split=args.split, setter=args.setter, model=args.model, warehouse=wh.url,
                               shard_size=args.shard_size, plan_name=args.plan_name,
                               fallback_model=args.fallback_model, max_cost_usd=args.max_cost_usd,
                               tier=args.tier)
    _print_summary(summary, wh)
    nothing_admitted = summary.get("requested", 0) > 0 and summary["admitted"] == 0  # e.g. every model call failed
    return 1 if summary["status"] == "failed" or nothing_admitted else 0


def _print_summary(summary: dict, wh) -> None:
    from warehouse.catalog import run_query

    cost = summary["cost_usd"]
    console.print(
        f"[bold]run {summary['run_id']}[/bold] on {summary['run_date']}: {summary['admitted']} admitted "
        f"({summary['new_environments']} new), {summary['rejected']} rejected attempts, "
        f"{summary['wall_seconds']:.1f} s, cost {'unknown' if cost is None else f'${cost:.4f}'}, "
        f"status {summary['status']}"
    )
    if summary.get("error"):
        console.print(f"[yellow]incomplete:[/yellow] {escape(str(summary['error']))}")
    table = run_query(wh, "SELECT family, split, count(*) AS environments, round(avg(tool_count), 1) AS tools, "
                          "round(avg((u0 - u_idle) / nullif(u_star - u_idle, 0)), 3) AS default_position, "
                          f"round(avg(online_score), 3) AS online_score FROM environments "
                          f"WHERE date = DATE '{summary['run_date']}' GROUP BY ALL ORDER BY ALL")
    print_rows(*arrow_rows(table), title=f"environments of {summary['run_date']} in {wh.url}")
    console.print(f'Query them: vhd query "SELECT env_id, family, title FROM environments LIMIT 5" '
                  f"--warehouse {wh.url}")


def cmd_query(args) -> int:
    from warehouse.catalog import QueryError, run_query

    if args.timeout is not None and not args.timeout > 0:
        raise UserError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    from cli import interrupts

    interrupts.set_note("interrupted: the query was stopped; it changes nothing, so nothing needs finishing")
    wh = warehouse_of(args)
    with _query_timeout(args.timeout) as expired:
        try:
            table = run_query(wh, args.sql)
        except QueryError:
            if expired.is_set():
                raise QueryError(f"the query ran longer than --timeout {args.timeout:g} s and was stopped; give it "
                                 "more time or narrow it (a WHERE on date or family, a LIMIT)") from None
            raise
    print_rows(*arrow_rows(table), fmt=args.format)
    return 0


@contextmanager
def _query_timeout(seconds: float | None):
    """An event set when `seconds` have passed, after stopping the running queries (None: no limit)."""
    import threading

    from warehouse.catalog import interrupt_queries

    expired = threading.Event()

    def expire() -> None:
        expired.set()
        interrupt_queries()

    timer = threading.Timer(seconds, expire) if seconds is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        yield expired
    finally:
        if timer is not None:
            timer.cancel()


def cmd_families(args) -> int:
    import mechanisms

    order = list(mechanisms.GROUPS)
    rows = [(m.id, m.version, m.group, f"{m.size_range[0]}-{m.size_range[1]}",
             f"{m.horizon_range[0]}-{m.horizon_range[1]}", " ".join(f"{s}x{h}" for s, h in m.grid()),
             _tiers_text(m), m.summary)
            for m in sorted(mechanisms.families(), key=lambda m: (order.index(m.group), m.id))]
    columns = ["family", "version", "group", "size", "horizon", "grid", "tiers", "summary"]
    print_rows(columns, rows, fmt=args.format)
    return 0


def _tiers_text(mechanism) -> str:
    """Each tier's cells, and the share of the probe allowance its budget grants when not all of it."""
    parts = []
    for name, tier in mechanism.tiers().items():
        share = "" if tier.probe_share >= 1 else f" (probes {tier.probe_share:.0%})"
        parts.append(f"{name} {' '.join(f'{s}x{h}' for s, h in tier.grid)}{share}")
    return "; ".join(parts)


def cmd_solve(args) -> int:
    import mechanisms
    from cli.solving import example_params, read_params, solve_report

    mechanism = mechanisms.get(args.family)
    if args.example:
        print(json.dumps(example_params(mechanism, args.seed), indent=1))
        return 0
    report = solve_report(mechanism, read_params(mechanism, args.params))
    if args.format == "json":
        print(dumps(report, indent=1))
        return 0
    console.print(f"[bold]{report['family']}[/bold] v{report['version']}: u* = {report['u_star']:.6g}  "
                  f"(solver: {report['solver']}, {report['solve_seconds'] * 1000:.1f} ms)")
    console.print(f"default policy u0 = {report['u0']:.6g}, idle u_idle = {report['u_idle']:.6g}")
    for name, u in report["baselines"].items():
        console.print(f"baseline {name}: u = {u:.6g}")
    print_rows(["step", "operation", "arguments"],
               [(i, a["op"], json.dumps(a["args"])) for i, a in enumerate(report["optimal_actions"], start=1)],
               title="optimal plan")
    if report["facts"]:
        print_literal("solver facts: ", literal(dumps(report["facts"])[:2000]))
    return 0


def load_spec(wh, env_id: str):
    """The catalog's spec of `env_id`, verified as every reader verifies it (envs.catalog.load_spec: its id, its
    size, its family), one line if not."""
    from envs.catalog import load_spec as verified_spec

    return verified_spec(env_id, wh)


def cmd_show(args) -> int:
    spec = load_spec(warehouse_of(args), args.env_id)
    if args.format == "json":
        print(spec.model_dump_json(indent=1))
        return 0
    r, ref = spec.rendering, spec.reference
    print_literal(literal(r.title, style="bold"), literal(f"  ({spec.env_id})"))
    print_literal(literal(f"family {spec.family} v{spec.version}, split {spec.split}, size {spec.size}, horizon "
                          f"{spec.horizon}, domain {r.domain} ({r.passage_id}), setter {spec.setter}, "
                          f"budget {spec.turn_budget}"))
    console.print(f"u* = {ref.u_star:.6g} ({ref.solver}), u0 = {ref.u0:.6g}, u_idle = {ref.u_idle:.6g}")
    print_rows(["tool", "kind", "operation", "description"],
               [(t.name, t.kind, t.operation, t.description) for t in r.tools], title="tools")
    print_literal("[bold]hidden-mode instructions[/bold]\n", literal(r.instructions["hidden"]))
    return 0


def cmd_play(args) -> int:
    from envs import Environment, play

    spec = load_spec(warehouse_of(args), args.env_id)
    env = Environment(spec, args.mode)
    if args.agent == HUMAN:
        result = _play_interactively(env)
    else:
        result = play(env, args.agent, seed=args.seed)
    if args.format == "json":
        print(dumps({"env_id": result.env_id, "mode": result.mode, "agent": result.agent, "score": result.score,
                     "u": result.u, "turns": result.turns, "errors": result.errors,
                     "trajectory": result.trajectory}, indent=1))
        return 0
    if args.agent != HUMAN:
        print_rows(["turn", "tool", "arguments", "result"],
                   [(i, s["tool"], dumps(s["arguments"]), dumps(s["result"]))
                    for i, s in enumerate(result.trajectory, start=1)], title=f"{args.agent} in {args.mode} mode")
    console.print(f"score {result.score:.4f}  (u = {result.u:.6g}, u* = {spec.reference.u_star:.6g}, "
                  f"u0 = {spec.reference.u0:.6g}), {result.turns} turns, {result.errors} errors")
    return 0


def _play_interactively(env):
    print_literal(literal(env.instructions + "\n"))
    print_rows(["tool", "arguments", "description"],
               [(t["function"]["name"], ", ".join(t["function"]["parameters"].get("properties", {})),
                 t["function"]["description"]) for t in env.tools()], title="tools")
    console.print('Type a call as: tool_name {"argument": value}   (empty line or "quit" to stop)')
    while not env.done:
        try:
            line = input(f"[{env.turns}/{env.spec.turn_budget}]> ").strip()
        except EOFError:
            break
        if line in ("", "quit", "exit"):
            break
        name, _, rest = line.partition(" ")
        print_literal(literal(env.call(name, rest.strip() or None)))
    return env.result(HUMAN)


def cmd_report(args) -> int:
    from warehouse.catalog import run_query
    from warehouse.reports import REPORTS

    wh = warehouse_of(args)
    if args.kind is None:
        from reports.command import write_full_report
        from warehouse.preflight import check_output_file

        check_output_file(args.out)  # before the report is built

        return write_full_report(wh, args.since, args.out)
    if args.since:
        raise UserError("--since applies to the whole report only: run vhd report --since DATE without a kind")
    if args.kind == EVAL_REPORT:
        from cli.evaluate import report_eval

        return report_eval(wh, args.format)
    print_sections([(title, arrow_rows(run_query(wh, sql))) for title, sql in REPORTS[args.kind]], fmt=args.format)
    return 0


def cmd_warehouse(args) -> int:
    from warehouse.maintenance import clean, compact, inspect

    wh = warehouse_of(args, write=args.action in ("compact", "clean"))
    if args.action == "compact":
        merged = compact(wh)
        for line in merged:
            print(line)
        print(f"compacted {len(merged)} partition(s) of {wh.url}" if merged else f"nothing to compact in {wh.url}")
        return 0
    if args.action == "clean":
        removed, kept = clean(wh, args.min_age_hours)
        for line in removed + kept:
            print(line)
        print(f"removed {len(removed)} leftover file(s) from {wh.url}"
              + (f"; kept {len(kept)} younger than {args.min_age_hours:g} h" if kept else ""))
        return 0
    problems, leftovers = inspect(wh)
    for line in problems + leftovers:
        print(line)
    summary = f"{len(problems)} problem(s) in {wh.url}" if problems else f"no problems in {wh.url}"
    if leftovers:
        summary += (f"; {len(leftovers)} leftover file(s) no query sees: vhd warehouse clean removes those older "
                    f"than 24 h")
    print(summary)
    return 1 if problems else 0


def cmd_serve(args) -> int:
    from flows.deployments import serve_nightly
    from setter import make_setter
    from tasks.plan import plan_shards

    plan_shards(None, args.count, args.families)  # a bad count or family is refused now, not at 02:00
    make_setter(args.setter, args.model)
    wh = warehouse_of(args, read=False, write=True)
    serve_nightly(name=args.name, cron=args.cron, timezone=args.timezone, count=args.count,
                  families=args.families, warehouse=wh.url, setter=args.setter, model=args.model,
                  workers=args.workers)
    return 0

