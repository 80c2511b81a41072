"""How operations read in a passage's vocabulary: tool-name and description patterns per operation.

Patterns use the passage vocabulary ({item}, {period}, ...) and ``{x_slug}`` forms for tool names. An
operation without an entry gets a generic phrasing from its summary, so a new family renders at once.
"""

from __future__ import annotations

PHRASES: dict[str, dict[str, tuple[str, str]]] = {
    "inventory_dp": {
        "probe_demand": ("lookup_{item_slug}_demand", "Look up the true number of {items} that will be demanded in "
                         "a given {period}."),
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
        "advance_period": ("close_{period_slug}", "Close the current {period}: the order arrives, demand is "
                           "served and costs are booked. Then the next {period} starts."),
        "finish": ("end_{place_slug}_run", "Stop now. Any remaining {period}s run without new orders."),
    },
    "knapsack": {
        "probe_value": ("assess_{candidate_slug}_value", "Assess the true value of one {candidate}, in {currency}."),
        "probe_weights": ("measure_{candidate_slug}_needs", "Measure how much of every limit on {capacity} one "
                          "{candidate} would use."),
        "probe_capacity": ("probe_{capacity_slug}_limits", "Reveal every limit on {capacity} at {place}."),
        "read_rating": ("read_{sticker_slug}", "Read the {sticker} of one {candidate}: a rating written by someone "
                        "else."),
        "list_items": ("list_{candidates_slug}", "List the numbers of the {candidates} and how many limits apply."),
        "view_selection": ("view_shortlist", "Show the {candidates} chosen so far and the {capacity} they use."),
        "select_item": ("shortlist_{candidate_slug}", "Add one {candidate} to the shortlist; refused if a limit on "
                        "{capacity} would be exceeded."),
        "drop_item": ("drop_{candidate_slug}", "Remove one {candidate} from the shortlist."),
        "clear_selection": ("clear_shortlist", "Remove every {candidate} from the shortlist."),
        "submit": ("submit_shortlist", "Submit the shortlist to {organization}; this ends the episode."),
        "finish": ("walk_away", "Stop now; the current shortlist stands."),
    },
    "lp": {
        "probe_profit": ("probe_{product_slug}_margin", "Reveal the true profit per unit of one {product} in the "
                         "current {period}, in {currency}."),
        "probe_usage": ("probe_{product_slug}_recipe", "Reveal how much of every {resource} one unit of a "
                        "{product} uses in the current {period}."),
        "probe_resource_limits": ("probe_{resources_slug}", "Reveal how many {resources} are available in the "
                                  "current {period}."),
        "probe_demand_caps": ("probe_{products_slug}_market", "Reveal the most units of each {product} that can be "
                              "sold in the current {period}."),
        "read_profit_sticker": ("read_{sticker_slug}", "Read the {sticker}: the profit per unit of one {product}, "
                                "as written by someone else."),
        "list_products": ("list_{products_slug}", "List the numbers of the {products} and how many {period}s "
                          "there are."),
        "view_plan": ("view_{period_slug}_plan", "Show the current {period}, its planned quantities and the "
                      "committed ones."),
        "resource_slack": ("check_free_{resources_slug}", "Show how much of every {resource} is still free in the "
                           "current {period}."),
        "set_production": ("schedule_{product_slug}", "Set how many units of one {product} to make in the current "
                           "{period}; refused if a {resource} limit would be exceeded."),
        "clear_production": ("clear_{period_slug}_plan", "Set every quantity of the current {period} to zero."),
        "advance_period": ("commit_{period_slug}", "Commit the plan of the current {period} and start the next."),
        "finish": ("close_the_books", "Stop now; this {period}'s plan stands and later {period}s make nothing."),
    },
    "*": {
        "calculator": ("calculator", "Evaluate an arithmetic expression over numbers: + - * / // % ** "
                       "and min, max, abs, round, sqrt."),
        "turns_left": ("turns_left", "Tell how many turns remain; every call, including probes, spends one."),
    },
}


def phrase(family: str, operation: str, summary: str) -> tuple[str, str]:
    """(tool-name pattern, description pattern) for an operation; generic from its summary if unknown."""
    for scope in (family, "*"):
        if operation in PHRASES.get(scope, {}):
            return PHRASES[scope][operation]
    return operation, summary[:1].upper() + summary[1:] + "."


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
