"""How operations read in a passage's vocabulary: tool-name and description patterns per operation.

Patterns use the passage vocabulary ({item}, {period}, ...) and ``{x_slug}`` forms for tool names. An
operation without an entry gets a generic phrasing from its summary, so a new family renders at once.
"""

from __future__ import annotations

PHRASES: dict[str, tuple[str, str]] = {
    # inventory_dp
    "probe_demand": ("lookup_{item_slug}_demand", "Look up the true number of {items} that will be demanded in a "
                     "given {period}."),
    "probe_price": ("probe_{item_slug}_price", "Reveal the selling price of one {item}, in {currency}."),
    "probe_unit_cost": ("probe_{supplier_slug}_unit_cost", "Reveal what the {supplier} charges per {item} "
                        "ordered, in {currency}."),
    "probe_fixed_cost": ("probe_{order_verb_slug}_fee", "Reveal the fixed fee charged every time you "
                         "{order_verb} from the {supplier}, in {currency}."),
    "probe_holding_cost": ("probe_{unit_slug}_holding_cost", "Reveal the cost of keeping one {item} in stock "
                           "from one {period} to the next, in {currency}."),
    "probe_shortage_terms": ("probe_shortage_terms", "Reveal what happens when {items} run out: whether unmet "
                             "demand is lost or waits, and what each case costs."),
    "read_forecast": ("read_{sticker_slug}", "Read the {sticker} posted for a given {period}: the expected "
                      "demand for {items}, as written by someone else."),
    "check_stock": ("check_{item_slug}_stock", "Show the current {period}, the {items} on hand, the pending "
                    "order and the profit so far."),
    "view_ledger": ("view_{period_slug}_ledger", "Show what happened in every closed {period}."),
    "place_order": ("{order_verb_slug}_{item_slug}", "{order_verb_title} more {items} from the {supplier} for "
                    "the current {period}; they arrive before demand is served."),
    "cancel_order": ("cancel_{order_verb_slug}", "Cancel everything ordered for the current {period} so far."),
    "advance_period": ("close_{period_slug}", "Close the current {period}: the order arrives, demand is served "
                       "and costs are booked. Then the next {period} starts."),
    "finish": ("end_{place_slug}_run", "Stop now. Any remaining {period}s run without new orders."),
    # runtime
    "calculator": ("calculator", "Evaluate an arithmetic expression over numbers: + - * / // % ** "
                   "and min, max, abs, round, sqrt."),
    "turns_left": ("turns_left", "Tell how many turns remain; every call, including probes, spends one."),
}

ARGUMENT_NAMES: dict[str, str] = {
    "period": "{period_slug}",
    "item": "{candidate_slug}",
    "product": "{product_slug}",
    "quantity": "{unit_slug}_count",
}


def slug(text: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in text.lower())
    return "_".join(part for part in cleaned.split("_") if part)[:40] or "x"


def vocabulary(vocab: dict[str, str]) -> dict[str, str]:
    """The vocabulary plus the slug and title forms the patterns use."""
    words = dict(vocab)
    for key, value in vocab.items():
        words[f"{key}_slug"] = slug(value)
        words[f"{key}_title"] = value[:1].upper() + value[1:]
    return words
