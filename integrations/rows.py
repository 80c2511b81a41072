"""Trainer-ready rows: `vhd export --format trl|skyrl|hf`.

One row per environment and mode, each carrying the chat-message `prompt` the trainers read, the difficulty columns
a team filters and builds curricula on (family, tier, size, horizon, u0, u*, baselines, informed/heuristic score,
facts fit) and the full spec as JSON, so `env_from_trainer_row(row)` rebuilds the playable environment without the
catalog, whichever format the row was read from.

- trl: `prompt` (system + user messages), `environment` (`<env_id>/<mode>`: the key of
  `integrations.trl.environment_factories`), the difficulty columns, `spec_json`; read by
  `GRPOTrainer(environment_factory=...)`, whose environment's `reset(**row)` receives the row.
- skyrl: `data_source`, `prompt`, `env_class`, `reward_spec` and `extra_info` (SkyRL's dataset columns), plus the
  difficulty columns at the top level.
- hf: a folder laid out as a Hugging Face dataset repository: one configuration per family
  (`<family>/train-00000-of-00001.parquet`, listed in README.md's `configs:`), rows as in trl; it loads with
  `datasets.load_dataset(folder, "<family>")` and can be pushed to the Hub as is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envs.environment import Environment
from schemas.envspec import MODES, EnvSpec

TRAINER_FORMATS = ("trl", "skyrl", "hf")
ENV_CLASS = "vhdplay"  # SkyRL's env_class: integrations.skyrl.register() registers VhdSkyRLEnv under it
FIRST_USER_MESSAGE = "Begin."  # what evaluation.llm_agent sends after the instructions
REWARD_FORMULA = "clip((u - u0) / (u_star - u0), 0, 1)"


def prompt_messages(env: Environment) -> list[dict[str, str]]:
    """The chat the episode opens with: the environment's instructions as the system message, then "Begin."."""
    return [{"role": "system", "content": env.instructions}, {"role": "user", "content": FIRST_USER_MESSAGE}]


def difficulty_columns(spec: EnvSpec) -> dict[str, Any]:
    """The columns a curriculum filters on; tier and the measured scores are null for a family not measured yet."""
    ref, difficulty = spec.reference, spec.difficulty
    return {"family": spec.family, "split": spec.split, "tier": difficulty.tier if difficulty else None,
            "size": spec.size, "horizon": spec.horizon, "turn_budget": spec.turn_budget, "u0": ref.u0,
            "u_star": ref.u_star, "u_idle": ref.u_idle, "baselines_json": json.dumps(ref.baselines, sort_keys=True),
            "informed_score": difficulty.informed_score if difficulty else None,
            "heuristic_score": difficulty.heuristic_score if difficulty else None,
            "naive_score": difficulty.naive_score if difficulty else None,
            "skill_gap": difficulty.skill_gap if difficulty else None,
            "facts_fit": difficulty.facts_fit if difficulty else None}


def trl_row(env: Environment) -> dict[str, Any]:
    spec = env.spec
    return {"env_id": spec.env_id, "mode": env.mode, "prompt": prompt_messages(env),
            "environment": f"{spec.env_id}/{env.mode}",
            **difficulty_columns(spec), "spec_json": spec.model_dump_json()}


def skyrl_row(env: Environment) -> dict[str, Any]:
    spec, ref = env.spec, env.spec.reference
    return {"data_source": f"vhdplay/{spec.family}", "prompt": prompt_messages(env), "env_class": ENV_CLASS,
            "reward_spec": {"method": "env_score", "formula": REWARD_FORMULA, "u0": ref.u0, "u_star": ref.u_star},
            "extra_info": {"env_id": spec.env_id, "mode": env.mode, "spec_json": spec.model_dump_json()},
            "env_id": spec.env_id, "mode": env.mode, **difficulty_columns(spec)}


ROW_BUILDERS = {"trl": trl_row, "skyrl": skyrl_row, "hf": trl_row}


def trainer_rows(specs: Iterable[EnvSpec], fmt: str, modes: Iterable[str] = MODES) -> list[dict[str, Any]]:
    if fmt not in ROW_BUILDERS:
        raise ValueError(f"unknown trainer format {fmt!r}; choose one of {', '.join(TRAINER_FORMATS)}")
    build, modes = ROW_BUILDERS[fmt], list(modes)
    return [build(Environment(spec, mode)) for spec in specs for mode in modes]


def env_from_trainer_row(row: dict[str, Any]) -> Environment:
    """The Environment a trl, skyrl or hf row describes (the spec JSON and mode, at the top or in extra_info)."""
    source = row if "spec_json" in row else row.get("extra_info") or {}
    if "spec_json" not in source or "mode" not in source:
        raise ValueError("this row holds no spec_json and mode (neither at the top nor in extra_info); "
                         "export it with vhd export --format trl|skyrl|hf")
    return Environment(EnvSpec.model_validate_json(source["spec_json"]), source["mode"])


def _table(rows: list[dict[str, Any]]):
    """The rows as an Arrow table; a column that is null in every row keeps its type (a family not measured yet
    has no tier, and its file must still concatenate with the others)."""
    import pyarrow

    table = pyarrow.Table.from_pylist(rows)
    typed = {"tier": pyarrow.string(), "informed_score": pyarrow.float64(), "heuristic_score": pyarrow.float64(),
             "naive_score": pyarrow.float64(), "skill_gap": pyarrow.float64(), "facts_fit": pyarrow.float64()}
    for name, kind in typed.items():
        if name in table.column_names and pyarrow.types.is_null(table.schema.field(name).type):
            table = table.set_column(table.column_names.index(name), name, table.column(name).cast(kind))
    return table


def _write_file(rows: list[dict[str, Any]], path: Path) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            pq.write_table(_table(rows), temporary, compression="zstd")
        else:
            with open(temporary, "w") as handle:
                for row in rows:
                    handle.write(json.dumps(row) + "\n")
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _hf_card(families: list[str]) -> str:
    configs = "\n".join(f"- config_name: {family}\n  data_files:\n  - split: train\n    path: {family}/*.parquet"
                        for family in families)
    return (f"---\nconfigs:\n{configs}\ntags:\n- reinforcement-learning\n- tool-use\n- vhdplay\n---\n\n"
            "# vhdplay environments\n\nOne configuration per family; one row per environment and mode. `prompt` is "
            "the opening chat, `spec_json` rebuilds the environment (`integrations.rows.env_from_trainer_row`), the "
            f"reward is the environment's score, {REWARD_FORMULA}.\n")


def write_trainer_rows(rows: list[dict[str, Any]], out: str | Path, fmt: str) -> Path:
    """trl / skyrl: one file (.parquet, else JSON lines); hf: a folder with one configuration per family."""
    out = Path(out)
    if fmt != "hf":
        out.parent.mkdir(parents=True, exist_ok=True)
        _write_file(rows, out)
        return out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {out} exists and is not an empty folder; the hf format writes a dataset folder")
    out.mkdir(parents=True, exist_ok=True)
    families = sorted({row["family"] for row in rows})
    for family in families:
        (out / family).mkdir(exist_ok=True)
        _write_file([row for row in rows if row["family"] == family], out / family / "train-00000-of-00001.parquet")
    (out / "README.md").write_text(_hf_card(families))
    return out


def read_trainer_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a trl/skyrl file or of every configuration of an hf folder (with pyarrow only)."""
    import pyarrow.parquet as pq

    path = Path(path)
    if path.is_dir():
        return [row for file in sorted(path.glob("*/*.parquet")) for row in pq.read_table(file).to_pylist()]
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]
