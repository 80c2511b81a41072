"""`vhd doctor`: the configuration in force and whether each service it names is reachable, with what to do if not.

Secrets are never printed: API keys, tokens and passwords show as "set" or "unset", and credentials inside URLs
are masked. The exit code is 1 when something the configuration needs is unreachable (the warehouse always; the
Prefect API, the LLM endpoint and the Dask scheduler when configured).
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit, urlunsplit

OK, FAIL, NOTE = "ok", "FAIL", "note"
SECRET_WORDS = ("key", "token", "secret", "password")
TIMEOUT_S = 5.0


@dataclass
class Check:
    service: str
    status: str  # ok | FAIL | note (not configured, or not needed by this configuration)
    detail: str
    fix: str = ""


def mask_url(url: str | None) -> str | None:
    """A URL without the user:password part (shown as ***)."""
    if not url:
        return url
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def is_secret(name: str) -> bool:
    return any(word in name.lower() for word in SECRET_WORDS)


def shown(name: str, value) -> str:
    """A setting as doctor prints it: secrets as set/unset, URLs without credentials."""
    if is_secret(name):
        return "set" if value else "unset"
    if isinstance(value, str) and "://" in value:
        return mask_url(value)
    return "unset" if value is None else str(value)


def configuration(args) -> tuple[list[tuple[str, str, str]], dict]:
    """(setting, value, where it comes from) rows, and the settings the checks use."""
    from tasks.common import cpu_hour_usd
    from warehouse.location import ENV_LOCATION, ENV_S3_ENDPOINTS, resolve_warehouse

    rows: list[tuple[str, str, str]] = []
    wh = resolve_warehouse(args.warehouse)
    source = "--warehouse" if args.warehouse else (f"${ENV_LOCATION}" if os.environ.get(ENV_LOCATION) else "default")
    rows.append(("warehouse", wh.url, source))
    if not wh.is_local:
        endpoint = next(((n, os.environ[n]) for n in ENV_S3_ENDPOINTS if os.environ.get(n)), None)
        rows.append(("s3 endpoint", mask_url(endpoint[1]) if endpoint else "AWS default",
                     f"${endpoint[0]}" if endpoint else "default"))
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
            rows.append((name, shown(name, os.environ.get(name)), "environment"))
    from cli.prefect_server import Record, configured_api_url, server_home

    # the environment's or the active Prefect profile's; when neither names one and the local server answers,
    # cli.main has exported its URL (doctor never starts it)
    api = configured_api_url()
    local = Record.read(server_home())
    if api and local and api == local.url:
        rows.append(("prefect api", f"{api} (the local server; UI {local.ui})", f"{local.home} (vhd server status)"))
    else:
        rows.append(("prefect api", mask_url(api) if api else "unset: vhd starts and reuses a local server",
                     "$PREFECT_API_URL"))
    if os.environ.get("PREFECT_API_KEY"):
        rows.append(("PREFECT_API_KEY", "set", "environment"))
    rows.append(("setter", args.setter, "--setter"))
    rows.append(("model", args.model or "none", "--model"))
    if args.fallback_model:
        rows.append(("fallback model", args.fallback_model, "--fallback-model"))
    from setter.llm_client import custom_prices, llm_options, retries

    options = llm_options()
    for name, value in sorted(options.items()):
        rows.append((f"llm option {name}", shown(name, value), "$VHD_LLM_OPTIONS"))
    rows.append(("llm retries", str(retries()), "$VHD_LLM_RETRIES"))
    rows.append(("llm cache", os.environ.get("VHD_LLM_CACHE", "~/.cache/vhdplay/llm-calls"), "$VHD_LLM_CACHE"))
    rows.append(("llm response format", os.environ.get("VHD_LLM_RESPONSE_FORMAT", "json_schema"),
                 "$VHD_LLM_RESPONSE_FORMAT"))
    for model in filter(None, (args.model, args.fallback_model)):
        rows.append((f"price of {model}", model_price(model, custom_prices()), "USD per million tokens"))
    rows.append(("compute price", f"${cpu_hour_usd():g} per CPU-hour", "$VHD_CPU_HOUR_USD"))
    rows.append(("runner", args.runner + (f" at {args.dask_address}" if args.dask_address else ""), "--runner"))
    return rows, {"warehouse": wh, "api": api, "options": options}


def model_price(model: str, custom: dict[str, tuple[float, float]]) -> str:
    if model in custom:
        prompt, completion = custom[model]
        return f"{prompt:g} prompt / {completion:g} completion ($VHD_LLM_PRICES)"
    import litellm

    entry = litellm.model_cost.get(model) or litellm.model_cost.get(model.split("/", 1)[-1])
    if entry and entry.get("input_cost_per_token") is not None:
        return (f"{entry['input_cost_per_token'] * 1e6:g} prompt / "
                f"{(entry.get('output_cost_per_token') or 0) * 1e6:g} completion (litellm's price map)")
    return f'unknown: costs land as null; set $VHD_LLM_PRICES, e.g. {{"{model}": [0.2, 0.8]}}'


def check_warehouse(wh) -> list[Check]:
    """Readable (its committed tables answer a query) and writable (a probe file is written and removed)."""
    from warehouse.catalog import run_query

    checks = []
    try:
        runs = run_query(wh, "SELECT count(*) AS n FROM runs").to_pylist()[0]["n"]
        checks.append(Check("warehouse readable", OK, f"{wh.url}: {runs} committed run(s)"))
    except Exception as error:  # noqa: BLE001 - any failure is the finding
        checks.append(Check("warehouse readable", FAIL, f"{wh.url}: {_reason(error)}",
                            "run `vhd warehouse check`; for s3:// check the endpoint and credentials above"))
    probe = wh.path(f"_doctor/probe-{uuid.uuid4().hex}")
    try:
        wh.fs.makedirs(wh.path("_doctor"), exist_ok=True)
        with wh.fs.open(probe, "wb") as handle:
            handle.write(b"vhd doctor")
        with wh.fs.open(probe, "rb") as handle:
            if handle.read() != b"vhd doctor":
                raise OSError("the probe file read back differently")
        wh.fs.rm(probe)
        if wh.is_local:
            wh.fs.rmdir(wh.path("_doctor"))
        checks.append(Check("warehouse writable", OK, f"{wh.url}: a probe file was written, read and removed"))
    except Exception as error:  # noqa: BLE001
        checks.append(Check("warehouse writable", FAIL, f"{wh.url}: {_reason(error)}",
                            "give a writable folder (--warehouse, $VHD_WAREHOUSE) or an existing bucket you may "
                            "write to"))
    return checks


def check_prefect(api: str | None) -> list[Check]:
    if not api:
        return [local_server_check()]
    from flows.deployments import ServerUnavailable, check_server

    try:
        check_server()
    except ServerUnavailable as error:
        return [Check("prefect api", FAIL, str(error).split(";")[0], str(error).split(";", 1)[-1].strip())]
    checks = [Check("prefect api", OK, f"{mask_url(api)} is healthy")]
    return checks + check_nightly()


def local_server_check() -> Check:
    """No API is configured and the local server does not answer (cli.main exports its URL when it does)."""
    from cli.prefect_server import Record, alive, server_home

    home = server_home()
    record = Record.read(home)
    if record is not None and alive(record.pid):
        return Check("prefect api", FAIL, f"the local server (pid {record.pid}, {record.url}) runs but does not answer",
                     f"see its log {record.log}; `vhd server stop`, then `vhd server start`")
    state = f"its record in {home} is stale (pid {record.pid} is gone)" if record else f"none recorded in {home}"
    return Check("prefect api", NOTE, f"not configured; the local server is not running ({state})",
                 "the first `vhd generate` starts it, or `vhd server start` now; or set PREFECT_API_URL")


def check_nightly() -> list[Check]:
    """Whether the nightly deployment is registered, and whether a worker polls its pool (informational)."""
    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as client:
            deployment = client.read_deployment_by_name("nightly/nightly")
            schedules = ", ".join(f"{s.schedule.cron} {s.schedule.timezone}" for s in deployment.schedules
                                  if getattr(s.schedule, "cron", None))
            pool = deployment.work_pool_name
            workers = client.read_workers_for_work_pool(pool) if pool else []
    except Exception as error:  # noqa: BLE001 - an unregistered deployment is a finding, not a crash
        return [Check("nightly deployment", NOTE, f"not registered ({type(error).__name__})",
                      "prefect --no-prompt deploy --prefect-file infra/prefect.yaml --all (or vhd serve)")]
    where = f"pool {pool}" if pool else "served by `vhd serve`"
    checks = [Check("nightly deployment", OK, f"nightly/nightly, {schedules or 'no schedule'}, {where}")]
    if pool:
        online = [w for w in workers if str(getattr(w, "status", "")).upper().endswith("ONLINE")]
        checks.append(Check("nightly worker", OK if online else NOTE,
                            f"{len(online)} online worker(s) in pool {pool}",
                            "" if online else f"start one: prefect worker start --pool {pool} --type process"))
    return checks


def check_llm(setter: str, model: str | None, options: dict) -> list[Check]:
    needed = setter == "litellm"
    api_base = options.get("api_base") or options.get("base_url")
    if api_base:
        return [_check_endpoint(api_base, options, needed)]
    if not model:
        return [Check("llm endpoint", NOTE, "not configured (the template setter needs none)")]
    import litellm

    report = litellm.validate_environment(model=model)
    missing = report.get("missing_keys") or []
    if missing:
        return [Check("llm provider keys", FAIL if needed else NOTE, f"{model}: {', '.join(missing)} unset",
                      f"export {' and '.join(missing)} (never put keys on the command line)")]
    return [Check("llm provider keys", OK, f"{model}: the provider's key(s) are set (the hosted API is not called)")]


def _check_endpoint(api_base: str, options: dict, needed: bool) -> Check:
    import httpx

    url = api_base.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {options['api_key']}"} if options.get("api_key") else {}
    try:
        response = httpx.get(url, headers=headers, timeout=TIMEOUT_S)
    except httpx.HTTPError as error:
        return Check("llm endpoint", FAIL if needed else NOTE, f"{mask_url(api_base)}: {_reason(error)}",
                     "start the local model (`vhd llm serve --port 8080`) or fix api_base in $VHD_LLM_OPTIONS")
    if response.status_code >= 400:
        return Check("llm endpoint", FAIL if needed else NOTE, f"{mask_url(api_base)}: HTTP {response.status_code}",
                     "check api_base (OpenAI-compatible servers end in /v1) and the api_key option")
    try:
        names = [m.get("id") for m in response.json().get("data", [])]
    except (ValueError, AttributeError):
        names = []
    return Check("llm endpoint", OK, f"{mask_url(api_base)} answers; models: {', '.join(map(str, names)) or '?'}")


def check_dask(runner: str, address: str | None) -> list[Check]:
    if not address:
        detail = "a local cluster is started per run" if runner == "dask" else "not used (threads)"
        return [Check("dask scheduler", NOTE, detail)]
    from flows.runners import RunnerError, check_dask_address

    try:
        check_dask_address(address)
    except RunnerError as error:
        return [Check("dask scheduler", FAIL, str(error).split(" (")[0],
                      "start `dask scheduler --port 8786` and `dask worker ADDRESS` (README, Scaling out)")]
    return [Check("dask scheduler", OK, f"{address} answers as a dask scheduler")]


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}"[:300] if text else type(error).__name__


def cmd_doctor(args) -> int:
    from cli.output import console, print_rows

    rows, settings = configuration(args)
    checks = [*check_warehouse(settings["warehouse"]), *check_prefect(settings["api"]),
              *check_llm(args.setter, args.model, settings["options"]), *check_dask(args.runner, args.dask_address)]
    failed = [c for c in checks if c.status == FAIL]
    if args.format == "json":
        print(json.dumps({"configuration": [dict(zip(("setting", "value", "source"), r, strict=True)) for r in rows],
                          "checks": [asdict(c) for c in checks], "ok": not failed}, indent=1))
    else:
        print_rows(["setting", "value", "from"], rows, title="configuration in force")
        print_rows(["service", "status", "detail", "what to do"],
                   [(c.service, c.status, c.detail, c.fix) for c in checks], title="services")
        console.print(f"{len(failed)} service(s) unreachable: " + ", ".join(c.service for c in failed) if failed
                      else "everything needed is reachable")
    return 1 if failed else 0
