"""The stage cache is kept a few days: a generate run starts by removing this project's stage results older than
$VHD_STAGE_CACHE_DAYS from Prefect's result storage, and leaves the rest; a bad setting is one line."""

from __future__ import annotations

import json
import os
import time

import pytest
from prefect._internal.result_records import ResultRecord, ResultRecordMetadata
from prefect.serializers import PickleSerializer

from flows.generate import run_generate
from tasks.common import StageResultSerializer
from tasks.stage_cache import DEFAULT_DAYS, is_stage_record, prune_stage_cache, stage_cache_days, stage_cache_dir
from tests.cli.test_bad_input import clean_env, refused, vhd

DAY = 86400.0


def _age(path, age_days: float) -> None:
    then = time.time() - age_days * DAY
    os.utime(path, (then, then))


def _record(folder, name: str, age_days: float, serializer=None) -> None:
    """A result record as Prefect writes one (a stage's: StageResultSerializer, unless `serializer` says otherwise)."""
    path = folder / name
    metadata = ResultRecordMetadata(storage_key=str(path), serializer=serializer or StageResultSerializer())
    path.write_bytes(ResultRecord(metadata=metadata, result={"items": [1, 2]}).serialize())
    _age(path, age_days)


def test_records_older_than_the_days_go_and_nothing_else(tmp_path):
    _record(tmp_path, "vhd-render-lp-train-0000-abc-r1-0-12-10-1234abcd-v1-0.3.0", 4)
    _record(tmp_path, "vhd-sample-lp-train-0001-abc-r1-0-12-10-1234abcd-v1-0.3.0", 2)
    _record(tmp_path, "0e778b39a1994424ab01fdaf8271c9a8", 40)  # a record of someone else's task
    (tmp_path / "vhd-a-folder").mkdir()
    assert prune_stage_cache(tmp_path, days=3) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "0e778b39a1994424ab01fdaf8271c9a8", "vhd-a-folder", "vhd-sample-lp-train-0001-abc-r1-0-12-10-1234abcd-v1-0.3.0"]
    assert prune_stage_cache(tmp_path, days=0) == 1  # 0 days: nothing from an earlier run stays
    assert prune_stage_cache(tmp_path / "missing", days=0) == 0


def test_a_file_is_ours_by_its_content_never_by_its_name(tmp_path):
    """Issue 31 (1): a user's `vhd-notes.txt` in Prefect's result folder was deleted by the prune (any `vhd-*`)."""
    ours = "vhd-render-lp-train-0000-abc-r1-0-12-10-1234abcd-v1-0.3.0"
    _record(tmp_path, ours, 40)
    notes = tmp_path / "vhd-notes.txt"
    notes.write_text("my notes\n")
    _age(notes, 40)
    (tmp_path / "vhd-empty").write_bytes(b"")
    (tmp_path / "vhd-json.json").write_text(json.dumps({"metadata": {"serializer": {"type": "vhd-stage-pickle"}}}))
    _record(tmp_path, "vhd-pickled-by-someone-else", 40, serializer=PickleSerializer())  # not our serializer
    _record(tmp_path, "vhd-copied", 40)
    os.rename(tmp_path / "vhd-copied", tmp_path / "vhd-renamed")  # a record whose key names another file
    (tmp_path / "vhd-binary").write_bytes(b'{"metadata":\xff\xfe' + os.urandom(100))
    for path in tmp_path.iterdir():
        _age(path, 40)
    assert not is_stage_record(notes) and is_stage_record(tmp_path / ours)
    assert prune_stage_cache(tmp_path, days=3) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "vhd-binary", "vhd-empty", "vhd-json.json", "vhd-notes.txt", "vhd-pickled-by-someone-else", "vhd-renamed"]
    assert notes.read_text() == "my notes\n"


def test_the_days_come_from_the_environment(monkeypatch):
    monkeypatch.delenv("VHD_STAGE_CACHE_DAYS", raising=False)
    assert stage_cache_days() == DEFAULT_DAYS
    monkeypatch.setenv("VHD_STAGE_CACHE_DAYS", "0.5")
    assert stage_cache_days() == 0.5
    for bad in ("soon", "-1", "inf", "nan"):
        monkeypatch.setenv("VHD_STAGE_CACHE_DAYS", bad)
        with pytest.raises(ValueError, match="VHD_STAGE_CACHE_DAYS must be a number of days"):
            stage_cache_days()


def test_a_generate_run_removes_old_stage_results_and_keeps_its_own(prefect_server, tmp_path):
    folder = stage_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    _record(folder, "vhd-validate-knapsack-train-0000-old-r1-0-12-10-1234abcd-v1-0.3.0", DEFAULT_DAYS + 1)
    _record(folder, "vhd-validate-knapsack-train-0000-new-r1-0-12-10-1234abcd-v1-0.3.0", DEFAULT_DAYS - 1)
    summary = run_generate(warehouse=str(tmp_path / "wh"), date="2026-04-05", count=4, families="knapsack")
    assert summary["status"] == "completed"
    names = {path.name for path in folder.iterdir()}
    assert "vhd-validate-knapsack-train-0000-old-r1-0-12-10-1234abcd-v1-0.3.0" not in names
    assert "vhd-validate-knapsack-train-0000-new-r1-0-12-10-1234abcd-v1-0.3.0" in names
    assert any(name.startswith("vhd-validate-knapsack-train-0000-") and "-new-" not in name for name in names)


def test_a_bad_setting_is_one_line_before_any_work(tmp_path):
    env = clean_env(tmp_path, VHD_STAGE_CACHE_DAYS="soon")
    refused(vhd("generate", "--count", "3", "--warehouse", str(tmp_path / "wh"), "--no-progress", env=env),
            "VHD_STAGE_CACHE_DAYS must be a number of days")
    assert not (tmp_path / "wh").exists()
