"""`vhd eval` (play agents over selected environments and land the episodes) and `vhd report eval`."""

from __future__ import annotations

from cli.output import arrow_rows, console, escape, print_rows, print_sections
from cli.shared import warehouse_of
from schemas.envspec import MODES
from schemas.errors import UserError

ALL_MODES = "all"  # --mode all: every mode


def parse_modes(text: str) -> list[str]:
    """'hidden', 'written,revealed' or 'all' -> the list of modes; UserError naming the bad one."""
    modes = list(MODES) if text == ALL_MODES else [m.strip() for m in text.split(",") if m.strip()]
    for mode in modes:
        if mode not in MODES:
            raise UserError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}, comma-separated, or 'all'")
    if not modes:
        raise UserError(f"--mode is empty; choose from {', '.join(MODES)} or 'all'")
    return list(dict.fromkeys(modes))


def check_eval_args(args) -> None:
    """UserError with one line for options that cannot work together or are out of range (no Prefect, no model:
    run before anything starts)."""
    from envs.catalog import check_predicate
    from evaluation.episodes import LITELLM

    parse_modes(args.mode)
    if args.max_turns is not None and args.max_turns < 1:
        raise UserError(f"--max-turns must be at least 1, got {args.max_turns}")
    if args.max_tokens < 1:
        raise UserError(f"--max-tokens must be at least 1, got {args.max_tokens}")
    if args.agent != LITELLM:
        if args.model:
            raise UserError(f"--model is for --agent litellm; the {args.agent} baseline plays without a model")
        if args.max_turns is not None:
            raise UserError(f"--max-turns is for --agent litellm; the {args.agent} baseline plays the environment's "
                            "whole turn budget")
    elif not args.model:
        raise UserError("--agent litellm needs --model, e.g. openai/gpt-4o-mini (or openai/gemma-3-270m with "
                        "--api-base for the local model)")
    check_predicate(args.where)
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be at least 1, got {args.limit}")
    if args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {args.concurrency}")


def agent_config(args) -> dict | None:
    """The litellm agent's settings, or None for a baseline (a baseline with --model is refused)."""
    from evaluation.episodes import LITELLM
    from evaluation.llm_agent import AgentConfig

    check_eval_args(args)
    if args.agent != LITELLM:
        return None
    options = {"api_base": args.api_base, "api_key": "local"} if args.api_base else {}
    config = AgentConfig(model=args.model, max_turns=args.max_turns, max_tokens=args.max_tokens,
                         tool_calls=args.tool_calls, options=options)  # validates the limits
    return {"max_turns": config.max_turns, "max_tokens": config.max_tokens, "tool_calls": config.tool_calls,
            "options": config.options}


def cmd_eval(args) -> int:
    from evaluation.reports import run_summary_sql
    from flows.evaluate import run_evaluate
    from warehouse.catalog import run_query

    wh = warehouse_of(args, write=True)  # checked with the rest of the input before Prefect (cli.commands.check_eval)
    modes = parse_modes(args.mode)
    config = agent_config(args)  # checks every option (check_eval_args) before the flow starts
    from cli import interrupts
    from tasks.evaluate import eval_date

    interrupts.set_note(interrupts.run_note(wh, eval_date(), "eval run", "run the same command again"))
    summary = run_evaluate(concurrency=args.concurrency, agent=args.agent, modes=modes, where=args.where,
                           limit=args.limit, model=args.model, agent_config=config, seed=args.seed,
                           warehouse=wh.url)
    console.print(f"[bold]{summary['eval_run_id']}[/bold] on {summary['date']}: {summary['episodes']} episode(s) "
                  f"of {summary['environments']} environment(s), {summary['model_errors']} failed (the model kept "
                  f"failing: score null, error in the row), "
                  f"{summary['wall_seconds']:.1f} s")
    for failure in summary["failures"]:
        console.print(f"[yellow]episode failed:[/yellow] {escape(str(failure))}")
    if not summary["episodes"]:
        console.print(f"no environment matched --where {escape(repr(args.where))}")
        return 1 if summary["failures"] else 0
    table = run_query(wh, run_summary_sql(summary["eval_run_id"]))
    print_rows(*arrow_rows(table), fmt=args.format, title=f"{args.agent}{' ' + args.model if args.model else ''}: "
                                                           "mean score per family and mode")
    # an evaluation in which the model never answered measured nothing: not a success
    every_episode_failed = summary["model_errors"] >= summary["episodes"]
    return 1 if summary["failures"] or every_episode_failed else 0


def report_eval(wh, fmt: str) -> int:
    from evaluation.reports import REPORT
    from warehouse.catalog import run_query

    print_sections([(title, arrow_rows(run_query(wh, sql))) for title, sql in REPORT], fmt=fmt)
    return 0
