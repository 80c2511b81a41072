"""Trainer-ready rows: `vhd export --format trl|skyrl|hf`.

One row per environment and mode, each carrying the chat-message `prompt` the trainers read, its tools (`tools`:
OpenAI function format as JSON text, what `apply_chat_template(prompt, tools=json.loads(row["tools"]))` takes), the
difficulty columns a team filters and builds curricula on (family, tier, size, horizon, u0, u*, baselines,
informed/heuristic score, facts fit) and the full spec as JSON, so `env_from_trainer_row(row)` rebuilds the playable
environment without the catalog, whichever format the row was read from.

- trl: `prompt` (system + user messages), `tools`, `environment` (`tools-<digest>`, one key per distinct tool set:
  the key of `integrations.trl.environment_factories`), the difficulty columns, `spec_json`; read by
  `GRPOTrainer(**integrations.trl.grpo_arguments(rows))`, whose environment's `reset(**row)` receives the row.
- skyrl: `data_source`, `prompt`, `env_class`, `reward_spec` and `extra_info` (SkyRL's dataset columns), `tools`, plus
  the difficulty columns at the top level. SkyRL's generator renders the chat template without tools, so the
  prompt's system message also lists the tools and the call format (`tools_prompt`).
- hf: a folder laid out as a Hugging Face dataset repository, rows as in trl: one file per family and split
  (`data/<family>/<split>-00000-of-00001.parquet`, the split from the rows' `split` column: train, held_out, ood),
  and README.md, whose `configs:` header names a `default` configuration of every family (`data/*/<split>-*`) and
  one configuration per family (`data/<family>/<split>-*`) over the same files, and whose body is the dataset card
  (the columns, and per family the rows by split and tier). `datasets.load_dataset(folder)` loads every row,
  `datasets.load_dataset(folder, "<family>")` one family, each with the HF splits of the rows' split; it can be
  pushed to the Hub as is.

`vhd export --limit N --seed S` exports a seeded sample (`envs.catalog.sample_ids`: stratified by family); every
row records it in `sample_seed` (null when the export is not a sample), and the hf card names it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envs.environment import Environment
from schemas.envspec import MAX_SPEC_JSON_CHARS, MODES, EnvSpec
from schemas.errors import UserError
from schemas.tiers import TIERS

TRAINER_FORMATS = ("trl", "skyrl", "hf")
ENV_CLASS = "vhdplay"  # SkyRL's env_class: integrations.skyrl.register() registers VhdSkyRLEnv under it
FIRST_USER_MESSAGE = "Begin."  # what evaluation.llm_agent sends after the instructions
REWARD_FORMULA = "clip((u - u0) / (u_star - u0), 0, 1)"


CALL_FORMAT = '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>'
TOOLS_HEADING = "# Tools"


def prompt_messages(env: Environment, with_tools: bool = False) -> list[dict[str, str]]:
    """The chat the episode opens with: the environment's instructions as the system message, then "Begin.".
    `with_tools`: the tools and the call format written into the system message, for a trainer that renders the
    chat template without a `tools` argument (SkyRL's generator)."""
    system = f"{env.instructions}\n\n{tools_prompt(env)}" if with_tools else env.instructions
    return [{"role": "system", "content": system}, {"role": "user", "content": FIRST_USER_MESSAGE}]


def tools_json(env: Environment) -> str:
    """The `tools` column: the environment's tools in OpenAI function format, as JSON text (what
    `tokenizer.apply_chat_template(prompt, tools=json.loads(row["tools"]))` and TRL's SFT trainer read; a JSON
    string because each tool has its own argument names, which one Arrow struct type cannot hold)."""
    return json.dumps(env.tools())


def tools_prompt(env: Environment) -> str:
    """The tools and the call format as text, in the Hermes style the Qwen and Llama chat templates render."""
    listing = "\n".join(json.dumps(tool) for tool in env.tools())
    return (f"{TOOLS_HEADING}\n\nYou call the tools below, one call per reply. Their signatures, as JSON schemas:\n"
            f"<tools>\n{listing}\n</tools>\n\nTo call a tool, reply with the call in this form:\n{CALL_FORMAT}\n"
            "The tool's answer comes back as the next user message.")


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


def tool_interface(tools: str) -> str:
    """The `environment` column of a trl row: one key per distinct tool set (names, descriptions, schemas), the key
    of `integrations.trl.environment_factories`. Rows with the same tools share one TRL environment class."""
    return "tools-" + hashlib.sha256(tools.encode()).hexdigest()[:16]


def trl_row(env: Environment) -> dict[str, Any]:
    spec = env.spec
    tools = tools_json(env)
    return {"env_id": spec.env_id, "mode": env.mode, "prompt": prompt_messages(env), "tools": tools,
            "environment": tool_interface(tools), **difficulty_columns(spec), "spec_json": spec.model_dump_json()}


def skyrl_row(env: Environment) -> dict[str, Any]:
    spec, ref = env.spec, env.spec.reference
    return {"data_source": f"vhdplay/{spec.family}", "prompt": prompt_messages(env, with_tools=True),
            "tools": tools_json(env), "env_class": ENV_CLASS,
            "reward_spec": {"method": "env_score", "formula": REWARD_FORMULA, "u0": ref.u0, "u_star": ref.u_star},
            "extra_info": {"env_id": spec.env_id, "mode": env.mode, "spec_json": spec.model_dump_json()},
            "env_id": spec.env_id, "mode": env.mode, **difficulty_columns(spec)}


ROW_BUILDERS = {"trl": trl_row, "skyrl": skyrl_row, "hf": trl_row}


def trainer_rows(specs: Iterable[EnvSpec], fmt: str, modes: Iterable[str] = MODES,
                 sample_seed: int | None = None) -> list[dict[str, Any]]:
    """One row per spec and mode; `sample_seed`: the seed the specs were sampled with (None: not a sample)."""
    if fmt not in ROW_BUILDERS:
        raise UserError(f"unknown trainer format {fmt!r}; choose one of {', '.join(TRAINER_FORMATS)}")
    build, modes = ROW_BUILDERS[fmt], list(modes)
    return [{**build(Environment(spec, mode)), "sample_seed": sample_seed} for spec in specs for mode in modes]


# What a trainer row's spec may hold, far above any real environment's (the largest generated ones: a spec_json of
# about 56,000 characters, reference plans of about 100 calls, a turn budget of about 100): beyond them a row is
# refused before it is read, not read into gigabytes. MAX_SPEC_JSON_CHARS (schemas.envspec) bounds catalog rows too.
MAX_REFERENCE_ACTIONS = 10_000  # each of the reference's recorded action lists
MAX_TURN_BUDGET = 10_000
AGAIN = "export the row again with vhd export"


def env_from_trainer_row(row: dict[str, Any]) -> Environment:
    """The Environment a trl, skyrl or hf row describes (the spec JSON and mode, at the top or in extra_info),
    verified: the spec within MAX_SPEC_JSON_CHARS, MAX_REFERENCE_ACTIONS and MAX_TURN_BUDGET, its references
    finite, the row's env_id (top and extra_info) the id recomputed from the spec, its mode a known one (the same
    at the top and in extra_info), and its `environment` and `tools` columns, where present, the spec's tools in
    that mode. A row that fails is one line (UserError) naming what does not match."""
    extra = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else {}
    source = row if "spec_json" in row else extra
    if "spec_json" not in source or "mode" not in source:
        raise UserError("this row holds no spec_json and mode (neither at the top nor in extra_info); "
                        "export it with vhd export --format trl|skyrl|hf")
    spec_json, mode = source["spec_json"], source["mode"]
    if not isinstance(mode, str) or mode not in MODES:
        raise UserError(f"the row's mode {_shown(mode)} is not a mode; it is one of {', '.join(MODES)}")
    for where, holder in (("mode", row), ("extra_info.mode", extra)):
        if "mode" in holder and holder["mode"] != mode:
            raise UserError(f"the row's {where} {_shown(holder['mode'])} is not its spec's mode {mode!r}: the row "
                            f"was edited; {AGAIN}")
    spec = _spec_of(spec_json)
    env_id = spec.env_id
    for where, holder in (("env_id", row), ("extra_info.env_id", extra)):
        if "env_id" in holder and holder["env_id"] != env_id:
            raise UserError(f"the row's {where} {_shown(holder['env_id'])} is not the id of its spec_json "
                            f"({env_id}): the row or its spec was edited; {AGAIN}")
    env = Environment(spec, mode, env_id=env_id)
    if "environment" in row or "tools" in row:
        tools = tools_json(env)
        if "environment" in row and row["environment"] != tool_interface(tools):
            raise UserError(f"the row's environment {_shown(row['environment'])} is not the key of its "
                            f"environment's tools in {mode} mode ({tool_interface(tools)}): the row was edited; "
                            f"{AGAIN}")
        if "tools" in row and _parsed(row["tools"]) != json.loads(tools):
            raise UserError(f"the row's tools are not its environment's tools in {mode} mode ({env_id}): the row "
                            f"was edited; {AGAIN}")
    return env


def _spec_of(spec_json: Any) -> EnvSpec:
    """The row's spec, read only within the size limits and checked against them."""
    from pydantic import ValidationError

    if not isinstance(spec_json, str | bytes):
        raise UserError(f"the row's spec_json is a {type(spec_json).__name__}, not JSON text; {AGAIN}")
    if len(spec_json) > MAX_SPEC_JSON_CHARS:
        raise UserError(f"the row's spec_json is {len(spec_json):,} characters, over the limit of "
                        f"{MAX_SPEC_JSON_CHARS:,} (no real environment comes near it); {AGAIN}")
    try:
        spec = EnvSpec.model_validate_json(spec_json)
    except ValidationError as error:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise UserError(f"the row's spec_json is not a vhdplay environment spec ({where + ': ' if where else ''}"
                        f"{first.get('msg', 'invalid')}); {AGAIN}") from None
    if not 1 <= spec.turn_budget <= MAX_TURN_BUDGET:
        raise UserError(f"the row's turn_budget {spec.turn_budget:,} is outside 1..{MAX_TURN_BUDGET:,}; {AGAIN}")
    ref = spec.reference
    for name in ("optimal_actions", "default_actions", "informed_actions", "naive_actions"):
        if len(getattr(ref, name)) > MAX_REFERENCE_ACTIONS:
            raise UserError(f"the row's reference holds {len(getattr(ref, name)):,} {name}, over the limit of "
                            f"{MAX_REFERENCE_ACTIONS:,}; {AGAIN}")
    values = {"u_star": ref.u_star, "u0": ref.u0, "u_idle": ref.u_idle,
              **{f"baselines.{key}": value for key, value in ref.baselines.items()}}
    for name, value in values.items():
        if not math.isfinite(value):
            raise UserError(f"the row's reference {name} is {value}, not a finite number; {AGAIN}")
    return spec


def _parsed(tools: Any) -> Any:
    try:
        return json.loads(tools) if isinstance(tools, str | bytes) else tools
    except ValueError:
        return None


def _shown(value: Any) -> str:
    """A row's value in a message: its repr, cut short."""
    try:
        text = repr(value)
    except ValueError:  # an integer too long to write out
        return "(a value too long to show)"
    return text if len(text) <= 80 else text[:77] + "..."


def _table(rows: list[dict[str, Any]]):
    """The rows as an Arrow table; a column that is null in every row keeps its type (a family not measured yet
    has no tier, and its file must still concatenate with the others)."""
    import pyarrow

    table = pyarrow.Table.from_pylist(rows)
    typed = {"tier": pyarrow.string(), "informed_score": pyarrow.float64(), "heuristic_score": pyarrow.float64(),
             "naive_score": pyarrow.float64(), "skill_gap": pyarrow.float64(), "facts_fit": pyarrow.float64(),
             "sample_seed": pyarrow.int64()}
    for name, kind in typed.items():
        if name in table.column_names and pyarrow.types.is_null(table.schema.field(name).type):
            table = table.set_column(table.column_names.index(name), name, table.column(name).cast(kind))
    return table


def _write_parquet(table, path: Path) -> None:
    """Written beside and renamed, so a reader never sees half a file."""
    import pyarrow.parquet as pq

    temporary = path.with_name(f".{path.name}.tmp")
    try:
        pq.write_table(table, temporary, compression="zstd")
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _write_file(rows: list[dict[str, Any]], path: Path) -> None:
    if path.suffix == ".parquet":
        _write_parquet(_table(rows), path)
        return
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        with open(temporary, "w") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


HF_SPLITS = ("train", "held_out", "ood")  # the catalog's splits, in the order the card and configs list them
HF_DEFAULT_CONFIG = "default"  # the configuration `datasets.load_dataset(folder)` loads: every family
_HF_NAME = re.compile(r"\w+\Z")  # what Hugging Face allows in a split name; configuration names kept to the same
COLUMN_MEANINGS = {
    "env_id": "the environment's catalog id", "mode": "written, revealed or hidden: how much the prompt tells",
    "prompt": "the opening chat: the instructions as the system message, then \"Begin.\"",
    "environment": "`<env_id>/<mode>`, the key of `integrations.trl.environment_factories`",
    "tools": "the environment's tools in OpenAI function format (`apply_chat_template(tools=...)`)",
    "family": "the mechanism family (one configuration each)",
    "split": "train, held_out (trained families, instances never in train) or ood (families kept out of "
             "training): the Hugging Face split",
    "tier": "difficulty tier: easy, medium, hard, frontier (null: the family is not measured yet)",
    "size": "the instance's size (items, products, ...)", "horizon": "the periods the episode spans",
    "turn_budget": "the tool calls the episode allows", "u0": "the utility of the default policy (score 0)",
    "u_star": "the optimal utility (score 1)", "u_idle": "the utility of doing nothing",
    "baselines_json": "further recorded policies' utilities, as JSON",
    "informed_score": "the informed agent's score: the ceiling a hidden-mode agent reaches in the budget",
    "heuristic_score": "the best heuristic agent's score", "naive_score": "the naive prober's score",
    "skill_gap": "informed_score - naive_score: what choosing which figures to verify is worth",
    "facts_fit": "the share of the probe calls that fit beside the optimal plan",
    "spec_json": "the full spec: `integrations.rows.env_from_trainer_row(row)` rebuilds the environment",
    "sample_seed": "the seed of `vhd export --limit`'s sample (null: every selected environment)",
}


def _split_order(split: str) -> tuple[int, str]:
    return (HF_SPLITS.index(split) if split in HF_SPLITS else len(HF_SPLITS), split)


def _hf_layout(rows: list[dict[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """family -> split -> the indices of its rows, families sorted and splits in HF_SPLITS order; a name that cannot
    be a configuration or split name is refused in one line."""
    if not rows:
        raise UserError("no row to export: the selection is empty; widen --where (or --mode)")
    layout: dict[str, dict[str, list[int]]] = {}
    for index, row in enumerate(rows):
        family, split = row.get("family"), row.get("split")
        if not isinstance(family, str) or not _HF_NAME.match(family) or family == HF_DEFAULT_CONFIG:
            raise UserError(f"family {family!r} cannot name an hf configuration (letters, digits, '_'; not "
                            f"{HF_DEFAULT_CONFIG!r}); export it with --format trl or skyrl, or leave it out with "
                            "--where")
        if not isinstance(split, str) or not _HF_NAME.match(split):
            raise UserError(f"split {split!r} of {row.get('env_id')} is not an hf split name (letters, digits, "
                            "'_'); export it with --format trl or skyrl, or leave it out with --where")
        layout.setdefault(family, {}).setdefault(split, []).append(index)
    return {family: {split: layout[family][split] for split in sorted(layout[family], key=_split_order)}
            for family in sorted(layout)}


def _hf_configs(layout: dict[str, dict[str, list[int]]]) -> str:
    """The YAML `configs:` list: `default` over every family's files, then one configuration per family."""
    def config(name: str, family_glob: str, splits: list[str]) -> str:
        files = "".join(f"  - split: {split}\n    path: data/{family_glob}/{split}-*\n" for split in splits)
        return f"- config_name: {name}\n" + ("  default: true\n" if name == HF_DEFAULT_CONFIG else "") + \
            f"  data_files:\n{files}"

    every = sorted({split for splits in layout.values() for split in splits}, key=_split_order)
    return config(HF_DEFAULT_CONFIG, "*", every) + "".join(
        config(family, family, list(splits)) for family, splits in layout.items())


def _hf_card(rows: list[dict[str, Any]], schema, layout: dict[str, dict[str, list[int]]]) -> str:
    """README.md: the YAML header (configs, tags) and the dataset card: how to load it, the columns, and per
    family the rows by split and tier."""
    tiers = [t for t in (*TIERS, None) if any(row.get("tier") == t for row in rows)]
    seeds = {row.get("sample_seed") for row in rows}
    seed = next(iter(seeds)) if len(seeds) == 1 else None
    environments = len({row.get("env_id") for row in rows})
    modes = ", ".join(sorted({str(row.get("mode")) for row in rows}))
    sample = (f" A seeded sample: `vhd export --limit {environments} --seed {seed}` drew these environments, "
              "stratified by family (the same seed draws the same sample); every row's `sample_seed` says so."
              if seed is not None else "")
    columns = "\n".join(f"| `{field.name}` | `{field.type}` | {COLUMN_MEANINGS.get(field.name, '')} |"
                        for field in schema)
    header = " | ".join(["family", "split", *(t or "no tier" for t in tiers), "rows"])
    counts = []
    for family, splits in layout.items():
        for split, indices in splits.items():
            by_tier = [sum(1 for i in indices if rows[i].get("tier") == t) for t in tiers]
            counts.append(" | ".join([family, split, *map(str, by_tier), str(len(indices))]))
    first = next(iter(layout))
    return (f"---\nconfigs:\n{_hf_configs(layout)}tags:\n- reinforcement-learning\n- tool-use\n- vhdplay\n---\n\n"
            "# vhdplay environments\n\n"
            f"{len(rows)} rows, one per environment and mode ({modes}), from {environments} environments of "
            f"{len(layout)} families.{sample} `prompt` is the opening chat, `spec_json` rebuilds the environment "
            f"(`integrations.rows.env_from_trainer_row`), the reward is the environment's score, {REWARD_FORMULA}.\n\n"
            "## Loading\n\n"
            "The configuration `default` holds every family, each family also has its own; the splits are the rows' "
            "`split` (train; held_out: instances of the trained families never in train; ood: families kept out "
            "of training). Both read the same files, `data/<family>/<split>-00000-of-00001.parquet`.\n\n"
            "```python\nimport datasets\n\n"
            "every = datasets.load_dataset(\"path/to/this/folder\")  # every family, one split per row split\n"
            f"one = datasets.load_dataset(\"path/to/this/folder\", \"{first}\")  # one family\n```\n\n"
            f"## Columns\n\n| column | type | meaning |\n| --- | --- | --- |\n{columns}\n\n"
            "## Rows by family, split and tier\n\n"
            f"| {header} |\n|{' --- |' * (len(tiers) + 3)}\n" + "\n".join(f"| {line} |" for line in counts) + "\n")


def write_trainer_rows(rows: list[dict[str, Any]], out: str | Path, fmt: str) -> Path:
    """trl / skyrl: one file (.parquet, else JSON lines); hf: a dataset folder, one file per family and split, the
    configurations `default` (every family) and one per family over those files, and the dataset card."""
    out = Path(out)
    if not rows:  # an empty file (a Parquet file without columns) would load as no dataset at all
        raise UserError("no row to export: the selection is empty; widen --where (or --mode)")
    if fmt != "hf":
        out.parent.mkdir(parents=True, exist_ok=True)
        _write_file(rows, out)
        return out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--out {out} exists and is not an empty folder; the hf format writes a dataset folder")
    layout = _hf_layout(rows)
    table = _table(rows)  # one schema for every file, so the default configuration concatenates them
    out.parent.mkdir(parents=True, exist_ok=True)
    # written into a folder beside and renamed when whole: a failed export (a full disk) leaves no partial folder
    building = out.parent / f".{out.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    building.mkdir()
    try:
        for family, splits in layout.items():
            (building / "data" / family).mkdir(parents=True, exist_ok=True)
            for split, indices in splits.items():
                _write_parquet(table.take(indices), building / "data" / family / f"{split}-00000-of-00001.parquet")
        (building / "README.md").write_text(_hf_card(rows, table.schema, layout))
        if out.is_dir():
            out.rmdir()  # the empty folder asked for (refused above when not empty)
        building.rename(out)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return out


def read_trainer_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a trl/skyrl file or of an hf folder, each row once (every Parquet file under it: the per-family
    configurations and `default` share the files), with pyarrow only."""
    import pyarrow.parquet as pq

    path = Path(path)
    if path.is_dir():
        return [row for file in sorted(path.rglob("*.parquet")) for row in pq.read_table(file).to_pylist()]
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]
