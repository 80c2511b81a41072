"""The prose lint: each kind of defect, hand-made in a real spec, is refused at admission; a real spec passes."""

from __future__ import annotations

import re

import pytest

import mechanisms
from envs.admission import admit
from envs.conformance import render_in
from envs.lint import GENERIC_WORDS, LintError, defects, lint
from setter.corpus import load_corpus, passage_by_id, passages_for
from setter.grammar import number_residue
from setter.phrasebook import family_vocabulary_keys
from setter.wording import first_wording_problem, vocabulary_words, wording_problem, words_of
from tests.support import make_spec

FAMILY = "knapsack"


@pytest.fixture(scope="module")
def spec():
    return make_spec(FAMILY, 2)


def _refused(spec, match: str) -> None:
    with pytest.raises(LintError, match=match):
        lint(spec)
    verdict = admit(spec)
    assert not verdict.admitted and verdict.check == "prose", verdict.reason


def _with_description(spec, operation: str, description: str):
    broken = spec.model_copy(deep=True)
    tool = next(t for t in broken.rendering.tools if t.operation == operation)
    tool.description = description
    return broken


def test_a_rendered_environment_passes(spec):
    lint(spec)
    assert admit(spec).admitted


def test_a_generic_template_word_is_refused(spec):
    broken = _with_description(spec, "probe_value", "Assess the true value of one item. Each call spends one turn.")
    _refused(broken, "uses the generic word 'item'")
    broken = spec.model_copy(deep=True)
    broken.rendering.instructions["hidden"] += " Open the next box."
    _refused(broken, "the hidden instructions uses the generic word 'box'")


def test_a_word_of_another_familys_vocabulary_is_refused(spec):
    machines = passage_by_id(spec.rendering.passage_id).bundles["scheduling"]["machines"]
    assert "machines" not in family_vocabulary_keys(FAMILY)
    broken = _with_description(spec, "probe_value", f"Ask the {machines} for a value. Each call spends one turn.")
    _refused(broken, "the passage's word for another task's machines")


def test_an_internal_identifier_in_an_observation_is_refused(spec):
    broken = spec.model_copy(deep=True)
    del broken.rendering.observation_names["ratings"]  # the sticker tool's observation key is shown as it is
    _refused(broken, "an observation shows the internal key 'ratings'")


def test_a_decoy_that_does_not_say_what_it_estimates_is_refused(spec):
    """The decoy's label must name the quantity it estimates (the phrase file's `estimates` nouns), in its name or
    description, and its observation must name the source and the quantity: "catalogue shelf life" quoting values
    is refused."""
    broken = _with_description(spec, "read_ratings", "Read the shelf life of every plot. Each call spends one turn.")
    tool = next(t for t in broken.rendering.tools if t.operation == "read_ratings")
    tool.name = "read_shelf_lives"
    _refused(broken, "does not name what it estimates")
    broken = spec.model_copy(deep=True)
    broken.rendering.observation_names["ratings"] = "shelf lives"
    _refused(broken, "a label that does not name both")


def test_an_article_against_the_sound_is_refused(spec):
    broken = spec.model_copy(deep=True)
    broken.rendering.instructions["hidden"] += " Each season starts at a away ground."
    _refused(broken, "writes 'a' before 'away'; by its sound it takes 'an'")
    broken = _with_description(spec, "submit", "Submit an uniform list. Each call spends one turn.")
    _refused(broken, "writes 'an' before 'uniform'")


def test_a_plural_left_to_the_reader_is_refused(spec):
    broken = spec.model_copy(deep=True)
    broken.rendering.instructions["hidden"] += " There are 6 limit(s)."
    _refused(broken, "writes 't\\(s\\)'")
    broken = spec.model_copy(deep=True)
    broken.rendering.instructions["revealed"] += " There is 1 month, numbered 1 to 1."
    _refused(broken, "numbered 1 to 1")


def test_a_party_of_another_story_is_refused(spec):
    """A supplier, source, persona or counterpart of another passage's bundle in this text ("ordered from the
    cooperage" at a winery whose supplier is a wine merchant) is refused."""
    here = spec.rendering.passage_id
    other = next(p for p in load_corpus() if p.id != here and p.domain != passage_by_id(here).domain)
    supplier = other.bundles["inventory_dp"]["supplier"]
    broken = _with_description(spec, "submit", f"Submit the shortlist to the {supplier}. Each call spends one turn.")
    _refused(broken, "a party of another story")


def test_a_count_the_rules_never_state_is_refused():
    """Observations number three limits on a resource in a period; the rules must say there are three."""
    spec = make_spec("lp", 2)
    lint(spec)
    broken = spec.model_copy(deep=True)
    broken.rendering.instructions["hidden"] = re.sub(r"\d+ limits? in", "limits in",
                                                     broken.rendering.instructions["hidden"])
    with pytest.raises(LintError, match="but the rules never count that many") as refused:
        lint(broken)
    assert refused.value.kind == "count"


def test_a_float_residue_is_refused(spec):
    broken = _with_description(spec, "submit", "Submit the shortlist (worth up to 160.20000000000002). Each call "
                               "spends one turn.")
    _refused(broken, "prints the figure 160.20000000000002")
    broken = spec.model_copy(deep=True)
    broken.rendering.instructions["revealed"] += " The limit is 96.0."
    _refused(broken, "prints the figure 96.0")
    assert number_residue(10.0) and number_residue(0.1 + 0.2) and not number_residue(0.3) and not number_residue(7)


def test_a_tool_that_does_not_say_what_a_call_spends_is_refused(spec):
    tool = next(t for t in spec.rendering.tools if t.operation == "submit")
    broken = _with_description(spec, "submit", tool.description.replace(" Each call spends one turn.", ""))
    _refused(broken, "does not say what a call spends")


def test_words_split_identifiers():
    assert words_of("assess_plot_value 3 limit") == {"assess", "plot", "value", "limit"}
    assert "item" in GENERIC_WORDS and "value" not in GENERIC_WORDS


def test_the_texts_looked_at_together_name_the_same_first_problem_as_one_by_one(spec):
    family, passage = spec.family, spec.rendering.passage_id
    phrase = next(p for p in vocabulary_words(family, passage)[1] if " " in p)  # a foreign phrase of two words or more
    first, rest = phrase.split(" ", 1)
    clean = {"title": spec.rendering.title, "prompt": spec.rendering.written_prompt}
    cases = [
        clean,
        {**clean, "split": f"ends with {first}", "next": f"{rest} starts this"},  # no text holds the whole phrase
        {**clean, "tool": f"Ask about the {phrase} today.", "later": "One more item."},
        {**clean, "tool": "Open the next box.", "later": f"the {phrase}"},
        {**clean, "accented": "Ça coûte 3 €, déjà payé."},  # not ASCII: words read as words_of reads them
        {**clean, "accented": f"Voilà: the {phrase.upper()} arrives."},
    ]
    for texts in cases:
        one_by_one = next(((where, problem) for where, text in texts.items()
                           if (problem := wording_problem(family, passage, text))), None)
        assert first_wording_problem(family, passage, texts) == one_by_one
    assert first_wording_problem(family, passage, cases[1]) is None
    assert first_wording_problem(family, passage, cases[2])[0] == "tool"
    assert first_wording_problem(family, passage, cases[4]) is None
    assert first_wording_problem(family, passage, cases[5])[0] == "accented"


def _declaring():
    return [m.id for m in mechanisms.families()]


@pytest.mark.parametrize("family", _declaring())
def test_every_declaring_family_passes_the_lint_over_several_passages(family):
    for index in range(4):
        lint(make_spec(family, index))


@pytest.mark.parametrize("family", _declaring())
def test_every_family_passes_the_lint_in_every_domain(family):
    """Every family told in the first passage of every domain tagged for it: no defect of any kind."""
    domains = set()
    for index, passage in enumerate(passages_for(family)):
        if passage.domain in domains:
            continue
        domains.add(passage.domain)
        found = list(defects(render_in(family, passage, index)))
        assert not found, f"{family} in {passage.id}: {found[:3]}"
    assert len(domains) == len({p.domain for p in passages_for(family)})
