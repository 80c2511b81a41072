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
from integrations.rows import env_from_trainer_row, read_trainer_rows, tool_interface
from schemas.envspec import MODES
from tests.evaluation.support import generated_warehouse
from tests.integrations.support import ROOT

OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


def fresh_cache(tmp_path) -> str:
    """A datasets cache of the test's own: the user-wide one answered `load_dataset(folder)` with the rows of an
    earlier export to another folder of the same layout (ids of an earlier family version)."""
    return str(tmp_path / "datasets-cache")


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
    loaded = datasets.load_dataset("parquet" if suffix == ".parquet" else "json", data_files=str(out), split="train",
                                    cache_dir=fresh_cache(tmp_path))
    assert len(loaded) == len(specs) * len(MODES)
    assert loaded[0]["prompt"][0]["role"] == "system" and loaded[0]["prompt"][1] == {"role": "user",
                                                                                     "content": "Begin."}
    if fmt == "skyrl":
        assert {"data_source", "prompt", "env_class", "reward_spec", "extra_info"} <= set(loaded.column_names)
        assert set(loaded["env_class"]) == {"vhdplay"}
    else:  # one TRL class per tool set: the key is the digest of the row's tools
        assert all(r["environment"] == tool_interface(r["tools"]) for r in loaded)
    # a curriculum in SQL-like terms: the filter works on the columns
    easy = loaded.filter(lambda r: r["family"] == "knapsack" and r["mode"] == "hidden")
    assert len(easy) == sum(1 for s in specs.values() if s.family == "knapsack")
    for row in loaded:
        spec = specs[row["env_id"]]
        _check_difficulty_columns(row, spec)
        env = env_from_trainer_row(row)
        assert env.env_id == row["env_id"] and row["prompt"][0]["content"].startswith(env.instructions)
        assert json.loads(row["tools"]) == env.tools()  # OpenAI function format, as apply_chat_template takes it
        # SkyRL renders its chat template without tools: its prompt lists them and the call format; trl's does not
        names_in_prompt = {name for name in env.tool_names if f'"name": "{name}"' in row["prompt"][0]["content"]}
        assert names_in_prompt == (set(env.tool_names) if fmt == "skyrl" else set())
    for row in loaded.select(range(0, len(loaded), 3)):
        _replays(row)


def _card_counts(card: str) -> dict[tuple[str, str], dict[str, int]]:
    """(family, split) -> {tier or "no tier": rows, "rows": total} from the card's counts table."""
    lines = card.split("## Rows by family, split and tier", 1)[1].strip().splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    counts = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        counts[(cells[0], cells[1])] = {name: int(cell) for name, cell in zip(header[2:], cells[2:], strict=True)}
    return counts


def test_hf_folder_is_one_dataset_with_a_default_and_a_configuration_per_family(warehouse, tmp_path):
    import datasets

    out = tmp_path / "hf"
    completed = vhd("export", "--warehouse", warehouse, "--format", "hf", "--mode", "hidden", "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    specs = select_specs("true", None, warehouse)
    families = sorted({s.family for s in specs})
    assert sorted(p.name for p in (out / "data").iterdir()) == families
    # no configuration name: the default one, every family, the splits of the rows (this catalog: all train)
    every = datasets.load_dataset(str(out), cache_dir=fresh_cache(tmp_path))
    assert {name: len(split) for name, split in every.items()} == {"train": len(specs)}
    assert sorted(set(every["train"]["family"])) == families
    assert sorted(every["train"]["env_id"]) == sorted(s.env_id for s in specs)
    card = (out / "README.md").read_text()
    counts = _card_counts(card)
    for family in families:
        loaded = datasets.load_dataset(str(out), family, split="train", cache_dir=fresh_cache(tmp_path))
        assert set(loaded["family"]) == {family}
        mine = [s for s in specs if s.family == family]
        assert len(loaded) == len(mine) == counts[(family, "train")]["rows"]
        for tier in {s.difficulty.tier if s.difficulty else None for s in mine}:
            assert counts[(family, "train")][tier or "no tier"] == sum(
                1 for s in mine if (s.difficulty.tier if s.difficulty else None) == tier)
    _replays(every["train"][0])
    for column in every["train"].column_names:  # the card lists every column
        assert f"| `{column}` |" in card
    # pyarrow alone reads it too, every row once (the configurations share the files), and the files concatenate
    rows = read_trainer_rows(out)
    assert len(rows) == len(specs) and {r["sample_seed"] for r in rows} == {None}
    schemas = {pq.read_schema(f).field("tier").type for f in out.rglob("*.parquet")}
    assert {str(t) for t in schemas} == {"string"}


def test_hf_splits_come_from_the_rows_split_column(warehouse, tmp_path):
    """A catalog of train, held_out and ood environments: one HF split each, in the default configuration and in
    each family's, with the card's counts."""
    import datasets

    from integrations.rows import trainer_rows, write_trainer_rows

    labels = ("train", "held_out", "ood")
    specs = [s.model_copy(update={"split": labels[i % 3]})
             for i, s in enumerate(select_specs("family IN ('knapsack', 'lp', 'routing')", None, warehouse))]
    out = write_trainer_rows(trainer_rows(specs, "hf", ["hidden", "revealed"]), tmp_path / "hf", "hf")
    every = datasets.load_dataset(str(out), cache_dir=fresh_cache(tmp_path))
    assert {name: len(split) for name, split in every.items()} == {
        label: 2 * sum(1 for s in specs if s.split == label) for label in labels}
    for name, split in every.items():
        assert set(split["split"]) == {name}
        assert sorted(set(split["env_id"])) == sorted(s.env_id for s in specs if s.split == name)
    counts = _card_counts((out / "README.md").read_text())
    for family in ("knapsack", "lp", "routing"):
        loaded = datasets.load_dataset(str(out), family, cache_dir=fresh_cache(tmp_path))
        expected = {label: 2 * sum(1 for s in specs if s.family == family and s.split == label) for label in labels}
        assert {name: len(split) for name, split in loaded.items()} == {k: v for k, v in expected.items() if v}
        assert {split: counts[(family, split)]["rows"] for split in loaded} == {k: v for k, v in expected.items() if v}
        for name, split in loaded.items():
            assert set(split["family"]) == {family} and set(split["split"]) == {name}
    assert len(read_trainer_rows(out)) == 2 * len(specs)


def test_export_limit_is_a_seeded_sample_recorded_in_the_rows(warehouse, tmp_path):
    import datasets

    pair = "family IN ('knapsack', 'lp')"
    assert {s.family for s in select_specs(pair, None, warehouse)[:2]} == {"knapsack"}  # the first two by env_id

    def sample(name: str, seed: str, fmt: str = "trl") -> list[dict]:
        out = tmp_path / name
        completed = vhd("export", "--warehouse", warehouse, "--where", pair, "--mode", "hidden", "--limit", "2",
                        "--seed", seed, "--format", fmt, "--out", str(out))
        assert completed.returncode == 0, completed.stderr
        assert f"a sample drawn with --seed {seed}" in completed.stdout
        return read_trainer_rows(out)

    first, again = sample("a.parquet", "7"), sample("b.jsonl", "7")
    assert [r["env_id"] for r in first] == [r["env_id"] for r in again]  # one seed, one sample
    assert {r["family"] for r in first} == {"knapsack", "lp"}  # stratified: not two knapsacks
    assert {r["sample_seed"] for r in first} == {r["sample_seed"] for r in again} == {7}
    hf = sample("hf", "3", "hf")
    assert {r["family"] for r in hf} == {"knapsack", "lp"} and {r["sample_seed"] for r in hf} == {3}
    assert "--seed 3" in (tmp_path / "hf" / "README.md").read_text()
    assert len(datasets.load_dataset(str(tmp_path / "hf"), split="train", cache_dir=fresh_cache(tmp_path))) == 2


@pytest.mark.parametrize("argv, needle", [
    (["--format", "hf", "--out", "{existing}"], "is a folder that is not empty"),
    (["--format", "trl", "--out", "{tmp}/x.parquet", "--mode", "blind"], "unknown mode 'blind'"),
    (["--format", "skyrl", "--out", "{tmp}/x.parquet", "--where", "family ="], "--where does not parse as SQL"),
    (["--format", "trl", "--out", "{tmp}"], "is a folder"),
    (["--format", "trl", "--out", "{tmp}/x.parquet", "--limit", "0", "--seed", "3"], "--limit must be at least 1"),
    (["--format", "hf", "--out", "{tmp}/empty", "--where", "family = 'nothere'"], "no row to export"),
    (["--format", "skyrl", "--out", "{tmp}/empty.parquet", "--where", "family = 'nothere'"], "no row to export"),
    (["--format", "parquet", "--out", "{tmp}/empty.parquet", "--where", "family = 'nothere'"], "nothing to export"),
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
    assert (existing / "keep.txt").exists() and not (tmp_path / "empty.parquet").exists()


def test_a_row_without_a_spec_is_refused_in_one_line():
    with pytest.raises(ValueError) as refused:
        env_from_trainer_row({"prompt": []})
    assert "spec_json" in str(refused.value) and "\n" not in str(refused.value)


# --- tampered rows: verified on load (no warehouse: rows of integrations.generate.spec_from_seed) ----------------

@pytest.fixture(scope="module")
def seeded_rows():
    from integrations.generate import spec_from_seed
    from integrations.rows import trainer_rows

    spec = spec_from_seed(3)
    return {fmt: trainer_rows([spec], fmt, modes=["hidden"])[0] for fmt in ("trl", "skyrl")}


def _with_spec(row: dict, edit) -> dict:
    """The row with its spec edited by `edit(spec dict)` and every env_id column made that edited spec's id (a
    consistent forgery: only the spec's own checks can refuse it)."""
    from schemas.envspec import EnvSpec

    row = json.loads(json.dumps(row))
    holder = row if "spec_json" in row else row["extra_info"]
    data = json.loads(holder["spec_json"])
    edit(data)
    holder["spec_json"] = json.dumps(data)
    try:
        env_id = EnvSpec.model_validate_json(holder["spec_json"]).env_id
    except Exception:  # noqa: BLE001 - a spec too big or odd to hash keeps its old id
        return row
    for where in (row, row.get("extra_info") or {}):
        if "env_id" in where:
            where["env_id"] = env_id
    return row


def _set(path: str, value):
    def edit(data: dict) -> None:
        *parents, last = path.split(".")
        for part in parents:
            data = data[part]
        data[last] = value
    return edit


TAMPERED = {
    "trl env_id": ("trl", lambda row: row.update(env_id=row["family"] + "-0123456789abcdef"), "the row's env_id"),
    "skyrl top env_id": ("skyrl", lambda row: row.update(env_id="x-1"), "the row's env_id 'x-1' is not the id"),
    "skyrl extra_info env_id": ("skyrl", lambda row: row["extra_info"].update(env_id="x-1"),
                                "the row's extra_info.env_id 'x-1' is not the id"),
    "trl spec edited": ("trl", lambda row: row.update(spec_json=row["spec_json"].replace(
        '"turn_budget":', '"turn_budget":1', 1)), "is not the id of its spec_json"),
    "skyrl spec edited": ("skyrl", lambda row: row["extra_info"].update(spec_json=row["extra_info"][
        "spec_json"].replace('"horizon":', '"horizon":1', 1)), "is not the id of its spec_json"),
    "trl environment": ("trl", lambda row: row.update(environment="tools-0000000000000000"), "the row's environment"),
    "trl mode of other tools": ("trl", lambda row: row.update(mode="written"), "the row's environment"),
    "trl tools edited": ("trl", lambda row: row.update(tools="[]"), "the row's tools are not"),
    "skyrl mode differs": ("skyrl", lambda row: row.update(mode="written"),
                           "the row's mode 'written' is not its spec's mode 'hidden'"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_row_that_does_not_match_its_spec_is_refused_in_one_line(seeded_rows, case):
    from schemas.errors import UserError

    fmt, change, needle = TAMPERED[case]
    row = json.loads(json.dumps(seeded_rows[fmt]))
    change(row)
    with pytest.raises(UserError, match=needle) as refused:
        env_from_trainer_row(row)
    assert "\n" not in str(refused.value)


FORGED_SPECS = {
    "u_star NaN": (_set("reference.u_star", float("nan")), "reference u_star is nan, not a finite number"),
    "u0 infinite": (_set("reference.u0", float("inf")), "reference u0 is inf, not a finite number"),
    "baseline NaN": (_set("reference.baselines.informed", float("nan")), "baselines.informed is nan"),
    "turn_budget 10**18": (_set("turn_budget", 10**18), "turn_budget 1,000,000,000,000,000,000 is outside 1..10,000"),
    "turn_budget 0": (_set("turn_budget", 0), "turn_budget 0 is outside"),
    "20,000 optimal_actions": (lambda d: d["reference"].update(optimal_actions=d["reference"]["optimal_actions"][:1]
                                                              * 20_000), "20,000 optimal_actions, over the limit"),
    "200,000 optimal_actions": (lambda d: d["reference"].update(optimal_actions=[{"name": "a" * 20, "args": {}}]
                                                               * 200_000), "characters, over the limit of 4,000,000"),
}


@pytest.mark.parametrize("fmt", ["trl", "skyrl"])
@pytest.mark.parametrize("case", sorted(FORGED_SPECS))
def test_a_spec_out_of_bounds_or_not_finite_is_refused_even_with_its_own_id(seeded_rows, fmt, case):
    from schemas.errors import UserError

    edit, needle = FORGED_SPECS[case]
    row = _with_spec(seeded_rows[fmt], edit)
    with pytest.raises(UserError, match=needle) as refused:
        env_from_trainer_row(row)
    assert "\n" not in str(refused.value)


def test_score_completion_refuses_a_tampered_row_and_scores_a_true_one(seeded_rows):
    from integrations.completions import score_completion
    from schemas.errors import UserError

    row = seeded_rows["trl"]
    assert score_completion(row, []).score == 0.0
    with pytest.raises(UserError, match="not a finite number"):
        score_completion(_with_spec(row, _set("reference.u_star", float("nan"))), [])


@pytest.mark.parametrize("fmt", ["trl", "skyrl"])
def test_untampered_rows_still_load(seeded_rows, fmt):
    row = seeded_rows[fmt]
    env = env_from_trainer_row(row)
    assert env.env_id == row["env_id"] and env.mode == "hidden"
    assert env_from_trainer_row({"spec_json": env.spec.model_dump_json(), "mode": "revealed"}).mode == "revealed"
