"""The checks made before any work: a warehouse that can be written, one that is there to read, an output file that
can be written; local folders for real and S3 through a real moto server."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.warehouse.test_catalog import _free_port, moto_endpoint, moto_server  # noqa: F401 - a fixture
from tests.warehouse.test_landing import DATE, environments_frame
from warehouse.catalog import run_query
from warehouse.landing import commit_run, land
from warehouse.location import WarehouseError, resolve_warehouse
from warehouse.preflight import check_output_file, check_readable, check_writable

NO_AWS = [name for name in os.environ if name.startswith("AWS_")]


def _committed(root: Path) -> str:
    """A warehouse with one committed environment."""
    wh = resolve_warehouse(str(root))
    commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", environments_frame(["e1"]), DATE, "s1")]},
               {})
    return str(root)


def test_a_new_folder_can_be_written_and_nothing_is_created(tmp_path):
    target = tmp_path / "a" / "b" / "wh"
    assert check_writable(str(target)).root == str(target)
    assert not (tmp_path / "a").exists()


def test_a_warehouse_under_a_file_is_refused_by_name(tmp_path):
    (tmp_path / "afile").write_text("keep")
    for check in (check_writable, check_readable):
        with pytest.raises(WarehouseError, match=r"is under .*afile, which is a file"):
            check(str(tmp_path / "afile" / "sub"))
    assert (tmp_path / "afile").read_text() == "keep"


@pytest.mark.parametrize("location", ["/proc/vhd", "/proc", "/sys/vhd/wh", "/sys/kernel"])
def test_kernel_pseudo_filesystems_are_refused(location):
    for check in (check_writable, check_readable):
        with pytest.raises(WarehouseError, match="pseudo filesystem"):
            check(location)


def test_a_tmpfs_under_dev_is_a_real_folder():
    check_writable("/dev/shm/vhd-preflight-never-created")
    assert not os.path.exists("/dev/shm/vhd-preflight-never-created")


@pytest.fixture
def read_only_folder(tmp_path: Path):
    """A folder this user cannot write: a mode-555 folder, or as root (who writes any folder) a read-only tmpfs."""
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o555)
    if os.geteuid() != 0:
        yield str(folder)
        return
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], check=True,
                   capture_output=True)
    try:
        yield str(folder)
    finally:
        subprocess.run(["umount", str(folder)], check=True, capture_output=True)


def test_a_folder_that_cannot_be_written_is_refused(read_only_folder):
    with pytest.raises(WarehouseError, match="cannot be written"):
        check_writable(os.path.join(read_only_folder, "vhd-wh"))


def test_a_missing_or_foreign_folder_is_named_as_missing(tmp_path):
    with pytest.raises(WarehouseError, match=r"no warehouse at .*nowhere \(no committed runs\); run `vhd generate"):
        check_readable(str(tmp_path / "nowhere"))
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff")
    with pytest.raises(WarehouseError, match="no warehouse at"):
        check_readable(str(tmp_path / "photos"))


def test_a_warehouse_with_only_uncommitted_files_reads_as_empty(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    land(wh, "environments", environments_frame(["e1"]), DATE, "s1")  # a crash before the commit
    check_readable(wh)
    assert run_query(wh, "SELECT count(*) AS n FROM environments").column("n").to_pylist() == [0]


def test_a_committed_warehouse_passes_both_checks(tmp_path):
    location = _committed(tmp_path / "wh")
    check_readable(location)
    check_writable(location)


def test_output_files(tmp_path):
    (tmp_path / "afile").write_text("keep")
    (tmp_path / "adir").mkdir()
    check_output_file(str(tmp_path / "new" / "out.jsonl"))  # a missing folder is created by the writer
    check_output_file(str(tmp_path / "afile"))  # an existing file is replaced
    for out, needle in [(str(tmp_path / "adir"), "is a folder"), ("/proc/out.jsonl", "pseudo filesystem"),
                        (str(tmp_path / "afile" / "out.jsonl"), "which is a file"), ("", "is empty")]:
        with pytest.raises(WarehouseError, match=needle):
            check_output_file(out)
    assert not (tmp_path / "new").exists() and (tmp_path / "afile").read_text() == "keep"


# --- S3 through moto -------------------------------------------------------------------------------------------

@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    """No AWS credentials anywhere: no AWS_* variables, empty shared files, a home without ~/.aws."""
    for name in NO_AWS:
        monkeypatch.delenv(name)
    for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
        empty = tmp_path / name.lower()
        empty.write_text("")
        monkeypatch.setenv(name, str(empty))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance metadata service either


@pytest.fixture
def aws(monkeypatch, moto_endpoint):  # noqa: F811 - the fixture imported above
    for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
                        "VHD_S3_ENDPOINT_URL": moto_endpoint}.items():
        monkeypatch.setenv(name, value)
    return moto_endpoint


def test_s3_without_credentials(no_aws, moto_endpoint, monkeypatch):  # noqa: F811
    monkeypatch.setenv("VHD_S3_ENDPOINT_URL", moto_endpoint)
    for check in (check_writable, check_readable):
        with pytest.raises(WarehouseError, match=r"no AWS credentials found for s3://vhd-bucket/wh; set AWS_ACCESS"):
            check("s3://vhd-bucket/wh")


def test_s3_missing_bucket_empty_prefix_and_a_real_warehouse(aws):
    with pytest.raises(WarehouseError, match="bucket 'vhd-no-such-bucket' of s3://vhd-no-such-bucket/wh does not"):
        check_writable("s3://vhd-no-such-bucket/wh")
    wh = resolve_warehouse("s3://vhd-preflight/wh")
    wh.fs.mkdir("vhd-preflight")
    check_writable(wh)  # an empty bucket can be written
    with pytest.raises(WarehouseError, match="no warehouse at s3://vhd-preflight/wh"):
        check_readable(wh)
    commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", environments_frame(["e1"]), DATE, "s1")]},
               {})
    check_readable(wh)
    with pytest.raises(WarehouseError, match="no warehouse at s3://vhd-preflight/other"):
        check_readable("s3://vhd-preflight/other")
    check_output_file("s3://vhd-preflight/reports/r.html")
    with pytest.raises(WarehouseError, match="does not exist"):
        check_output_file("s3://vhd-no-such-bucket/r.html")


def test_s3_unreachable_endpoint(aws, monkeypatch):
    monkeypatch.setenv("VHD_S3_ENDPOINT_URL", f"http://127.0.0.1:{_free_port()}")
    started = time.monotonic()
    with pytest.raises(WarehouseError, match=r"cannot reach the S3 endpoint http://127.0.0.1:\d+ for s3://b-x/wh"):
        check_writable("s3://b-x/wh")
    assert time.monotonic() - started < 30


@pytest.fixture(scope="module")
def strict_moto():
    """A moto server that authenticates every request (unknown keys are refused, as AWS refuses them)."""
    with moto_server(INITIAL_NO_AUTH_ACTION_COUNT="0") as url:
        yield url


def test_s3_credentials_that_are_refused(aws, strict_moto, monkeypatch):
    monkeypatch.setenv("VHD_S3_ENDPOINT_URL", strict_moto)
    with pytest.raises(WarehouseError, match=r"access to s3://vhd-any/wh was refused \(InvalidAccessKeyId\)"):
        check_readable("s3://vhd-any/wh")
