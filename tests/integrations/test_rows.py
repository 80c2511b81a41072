"""`vhd export --format trl|skyrl|hf`: every format loads with Hugging Face `datasets` (and pyarrow) and each row
round-trips into an environment that the oracle's actions play to the same score; bad input gets one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from envs.agents import oracle, play
from envs.catalog import select_specs
from envs.environment import Environment
from integrations.rows import env_from_trainer_row, read_trainer_rows
from schemas.envspec import MODES
from tests.evaluation.support import generated_warehouse
from tests.integrations.support import ROOT

OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


def vhd(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, **OFFLINE})


def _replays(row: dict) -> None:
    """The row's environment, played with the oracle's actions, scores as the catalog's environment does."""
    env = env_from_trainer_row(row)
    spec_env = Environment(env.spec, env.mode)
    expected = play(spec_env, "oracle")
    for name, arguments in oracle(Environment(env.spec, env.mode)):
        env.call(name, arguments)
        if env.done:
            break
    assert env.score() == pytest.approx(expected.score) == pytest.approx(1.0)


def _check_difficulty_columns(row: dict, spec) -> None:
    ref = spec.reference
    assert (row["family"], row["size"], row["horizon"]) == (spec.family, spec.size, spec.horizon)
    assert (row["u0"], row["u_star"]) == (ref.u0, ref.u_star)
    assert json.loads(row["baselines_json"]) == ref.baselines
    assert row["tier"] == (spec.difficulty.tier if spec.difficulty else None)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
@pytest.mark.parametrize("fmt", ["trl", "skyrl"])
def test_trl_and_skyrl_files_load_with_datasets_and_round_trip(warehouse, tmp_path, fmt, suffix):
    import datasets

    out = tmp_path / f"rows{suffix}"
    completed = vhd("export", "--warehouse", warehouse, "--format", fmt, "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    specs = {s.env_id: s for s in select_specs("true", None, warehouse)}
    loaded = datasets.load_dataset("parquet" if suffix == ".parquet" else "json", data_files=str(out), split="train")
    assert len(loaded) == len(specs) * len(MODES)
    assert loaded[0]["prompt"][0]["role"] == "system" and loaded[0]["prompt"][1] == {"role": "user",
                                                                                     "content": "Begin."}
    if fmt == "skyrl":
        assert {"data_source", "prompt", "env_class", "reward_spec", "extra_info"} <= set(loaded.column_names)
        assert set(loaded["env_class"]) == {"vhdplay"}
    else:
        assert set(loaded["environment"]) == {f"{r['env_id']}/{r['mode']}" for r in loaded}
    # a curriculum in SQL-like terms: the filter works on the columns
    easy = loaded.filter(lambda r: r["family"] == "knapsack" and r["mode"] == "hidden")
    assert len(easy) == sum(1 for s in specs.values() if s.family == "knapsack")
    for row in loaded:
        spec = specs[row["env_id"]]
        _check_difficulty_columns(row, spec)
        env = env_from_trainer_row(row)
        assert env.env_id == row["env_id"] and row["prompt"][0]["content"] == env.instructions
    for row in loaded.select(range(0, len(loaded), 3)):
        _replays(row)


def test_hf_folder_has_one_configuration_per_family(warehouse, tmp_path):
    import datasets

    out = tmp_path / "hf"
    completed = vhd("export", "--warehouse", warehouse, "--format", "hf", "--mode", "hidden", "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    specs = select_specs("true", None, warehouse)
    families = sorted({s.family for s in specs})
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == families
    for family in families:
        loaded = datasets.load_dataset(str(out), family, split="train")
        assert set(loaded["family"]) == {family}
        assert len(loaded) == sum(1 for s in specs if s.family == family)
        _replays(loaded[0])
    # pyarrow alone reads it too, and the files concatenate (a family without a tier keeps the column's type)
    rows = read_trainer_rows(out)
    assert len(rows) == len(specs)
    schemas = {pq.read_schema(f).field("tier").type for f in out.glob("*/*.parquet")}
    assert {str(t) for t in schemas} == {"string"}


@pytest.mark.parametrize("argv, needle", [
    (["--format", "hf", "--out", "{existing}"], "is a folder that is not empty"),
    (["--format", "trl", "--out", "{tmp}/x.parquet", "--mode", "blind"], "unknown mode 'blind'"),
    (["--format", "skyrl", "--out", "{tmp}/x.parquet", "--where", "family ="], "--where does not parse as SQL"),
    (["--format", "trl", "--out", "{tmp}"], "is a folder"),
])
def test_bad_export_input_gets_one_line(warehouse, tmp_path, argv, needle):
    existing = tmp_path / "full"
    existing.mkdir()
    (existing / "keep.txt").write_text("x")
    argv = [a.format(existing=existing, tmp=tmp_path) for a in argv]
    completed = vhd("export", "--warehouse", warehouse, *argv)
    assert completed.returncode != 0
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], completed.stderr
    assert (existing / "keep.txt").exists()


def test_a_row_without_a_spec_is_refused_in_one_line():
    with pytest.raises(ValueError) as refused:
        env_from_trainer_row({"prompt": []})
    assert "spec_json" in str(refused.value) and "\n" not in str(refused.value)
