"""The counts and lists README.md and CONTRIBUTING.md state that the code owns: the number of families, the families
table and its groups, the number of corpus domains, the phrase file's keys and the parameter helpers a family uses.
A family added, a domain added or a phrase key added without its documentation fails here, naming the line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mechanisms
from mechanisms import params as param_helpers
from setter.corpus import domains
from setter.phrasebook import PHRASE_KEYS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "CONTRIBUTING.md")


def _lines(name: str) -> list[tuple[int, str]]:
    return list(enumerate((ROOT / name).read_text().splitlines(), start=1))


@pytest.mark.parametrize("doc", DOCS)
def test_every_stated_family_count_is_the_registrys(doc):
    families = len(mechanisms.families())
    stated = [(n, int(m.group(1)), line) for n, line in _lines(doc)
              for m in re.finditer(r"\b(\d+) (?:registered |exact |mechanism )?famil(?:y|ies)\b", line)]
    wrong = [f"{doc}:{n} says {count} families, the registry has {families}: {line.strip()[:80]}"
             for n, count, line in stated if count != families]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("doc", DOCS)
def test_every_stated_domain_count_is_the_corpus(doc):
    count = len(domains())
    stated = [(n, int(m.group(1)), line) for n, line in _lines(doc)
              for m in re.finditer(r"(?<!at least )\b(\d+) domains\b", line)]
    wrong = [f"{doc}:{n} says {said} domains, the corpus has {count}: {line.strip()[:80]}"
             for n, said, line in stated if said != count]
    assert not wrong, "\n".join(wrong)


def test_the_readme_families_table_lists_every_registered_family_in_its_group():
    text = (ROOT / "README.md").read_text()
    table = text.split("| group (`--families` accepts it) | family | reference solver |", 1)[1].split("\n\n", 1)[0]
    listed, group = {}, None
    for row in table.strip().splitlines()[1:]:
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        group = cells[0].strip("`") or group
        listed[cells[1].strip("`")] = group
    registered = {m.id: m.group for m in mechanisms.families()}
    missing, extra = sorted(set(registered) - set(listed)), sorted(set(listed) - set(registered))
    moved = sorted(f for f in set(listed) & set(registered) if listed[f] != registered[f])
    assert listed == registered, (f"README.md's families table differs from the registry: missing {missing}, not "
                                  f"registered {extra}, in the wrong group {moved}; fix: one row per family under its "
                                  "group (the family's `group`), with its reference solver")


def test_contributing_documents_every_phrase_key_and_parameter_helper():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    missing = [key for key in PHRASE_KEYS if f"`{key}`" not in text]
    assert not missing, f"CONTRIBUTING.md does not name the phrase file keys {missing} (setter.phrasebook.PHRASE_KEYS)"
    helpers = [name for name, value in vars(param_helpers).items()
               if callable(value) and getattr(value, "__module__", "") == param_helpers.__name__
               and not name.startswith("_")]
    assert helpers, "mechanisms.params defines no helper"
    undocumented = [name for name in helpers if f"`{name}`" not in text]
    assert not undocumented, f"CONTRIBUTING.md does not name the parameter helpers {undocumented} (mechanisms/params)"


def test_the_readme_layout_names_every_package():
    text = (ROOT / "README.md").read_text()
    layout = {line.split("/", 1)[0] for line in text.split("schemas/     wire types", 1)[1].split("```", 1)[0]
              .splitlines() if "/" in line.split(" ", 1)[0]} | {"schemas"}
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} - {"tests"}
    assert packages <= layout, f"README.md's layout block does not name the packages {sorted(packages - layout)}"
