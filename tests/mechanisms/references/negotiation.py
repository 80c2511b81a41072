"""Independent reference for negotiation on small instances (the conformance suite requires one per family)."""

from __future__ import annotations

SMALL_KNOBS = (5, 4)  # 5 ask levels, 4 rounds: 8 choices per round, 4,096 sequences at most


def reference(mechanism, params) -> float:
    """Enumerate every sequence of per-round choices (walk, accept, wait, each ask) with the rules re-implemented."""
    p = params
    grid = list(range(p.price_low, p.price_high + 1, p.price_step))
    cost, outside = p.round_cost, p.outside_option

    def accepts(round_index: int, lowest: int | None, ask: int) -> bool:
        base = p.base_thresholds[round_index]
        if lowest is None:
            limit = base
        else:
            limit = (base * (100 - p.anchoring_percent) + lowest * p.anchoring_percent) // 100
        return ask <= min(limit, p.reservation_value)

    def best(round_index: int, lowest: int | None) -> float:
        if round_index == p.deadline:
            return outside - cost * p.deadline
        spent = cost * (round_index + 1)
        values = [outside - cost * round_index,  # walk away before this round
                  p.counteroffers[round_index] - spent,  # accept the standing counteroffer
                  best(round_index + 1, lowest)]  # let the round pass
        for ask in grid:
            if ask > p.walkoff_price:
                values.append(outside - spent)
            elif accepts(round_index, lowest, ask):
                values.append(ask - spent)
            else:
                values.append(best(round_index + 1, ask if lowest is None else min(ask, lowest)))
        return float(max(values))

    return best(0, None)
