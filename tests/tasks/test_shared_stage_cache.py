"""The stage cache in shared storage (issue 30, 3): `vhd generate --stage-cache s3://bucket/prefix` (or
$VHD_STAGE_CACHE) keeps the stages' results there, and a re-run in a fresh process with another Prefect home takes
the finished stages from it and lands the same ids. S3 is a real moto server, Prefect a real server, each run a
real `vhd generate` subprocess."""

from __future__ import annotations

import os
import re
import time

import pytest
from prefect._internal.result_records import ResultRecord, ResultRecordMetadata
from prefect.serializers import PickleSerializer

from tasks.common import StageResultSerializer
from tasks.stage_cache import prune_remote_stage_cache, stage_cache_location
from tests.cli.test_bad_input import clean_env, refused, vhd
from tests.flows.prefect_api import settled_task_runs, stage_states
from tests.warehouse.test_catalog import moto_endpoint  # noqa: F401 - a fixture
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

pytestmark = pytest.mark.integration

STAGES = ("sample", "solve", "render", "validate")
DAY = 86400.0
AWS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture
def bucket(moto_endpoint, monkeypatch, request):  # noqa: F811 - the fixture imported above
    """A fresh bucket of the moto server, with this process's S3 settings pointing at it."""
    for name, value in {**AWS, "VHD_S3_ENDPOINT_URL": moto_endpoint}.items():
        monkeypatch.setenv(name, value)
    name = "vhd-" + request.node.name.lower().replace("_", "-")[:40]
    resolve_warehouse(f"s3://{name}/x").fs.mkdir(name)
    return name


def _records(folder) -> list[str]:
    """The stage records (vhd-*) in a local result folder."""
    return sorted(path.name for path in folder.rglob("vhd-*")) if folder.exists() else []


def _ids(warehouse: str) -> list[str]:
    return run_query(resolve_warehouse(warehouse), "SELECT env_id FROM environments ORDER BY env_id").column(
        "env_id").to_pylist()


def test_a_fresh_process_with_another_prefect_home_takes_the_finished_stages_from_s3(prefect_server, bucket,
                                                                                      tmp_path):
    warehouse, cache = f"s3://{bucket}/wh", f"s3://{bucket}/stage-cache"
    fs = resolve_warehouse(warehouse).fs
    argv = ("generate", "--date", "2026-04-09", "--count", "24", "--families", "lp,knapsack", "--shard-size", "6",
            "--warehouse", warehouse, "--no-progress")

    def env(host: str, **extra: str) -> dict[str, str]:  # each "host" has a Prefect home (and result folder) of its own
        return clean_env(tmp_path / host, PREFECT_API_URL=prefect_server, VHD_S3_ENDPOINT_URL=os.environ[
            "VHD_S3_ENDPOINT_URL"], **AWS, **extra)

    first = vhd(*argv, "--stage-cache", cache, env=env("host-a"), timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    ids = _ids(warehouse)
    assert len(ids) == 24
    stored = [path.rsplit("/", 1)[-1] for path in fs.ls(f"{bucket}/stage-cache")]
    assert {name.split("-")[1] for name in stored} == set(STAGES), stored  # every stage's results are in S3
    assert _records(tmp_path / "host-a" / "prefect-home") == []  # and none in the host's own result folder

    fs.rm(f"{bucket}/wh", recursive=True)  # the warehouse lost the run: its shards must be made again
    assert not fs.exists(f"{bucket}/wh")
    second = vhd(*argv, env=env("host-b", VHD_STAGE_CACHE=cache), timeout=300)  # the nightly's way: the variable
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Traceback" not in second.stderr and "ERROR" not in second.stderr, second.stderr[-3000:]
    assert _ids(warehouse) == ids
    assert _records(tmp_path / "host-b" / "prefect-home") == []

    flow_run_id = re.search(r"run ([0-9a-f-]{36}) on", second.stdout).group(1)

    def stages_settled(runs) -> bool:
        staged = [run for run in runs if run.name.split("-")[0] in STAGES]
        return len(staged) >= 4 * len(STAGES) and all(run.state is not None and run.state.is_final()
                                                      for run in staged)

    runs = settled_task_runs(flow_run_id, stages_settled)
    states = {state for stage, state in stage_states(runs) if stage in STAGES}
    assert states == {"Cached"}, stage_states(runs)  # nothing was sampled, solved, rendered or validated again


def _record(fs, path: str, serializer=None, key: str | None = None) -> None:
    """A result record as Prefect writes one to remote storage (a stage's: StageResultSerializer by default)."""
    metadata = ResultRecordMetadata(storage_key=key or f"s3://{path}", serializer=serializer or StageResultSerializer())
    fs.pipe_file(path, ResultRecord(metadata=metadata, result={"items": [1, 2]}).serialize())


def test_the_shared_cache_is_pruned_of_our_old_records_only(bucket, monkeypatch):
    monkeypatch.delenv("VHD_STAGE_CACHE_DAYS", raising=False)
    fs = resolve_warehouse(f"s3://{bucket}/x").fs
    root = f"{bucket}/stage-cache"
    ours = f"{root}/vhd-render-lp-train-0000-abc-r1-0-12-10-1234abcd-v1-0.3.0"
    _record(fs, ours)
    _record(fs, f"{root}/vhd-sample-lp-train-0000-abc-r1-0-12-10-1234abcd-v1-0.3.0", key="vhd-sample-lp-train-0000-"
            "abc-r1-0-12-10-1234abcd-v1-0.3.0")  # a record written through a saved block: its key is relative
    _record(fs, f"{root}/vhd-pickled-by-someone-else", serializer=PickleSerializer())
    _record(fs, f"{root}/vhd-renamed", key=f"s3://{ours}")  # a copy whose key names another object
    _record(fs, f"{root}/0e778b39a1994424ab01fdaf8271c9a8")  # another task's record
    fs.pipe_file(f"{root}/vhd-notes.txt", b"my notes\n")
    fs.pipe_file(f"{root}/vhd-inner/vhd-render-x", b"{}")  # under a folder of its own: not looked into
    names = sorted(path.rsplit("/", 1)[-1] for path in fs.ls(root))

    assert prune_remote_stage_cache(fs, root) == 0  # all written just now: kept $VHD_STAGE_CACHE_DAYS (3)
    assert prune_remote_stage_cache(fs, root, days=3, now=time.time() + 2 * DAY) == 0
    assert prune_remote_stage_cache(fs, root, days=3, now=time.time() + 4 * DAY) == 2
    left = sorted(path.rsplit("/", 1)[-1] for path in fs.ls(root))
    assert left == sorted(set(names) - {"vhd-render-lp-train-0000-abc-r1-0-12-10-1234abcd-v1-0.3.0",
                                        "vhd-sample-lp-train-0000-abc-r1-0-12-10-1234abcd-v1-0.3.0"})
    assert fs.cat_file(f"{root}/vhd-notes.txt") == b"my notes\n"
    assert prune_remote_stage_cache(fs, f"{bucket}/nothing-here", days=0) == 0


@pytest.mark.parametrize(("value", "needles"), [
    ("cache", ["--stage-cache 'cache' is not a location", "s3://BUCKET/PREFIX"]),
    ("s3://", ["--stage-cache 's3://' names no valid bucket"]),
    ("s3://bad_bucket!/x", ["names no valid bucket"]),
    ("nosuch://bucket/x", ["unknown scheme 'nosuch'"]),
    ("file://relative", ["not an absolute file:// URL"]),
    ("s3://vhd-no-such-bucket/cache", ["--stage-cache s3://vhd-no-such-bucket/cache:", "does not exist"]),
])
def test_a_bad_stage_cache_is_one_line_naming_the_option(tmp_path, moto_endpoint, value, needles):  # noqa: F811
    env = clean_env(tmp_path, VHD_S3_ENDPOINT_URL=moto_endpoint, **AWS)
    refused(vhd("generate", "--count", "3", "--warehouse", str(tmp_path / "wh"), "--stage-cache", value,
                "--no-progress", env=env), *needles)
    assert not (tmp_path / "wh").exists() and not (tmp_path / "vhd-home" / "prefect-server").exists()


def test_the_variable_is_named_when_it_is_the_bad_one(tmp_path):
    (tmp_path / "a-file").write_text("x")
    refused(vhd("generate", "--count", "3", "--warehouse", str(tmp_path / "wh"), "--no-progress",
                env=clean_env(tmp_path, VHD_STAGE_CACHE=str(tmp_path / "a-file"))),
            f"$VHD_STAGE_CACHE {tmp_path / 'a-file'}: is a file, not a folder")


def test_locations_by_their_form(monkeypatch, tmp_path):
    monkeypatch.delenv("VHD_STAGE_CACHE", raising=False)
    assert stage_cache_location() is None
    assert stage_cache_location("s3://bucket/a/b/").where == "s3://bucket/a/b"
    assert stage_cache_location("file:///srv/cache").where == "/srv/cache"
    assert stage_cache_location("./cache").where == os.path.abspath("cache")
    block = stage_cache_location("remote-file-system/vhd-cache")
    assert (block.kind, block.where) == ("block", "remote-file-system/vhd-cache")
    monkeypatch.setenv("VHD_STAGE_CACHE", "memory://shared/cache")
    assert (stage_cache_location().kind, stage_cache_location().named_by) == ("url", "$VHD_STAGE_CACHE")


def test_a_storage_block_of_yours_holds_the_cache_and_a_missing_one_is_one_line(prefect_server, tmp_path):
    import shutil

    from prefect.filesystems import LocalFileSystem

    from flows.generate import run_generate
    from schemas.errors import UserError

    folder = tmp_path / "block-cache"
    LocalFileSystem(basepath=str(folder)).save("vhd-test-stage-cache", overwrite=True)
    params = {"date": "2026-04-10", "count": 8, "families": "knapsack", "warehouse": str(tmp_path / "wh"),
              "shard_size": 4, "stage_cache": "local-file-system/vhd-test-stage-cache"}
    first = run_generate(**params)
    ids = _ids(str(tmp_path / "wh"))
    assert {name.split("-")[1] for name in _records(folder)} == set(STAGES)
    shutil.rmtree(tmp_path / "wh")
    second = run_generate(**params)
    assert first["new_environments"] == second["new_environments"] == 8 and _ids(str(tmp_path / "wh")) == ids
    wanted = {(stage, "Cached") for stage in STAGES}
    runs = settled_task_runs(second["flow_run_id"], lambda runs: wanted <= stage_states(runs))
    assert {state for stage, state in stage_states(runs) if stage in STAGES} == {"Cached"}, stage_states(runs)
    with pytest.raises(UserError, match="--stage-cache local-file-system/vhd-no-such-block: no such block"):
        run_generate(**{**params, "stage_cache": "local-file-system/vhd-no-such-block"})
