"""Facts: what an agent needs to know about one instance, declared once per family.

A family's ``facts(params, vocab)`` lists them in the passage's vocabulary. The revealed and written modes state
every fact; the hidden mode states the rules (facts without a probe) and leaves the rest to the probes that reveal
them. Admission checks the declaration against the dynamics (``envs.completeness``): a hidden number no probe
reveals, or a rule one mode does not state, refuses the environment.

A random draw that the episode reveals only when its time comes (the offer of a day when that day arrives, the value
of an option when it is investigated) is declared with :func:`drawn`: the revealed and written modes state it (they
give the whole instance, the hindsight ceiling's information), the hidden mode reaches it through the step that
realises it, and no probe may tell it ahead of time.
"""

from __future__ import annotations

from dataclasses import dataclass

# The rules every family states in every mode: what the score counts (the exact formula), how the episode ends
# when the agent closes it, and what happens when the turns run out before it does.
OBJECTIVE, END, BUDGET_END = "objective", "end", "budget_end"
REQUIRED_RULES = (OBJECTIVE, END, BUDGET_END)


@dataclass(frozen=True)
class Fact:
    """One fact: how the text states it and how the hidden mode reaches it.

    - ``key``: a stable name (``values``, ``capacities``, ``objective``, ...).
    - ``statement``: the sentence that states it, in the passage's vocabulary (revealed and written modes).
    - ``numbers``: the instance's numbers the statement carries.
    - ``probe``: the operation whose observations reveal every one of ``numbers`` in hidden mode (a probe, or an
      info tool such as a posted sticker); None for a rule, which every mode states as it is (a rule carries no
      hidden number).
    - ``draw``: the numbers are random draws the hidden mode reveals only when their time comes, through ``probe``
      (an info, decision or clock operation, never a probe): completeness does not ask a call on a fresh state to
      show them.
    """

    key: str
    statement: str
    numbers: tuple[float, ...] = ()
    probe: str | None = None
    draw: bool = False

    @property
    def is_rule(self) -> bool:
        return self.probe is None


def rule(key: str, statement: str, *numbers: float) -> Fact:
    """A fact stated in every mode (its numbers must be public: counts, bounds, the horizon)."""
    return Fact(key, statement, tuple(float(x) for x in numbers))


def probed(key: str, probe: str, statement: str, numbers) -> Fact:
    """A fact the revealed modes state and the hidden mode reaches through `probe`."""
    return Fact(key, statement, tuple(float(x) for x in numbers), probe)


def drawn(key: str, reveal: str, statement: str, numbers) -> Fact:
    """Random draws the revealed modes state and the hidden mode reveals only when their time comes, through the
    operation `reveal` (the step that realises a draw, or the view that shows it once it has arrived)."""
    return Fact(key, statement, tuple(float(x) for x in numbers), reveal, draw=True)


def stated(facts: list[Fact]) -> str:
    """The text of the revealed and written modes: every statement, in order."""
    return " ".join(fact.statement for fact in facts)


def rules_text(facts: list[Fact]) -> str:
    """The text every mode shares: the rules only."""
    return " ".join(fact.statement for fact in facts if fact.is_rule)
