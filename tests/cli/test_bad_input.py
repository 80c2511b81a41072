"""Bad input gets one line before any work starts: exit code 2, one `error: ...` line on stderr, no traceback, no
Prefect server started, nothing created, and a warehouse that had data keeps exactly that data.

Every case runs the real `vhd` command as a subprocess; S3 is a real moto server.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envs.export import write_rows
from tasks.plan import MAX_COUNT, PlanError, plan_shards
from tests.support import make_spec
from tests.warehouse.test_catalog import _free_port, moto_endpoint  # noqa: F401 - a fixture
from tests.warehouse.test_landing import DATE, environments_frame
from warehouse.landing import commit_run, land
from warehouse.location import resolve_warehouse

VHD = str(Path(sys.executable).parent / "vhd")
MISSING = "no warehouse at"


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """This environment without warehouse, AWS and Prefect API settings; a private VHD_HOME and PREFECT_HOME, so a
    Prefect server started by mistake would show (its folder) and fail fast (a 1 s start timeout)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VHD_", "AWS_", "PREFECT_"))}
    env.update(VHD_HOME=str(home / "vhd-home"), PREFECT_HOME=str(home / "prefect-home"),
               VHD_PREFECT_START_TIMEOUT="1", VHD_LLM_CACHE="off")
    return {**env, **extra}


def vhd(*args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([VHD, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def refused(result: subprocess.CompletedProcess, *needles: str) -> str:
    """The one error line of a refused command (exit 2, nothing else on stderr, no traceback)."""
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert lines[0].startswith("error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def fingerprint(root: Path) -> dict[str, str]:
    """Every stored file (the caches under _index/ aside) and its content hash."""
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file() and path.relative_to(root).parts[0] != "_index"}


def listing(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[Path, list[str]]:
    """A local warehouse with two committed environments built from real specs (show, play and export work)."""
    root = tmp_path_factory.mktemp("stored") / "wh"
    specs = [make_spec("knapsack", 0), make_spec("lp", 1)]
    frame = environments_frame([spec.env_id for spec in specs]).assign(
        family=[spec.family for spec in specs], spec_json=[spec.model_dump_json() for spec in specs])
    wh = resolve_warehouse(str(root))
    commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", frame, DATE, "s1")]}, {})
    return root, [spec.env_id for spec in specs]


@pytest.fixture
def place(tmp_path) -> Path:
    """A working folder holding a file (`afile`) and a folder (`adir`)."""
    (tmp_path / "afile").write_text("keep me")
    (tmp_path / "adir").mkdir()
    (tmp_path / "adir" / "old.txt").write_text("old")
    return tmp_path


def assert_untouched(stored_root: Path, before: dict[str, str], place: Path, place_before: list[str]) -> None:
    assert fingerprint(stored_root) == before
    assert listing(place) == place_before
    assert (place / "afile").read_text() == "keep me"


# --- vhd generate ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "needles"), [
    (["--warehouse", "{place}/afile/sub"], ["afile, which is a file"]),
    (["--warehouse", "/proc/vhd"], ["/proc (proc), a pseudo filesystem"]),
    (["--warehouse", "/sys/vhd"], ["/sys (sysfs), a pseudo filesystem"]),
    (["--count", "1000000000000000", "--warehouse", "{stored}"], ["above the maximum of 1,000,000"]),
    (["--count", "1000001", "--warehouse", "{stored}"], ["count 1,000,001 is above the maximum of 1,000,000"]),
    (["--split", "../escape", "--warehouse", "{stored}"], ["split '../escape' must be"]),
    (["--split", "a/b", "--warehouse", "{stored}"], ["split 'a/b' must be"]),
    (["--split", "", "--warehouse", "{stored}"], ["split '' must be"]),
    (["--families", "", "--warehouse", "{stored}"], ["--families is empty"]),
    (["--families", " ", "--warehouse", "{stored}"], ["--families is empty"]),
])
def test_generate_refuses_bad_input_before_any_work(stored, place, argv, needles):
    root, _ = stored
    before, place_before = fingerprint(root), listing(place)
    argv = [arg.format(place=place, stored=root) for arg in argv]
    started = time.monotonic()
    refused(vhd("generate", "--no-progress", *argv, env=clean_env(place.parent / f"{place.name}-home"), cwd=place),
            *needles)
    assert time.monotonic() - started < 60  # a count of 10**15 is not planned (it took 41 s and 3.7 GB)
    assert not (place.parent / f"{place.name}-home" / "vhd-home" / "prefect-server").exists()  # no server started
    assert_untouched(root, before, place, place_before)


def test_the_plan_itself_refuses_a_count_above_the_maximum():
    """A deployment or a script calling the plan directly gets the same refusal, before any shard is built."""
    assert sum(shard.count for shard in plan_shards("2026-01-01", MAX_COUNT, "knapsack")) == MAX_COUNT
    for count in (MAX_COUNT + 1, 10**15):
        started = time.monotonic()
        with pytest.raises(PlanError, match="above the maximum of 1,000,000"):
            plan_shards("2026-01-01", count)
        assert time.monotonic() - started < 1
    for split in ("../x", "a/b", "", ".."):
        with pytest.raises(PlanError, match="split"):
            plan_shards("2026-01-01", 5, split=split)


def test_generate_on_s3_without_credentials(tmp_path, moto_endpoint):  # noqa: F811
    (tmp_path / "empty").write_text("")
    env = clean_env(tmp_path, AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "empty"),
                    AWS_CONFIG_FILE=str(tmp_path / "empty"), AWS_EC2_METADATA_DISABLED="true", HOME=str(tmp_path),
                    VHD_S3_ENDPOINT_URL=moto_endpoint)
    line = refused(vhd("generate", "--count", "5", "--warehouse", "s3://vhd-bucket/wh", env=env),
                   "no AWS credentials found for s3://vhd-bucket/wh", "AWS_ACCESS_KEY_ID")
    assert "NoCredentialsError" not in line
    assert not (tmp_path / "vhd-home" / "prefect-server").exists()


def test_generate_into_a_missing_bucket(tmp_path, moto_endpoint):  # noqa: F811
    env = clean_env(tmp_path, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
                    VHD_S3_ENDPOINT_URL=moto_endpoint)
    refused(vhd("generate", "--count", "5", "--warehouse", "s3://vhd-no-such-bucket/wh", env=env),
            "bucket 'vhd-no-such-bucket' of s3://vhd-no-such-bucket/wh does not exist")
    assert not (tmp_path / "vhd-home" / "prefect-server").exists()


# --- a missing warehouse is named as missing -------------------------------------------------------------------

READ_COMMANDS = [
    ["query", "SELECT count(*) FROM environments"],
    ["show", "knapsack-0"],
    ["play", "knapsack-0"],
    ["report", "--out", "{place}/report.html"],
    ["report", "cost"],
    ["export", "--out", "{place}/out.jsonl"],
    ["warehouse", "check"],
    ["warehouse", "compact"],
    ["eval", "--agent", "oracle"],
    ["serve-envs", "--port", "{port}"],
    ["serve-mcp", "knapsack-0"],
]


@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_a_missing_warehouse_is_named_as_missing(place, argv):
    place_before = listing(place)
    argv = [arg.format(place=place, port=_free_port()) for arg in argv]
    missing = place / "mistyped_wh"
    refused(vhd(*argv, "--warehouse", str(missing), env=clean_env(place.parent / f"{place.name}-home"), timeout=60),
            f"{MISSING} {missing} (no committed runs); run `vhd generate")
    assert listing(place) == place_before and not missing.exists()


def test_the_default_warehouse_and_a_foreign_folder_are_named_as_missing(place):
    env = clean_env(place.parent / f"{place.name}-home")
    refused(vhd("query", "SELECT 1", env=env, cwd=place), f"{MISSING} {place / 'vhd_warehouse'}")
    refused(vhd("warehouse", "check", "--warehouse", str(place / "adir"), env=env), f"{MISSING} {place / 'adir'}")
    refused(vhd("query", "SELECT 1", "--warehouse", str(place / "afile" / "wh"), env=env), "afile, which is a file")
    refused(vhd("query", "SELECT 1", "--warehouse", "/proc", env=env), "pseudo filesystem")


def test_a_warehouse_whose_run_never_committed_reads_as_empty(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    land(wh, "environments", environments_frame(["e1"]), DATE, "s1")  # a run that crashed before its commit
    result = vhd("query", "SELECT count(*) AS n FROM environments", "--format", "json", "--warehouse", wh.url,
                 env=clean_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"n": 0}]


# --- S3 without credentials, for reading too -------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["query", "SELECT 1"], ["warehouse", "check"], ["export", "--out", "{tmp}/x.jsonl"],
                                  ["show", "knapsack-0"]], ids=lambda argv: argv[0])
def test_reading_s3_without_credentials(tmp_path, moto_endpoint, argv):  # noqa: F811
    (tmp_path / "empty").write_text("")
    env = clean_env(tmp_path, AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "empty"),
                    AWS_CONFIG_FILE=str(tmp_path / "empty"), AWS_EC2_METADATA_DISABLED="true", HOME=str(tmp_path),
                    VHD_S3_ENDPOINT_URL=moto_endpoint)
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    refused(vhd(*argv, "--warehouse", "s3://vhd-bucket/wh", env=env), "no AWS credentials found for s3://vhd-bucket/wh")
    assert not (tmp_path / "x.jsonl").exists()


def test_an_s3_warehouse_that_is_there_answers_and_an_empty_prefix_is_missing(tmp_path, moto_endpoint):  # noqa: F811
    variables = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
                 "VHD_S3_ENDPOINT_URL": moto_endpoint}
    env = clean_env(tmp_path, **variables)
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        wh = resolve_warehouse("s3://vhd-bad-input/wh")
        wh.fs.mkdir("vhd-bad-input")
        commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", environments_frame(["e1", "e2"]),
                                                             DATE, "s1")]}, {})
    finally:
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
    result = vhd("query", "SELECT count(*) AS n FROM environments", "--format", "json", "--warehouse", wh.url, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"n": 2}]
    refused(vhd("query", "SELECT 1", "--warehouse", "s3://vhd-bad-input/typo", env=env),
            f"{MISSING} s3://vhd-bad-input/typo")


# --- output files ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "needle"), [
    (["export", "--out", "/proc/out.jsonl"], "pseudo filesystem"),
    (["export", "--out", "{place}/afile/out.jsonl"], "afile, which is a file"),
    (["export", "--out", "{place}/adir"], "is a folder; give a file path"),
    (["report", "--out", "/proc/vhd/report.html"], "pseudo filesystem"),
    (["report", "--out", "{place}/adir"], "is a folder; give a file path"),
    (["report", "--out", "{place}/afile/report.html"], "afile, which is a file"),
], ids=lambda value: value if isinstance(value, str) else " ".join(value[:3]).replace("/", "_"))
def test_output_paths_are_checked_before_the_work(stored, place, argv, needle):
    root, _ = stored
    before, place_before = fingerprint(root), listing(place)
    argv = [arg.format(place=place) for arg in argv]
    refused(vhd(*argv, "--warehouse", str(root), env=clean_env(place.parent / f"{place.name}-home")), needle)
    assert_untouched(root, before, place, place_before)  # no .tmp file left in the folder either


def test_a_failed_export_write_leaves_no_temporary_file(place):
    with pytest.raises(OSError):
        write_rows([{"env_id": "e"}], place / "adir", "jsonl")  # a folder is in the way of the rename
    assert listing(place) == ["adir", "adir/old.txt", "afile"]


# --- vhd eval ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "needle"), [
    (["--agent", "litellm", "--model", "openai/x", "--max-turns", "-1"], "--max-turns must be at least 1, got -1"),
    (["--agent", "oracle", "--max-turns", "-1"], "--max-turns must be at least 1"),
    (["--agent", "oracle", "--max-turns", "3"], "--max-turns is for --agent litellm"),
    (["--agent", "litellm", "--model", "openai/x", "--max-tokens", "0"], "--max-tokens must be at least 1"),
    (["--agent", "oracle", "--concurrency", "0"], "--concurrency must be at least 1"),
])
def test_eval_refuses_bad_limits_before_any_work(stored, place, argv, needle):
    root, _ = stored
    before, place_before = fingerprint(root), listing(place)
    home = place.parent / f"{place.name}-home"
    refused(vhd("eval", *argv, "--warehouse", str(root), env=clean_env(home)), needle)
    assert not (home / "vhd-home" / "prefect-server").exists()
    assert_untouched(root, before, place, place_before)


# --- the stored warehouse still answers --------------------------------------------------------------------------

def test_the_stored_warehouse_answers_after_all_of_it(stored, tmp_path):
    root, env_ids = stored
    env = clean_env(tmp_path)
    result = vhd("query", "SELECT env_id FROM environments ORDER BY 1", "--format", "json", "--warehouse", str(root),
                 env=env)
    assert result.returncode == 0, result.stderr
    assert [row["env_id"] for row in json.loads(result.stdout)] == sorted(env_ids)
    out = tmp_path / "out.jsonl"
    assert vhd("export", "--out", str(out), "--warehouse", str(root), env=env).returncode == 0
    assert len(out.read_text().splitlines()) == 2 * 3


# --- numeric options: every one within its bounds (cli.main.Bound), one line naming it ----------------------------

CORES = len(os.sched_getaffinity(0))


@pytest.mark.parametrize(("argv", "needle"), [
    (["generate", "--processes", "10000"],  # it ran 33 s into "Too many open files"
     f"--processes 10,000 is above the maximum of {4 * CORES} worker processes (4 per core, {CORES} core(s) here)"),
    (["generate", "--processes", "-1"], "--processes must be 0 or more, got -1"),
    (["generate", "--workers", "100000"], "--workers 100,000 is above the maximum of 256 threads"),
    (["generate", "--shard-size", "1000000000"], "--shard-size 1,000,000,000 is above the maximum of 1,000,000"),
    (["generate", "--max-cost-usd", "1e300"], "--max-cost-usd 1e+300 is above the maximum of 1,000,000 USD"),
    (["serve", "--workers", "0"], "--workers must be at least 1, got 0"),
    (["serve", "--count", "2000000"], "--count 2,000,000 is above the maximum of 1,000,000"),
    (["export", "--out", "{place}/x.jsonl", "--limit", str(10**30)],  # a DuckDB "Conversion Error"
     "--limit 1,000,000,000,000,000,000,000,000,000,000 is above the maximum of 1,000,000,000 environments"),
    (["export", "--out", "{place}/x.jsonl", "--seed", str(2**64)], "--seed 18,446,744,073,709,551,616 is above"),
    (["eval", "--agent", "oracle", "--limit", str(10**30)], "--limit 1,000,000,000,000,000,000,000,000,000,000 is"),
    (["eval", "--agent", "oracle", "--concurrency", "1000000"], "--concurrency 1,000,000 is above the maximum of 256"),
    (["eval", "--agent", "litellm", "--model", "openai/x", "--max-turns", "10001"],
     "--max-turns 10,001 is above the maximum of 10,000 model calls per episode"),
    (["eval", "--agent", "litellm", "--model", "openai/x", "--max-tokens", "10000000000"],
     "--max-tokens 10,000,000,000 is above the maximum of 1,000,000 tokens"),
    (["solve", "knapsack", "--example", "--seed", "-1"], "--seed must be 0 or more, got -1"),
    (["play", "knapsack-0", "--seed", str(2**63)], "--seed 9,223,372,036,854,775,808 is above the maximum"),
    (["serve-envs", "--port", "70000"], "--port 70000 is above the maximum of 65535"),
    (["serve-openenv", "--max-sessions", "100000000"], "--max-sessions 100,000,000 is above the maximum of 10,000"),
    (["llm", "serve", "--n-ctx", "1000000000"], "--n-ctx 1,000,000,000 is above the maximum of 131,072 tokens"),
    (["llm", "serve", "--port", "0"], "--port must be 1-65535, got 0"),
    (["warehouse", "clean", "--min-age-hours", "1e9"], "--min-age-hours 1,000,000,000 is above the maximum of 87,600"),
], ids=lambda value: value if isinstance(value, str) else " ".join(value[:3]).replace("/", "_"))
def test_numeric_options_are_bounded_before_any_work(stored, place, argv, needle):
    """Issue 31 (9): a value past an option's bound is one line naming the option and the bound, at once."""
    root, _ = stored
    before, place_before = fingerprint(root), listing(place)
    home = place.parent / f"{place.name}-home"
    argv = [arg.format(place=place) for arg in argv]
    started = time.monotonic()
    refused(vhd(*argv, *(["--warehouse", str(root)] if argv[0] != "llm" else []), env=clean_env(home), timeout=60),
            needle)
    assert time.monotonic() - started < 30
    assert not (home / "vhd-home" / "prefect-server").exists()
    assert_untouched(root, before, place, place_before)


@pytest.mark.parametrize(("argv", "needle"), [
    (["generate", "--count", "abc"], "error: argument --count: invalid int value: 'abc' (see `vhd generate --help`)"),
    (["query", "--timeout", "soon", "select 1"], "argument --timeout: invalid float value: 'soon'"),
    (["generate", "--runner", "spark"], "argument --runner: invalid choice: 'spark'"),
    (["generate", "--no-such-option"], "unrecognized arguments: --no-such-option (see `vhd --help`)"),
])
def test_a_value_argparse_refuses_is_one_line_too(stored, place, argv, needle):
    """Issue 31 (9): a non-number or an unknown option printed argparse's whole usage block before the error."""
    root, _ = stored
    home = place.parent / f"{place.name}-home"
    refused(vhd(*argv, "--warehouse", str(root), env=clean_env(home), timeout=60), needle)


# --- export: the suffix matches the format, an existing file is replaced only with --force -------------------------

@pytest.mark.parametrize(("argv", "needle"), [
    (["--format", "trl", "--out", "{place}/x.csv"], "--out {place}/x.csv does not match --format trl: a trl file "
                                                    "ends in .parquet or .jsonl"),
    (["--format", "skyrl", "--out", "{place}/x.json"], "a skyrl file ends in .parquet or .jsonl"),
    (["--format", "jsonl", "--out", "{place}/x.parquet"], "a jsonl file ends in .jsonl"),
    (["--format", "parquet", "--out", "{place}/x.jsonl"], "a parquet file ends in .parquet"),
    (["--out", "{place}/x.csv"], "--out {place}/x.csv names no export format: end it in .jsonl or .parquet"),
    (["--out", "{place}/afile.jsonl"], "--out {place}/afile.jsonl exists; pass --force to replace it"),
    (["--format", "trl", "--out", "{place}/afile.jsonl"], "exists; pass --force to replace it"),
])
def test_export_refuses_a_suffix_of_another_format_and_an_existing_file(stored, place, argv, needle):
    """Issue 31 (12): `--format trl --out x.csv` wrote JSON lines into a .csv; an existing file was overwritten."""
    root, _ = stored
    (place / "afile.jsonl").write_text("keep me too")
    before, place_before = fingerprint(root), listing(place)
    argv = [arg.format(place=place) for arg in argv]
    refused(vhd("export", *argv, "--warehouse", str(root), env=clean_env(place.parent / f"{place.name}-home")),
            needle.format(place=place))
    assert_untouched(root, before, place, place_before)
    assert (place / "afile.jsonl").read_text() == "keep me too"


def test_export_replaces_an_existing_file_with_force(stored, place):
    root, _ = stored
    env = clean_env(place.parent / f"{place.name}-home")
    for fmt, name in (("jsonl", "rows.jsonl"), ("trl", "trl.parquet"), ("skyrl", "skyrl.jsonl")):
        (place / name).write_text("old")
        result = vhd("export", "--format", fmt, "--out", str(place / name), "--force", "--warehouse", str(root),
                     env=env)
        assert result.returncode == 0, result.stderr
        assert (place / name).read_bytes() != b"old"
    assert len((place / "rows.jsonl").read_text().splitlines()) == 2 * 3


# --- report --format json: one document ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["cost", "setter", "diversity", "eval"])
def test_a_report_in_json_is_one_document(stored, tmp_path, kind):
    """Issue 31 (12): `vhd report cost --format json` printed five JSON arrays back to back (not parseable)."""
    root, _ = stored
    result = vhd("report", kind, "--format", "json", "--warehouse", str(root), env=clean_env(tmp_path))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)  # the whole output, one JSON value
    assert isinstance(document, dict) and len(document) >= 2
    assert all(isinstance(rows, list) for rows in document.values())
    if kind == "diversity":
        assert {row["family"]: row["environments"] for row in document["family x domain coverage"]} == {
            "knapsack": 1, "lp": 1}
