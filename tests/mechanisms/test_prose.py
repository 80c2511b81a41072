"""Articles by sound, plurals by count, figures as a ledger prints them (mechanisms.prose)."""

from __future__ import annotations

import pytest

from mechanisms.prose import a, count, figure, gerund, ledger, money, numbered, plural, there_are_numbered


@pytest.mark.parametrize(("phrase", "expected"), [
    ("away ground", "an away ground"), ("undergraduate research placement", "an undergraduate research placement"),
    ("alteration ticket", "an alteration ticket"), ("outreach", "an outreach"), ("hour", "an hour"),
    ("uniform", "a uniform"), ("European tender", "a European tender"), ("MRI scanner", "an MRI scanner"),
    ("8-hour shift", "an 8-hour shift"), ("11 kV feeder", "an 11 kV feeder"), ("one-off fee", "a one-off fee"),
])
def test_the_article_follows_the_sound(phrase, expected):
    assert a(phrase) == expected


def test_plurals_follow_the_count():
    assert count(1, "month") == "1 month" and count(5, "month") == "5 months" and count(0, "limit") == "0 limits"
    assert count(2, "person") == "2 people" and plural("pallet of feed") == "pallets of feed"
    assert numbered(1, "month") == "1 month (number 1)" and numbered(3, "day") == "3 days, numbered 1 to 3"
    assert there_are_numbered(1, "round") == "There is 1 round (number 1)"
    assert gerund("restock") == "restocking" and gerund("buy in") == "buying in"


def test_figures_print_as_a_ledger_does():
    assert figure(160.20000000000002) == "160.2" and figure(96.0) == "96" and figure(1234567.0) == "1234567"
    assert figure(1 / 3) == "0.3333" and figure(-2.5) == "-2.5" and money(12.5) == "12.50" and money(12) == "12"
    assert ledger(10.0) == 10 and isinstance(ledger(10.0), int) and ledger(0.1 + 0.2) == 0.3
    assert ledger(True) is True and ledger("x") == "x" and ledger(float("inf")) == float("inf")
