"""How the text prints words and numbers: articles by sound, plurals by count, figures as a ledger prints them.

Every family's facts and every rendering compose their sentences with these, never with hand rules: ``a("hour")``
is "an hour", ``count(1, "month")`` is "1 month", ``count(5, "month")`` "5 months", ``figure(160.20000000000002)``
"160.2" and ``figure(96.0)`` "96". Articles and plurals come from ``inflect`` (a number or an acronym takes the
article of how it is read: "an 8-hour shift", "an MRI scanner").

The same rounding makes an observation's numbers (``ledger``): the JSON value stays a number, an integral float
becomes an integer and a float loses its residue, so a figure prints the same in the text and in the observation.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any


def _import_inflect():
    """inflect, imported without typeguard's instrumentation of its methods.

    inflect decorates its engine's methods with typeguard's ``@typechecked``, which at import re-reads and
    recompiles inflect's 4,000-line source once per method: about 2 s of every process's start (every command and
    stage worker that imports mechanisms), and a type check on every call after. Our calls pass strings and ints
    (tests/mechanisms/test_prose.py), so the decorator is made a no-op while inflect is imported, as Python's
    optimised mode (-O) makes it. A process that imported inflect before keeps its instrumented copy.
    """
    import typeguard

    def unchecked(target=None, **_options):
        return target if target is not None else (lambda function: function)

    instrumenting = typeguard.typechecked
    typeguard.typechecked = unchecked
    try:
        import inflect
    finally:
        typeguard.typechecked = instrumenting
    return inflect


# a figure keeps this many decimals at most: money to the cent and beyond, no float residue
DECIMALS = 4
_ENGINE = _import_inflect().engine()
_LEADING_NUMBER = re.compile(r"^(\d+(?:\.\d+)?)")


def ledger(x: Any) -> Any:
    """A number as an observation shows it: an integral float as an int, a float rounded to DECIMALS places (no
    residue); anything else (a bool, an int, a string, a non-finite float) as it is."""
    if isinstance(x, bool) or not isinstance(x, float) or not math.isfinite(x):
        return x
    rounded = round(x, DECIMALS)
    if rounded == int(rounded) and abs(rounded) < 2 ** 53:
        return int(rounded)
    return rounded


def figure(x: float) -> str:
    """A number as the text prints it: the ledger's value, written in full (never in exponent form)."""
    value = ledger(float(x)) if not isinstance(x, bool) else x
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, float) or not math.isfinite(value):
        return str(value)
    return f"{value:.{DECIMALS}f}".rstrip("0").rstrip(".")


def money(x: float) -> str:
    """An amount of money as the text prints it: to the cent, whole amounts without decimals ("12", "12.50")."""
    cents = round(float(x) * 100)
    return str(cents // 100) if cents % 100 == 0 else f"{cents / 100:.2f}"


def _spoken(phrase: str) -> str:
    """The phrase as it is read aloud for its article: a leading number in words ("8-hour" -> "eight-hour")."""
    match = _LEADING_NUMBER.match(phrase)
    if match is None:
        return phrase
    return _ENGINE.number_to_words(match.group(1)) + phrase[match.end():]


@cache
def article(phrase: str) -> str:
    """ "a" or "an" for the phrase, by its sound ("an hour", "a uniform", "an MRI scanner", "an 8-hour shift")."""
    return _ENGINE.a(_spoken(phrase)).split(" ", 1)[0]


def a(phrase: str) -> str:
    """The phrase with its indefinite article: "an away ground"."""
    return f"{article(phrase)} {phrase}"


def capital(text: str) -> str:
    """The text with its first letter in upper case ("an outreach" -> "An outreach")."""
    return text[:1].upper() + text[1:]


@cache
def plural(noun: str) -> str:
    """The plural of a noun phrase ("month" -> "months", "pallet of feed" -> "pallets of feed")."""
    return _ENGINE.plural_noun(noun) or noun


def count(n: float, noun: str, nouns: str | None = None) -> str:
    """A count and its noun, in the number's form: "1 month", "5 months" (`nouns` is the plural when given)."""
    text = figure(n)
    return f"{text} {noun}" if text == "1" else f"{text} {nouns or plural(noun)}"


def numbered(n: int, noun: str, nouns: str | None = None) -> str:
    """A numbered set of things as the rules introduce it: "5 months, numbered 1 to 5"; "1 month (number 1)"."""
    return f"{count(n, noun, nouns)} (number 1)" if n == 1 else f"{count(n, noun, nouns)}, numbered 1 to {n}"


def there_are(n: int, noun: str, nouns: str | None = None) -> str:
    """ "There is 1 month" / "There are 5 months" (the verb agrees with the count)."""
    return f"There {'is' if n == 1 else 'are'} {count(n, noun, nouns)}"


@cache
def gerund(verb: str) -> str:
    """A verb phrase's -ing form: "restock" -> "restocking", "buy in" -> "buying in"."""
    head, _, rest = verb.partition(" ")
    return f"{_ENGINE.present_participle(head)} {rest}".strip()


def there_are_numbered(n: int, noun: str, nouns: str | None = None) -> str:
    """ "There are 5 months, numbered 1 to 5" / "There is 1 month (number 1)"."""
    return f"There {'is' if n == 1 else 'are'} {numbered(n, noun, nouns)}"
