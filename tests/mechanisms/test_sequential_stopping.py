"""sequential_stopping: the backward-induction thresholds against brute force over every online policy,
the hindsight ceiling against every policy on every draw, data form, refusals, policies, rendering."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest

import mechanisms
from mechanisms.base import ActionError
from mechanisms.canonical import canonical_data, canonical_number
from mechanisms.sequential_stopping import StoppingParams, backward_induction, online_policy
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary

M = mechanisms.get("sequential_stopping")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})
ACCEPT, PASS, WALK = 0, 1, 2


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> StoppingParams:
    return M.sample(np.random.default_rng([17, i]), size or M.default_size, horizon or M.default_horizon)


def _with_offers(p: StoppingParams, offers) -> StoppingParams:
    return M.params_from_data({**p.model_dump(), "offers": [float(x) for x in offers]})


def _sequences(p: StoppingParams, n: int):
    """Every offer sequence of length n (as support indices) and its probability."""
    for seq in itertools.product(range(p.support), repeat=n):
        yield seq, float(np.prod([p.offer_probabilities[i] for i in seq]))


def _every_policy(p: StoppingParams, n: int, last_pass: bool = True):
    """Payoffs of every deterministic online policy on every offer sequence of length n.

    A policy maps each observed history (x_1..x_t) to accept, pass or walk away; with last_pass=False a pass
    in the last round (dominated by walking away, since waiting costs are non-negative) is left out.
    Returns (sequences, probabilities, payoff matrix sequences x policies).
    """
    histories = [h for t in range(1, n + 1) for h in itertools.product(range(p.support), repeat=t)]
    index = {h: i for i, h in enumerate(histories)}
    radices = [3 if len(h) < n or last_pass else 2 for h in histories]
    total = int(np.prod(radices))
    codes = np.arange(total)
    policies = np.empty((total, len(histories)), dtype=np.int8)
    for j, radix in enumerate(radices):
        codes, digit = np.divmod(codes, radix)
        policies[:, j] = np.where((radix == 2) & (digit == 1), WALK, digit)
    c, fb = p.waiting_cost, p.fallback
    seqs, probs, payoffs = [], [], []
    for seq, prob in _sequences(p, n):
        payoff = np.full(total, fb - c * n)
        alive = np.ones(total, dtype=bool)
        for t in range(1, n + 1):
            action = policies[:, index[seq[:t]]]
            payoff[alive & (action == ACCEPT)] = p.offer_values[seq[t - 1]] - c * (t - 1)
            payoff[alive & (action == WALK)] = fb - c * (t - 1)
            alive &= action == PASS
        seqs.append(seq)
        probs.append(prob)
        payoffs.append(payoff)
    return seqs, np.asarray(probs), np.asarray(payoffs)


def _tree_value(p: StoppingParams, t: int) -> float:
    """Expectimax over the history tree from the start of round t (no Markov shortcut: every history)."""
    n, c = p.rounds, p.waiting_cost

    def node(round_: int) -> float:  # value (ignoring sunk costs) before seeing the offer of round_
        if round_ > n:
            return p.fallback
        cont = node(round_ + 1) - c
        return sum(q * max(x, p.fallback, cont) for x, q in zip(p.offer_values, p.offer_probabilities, strict=True))

    return node(t)


def _expected_online(p: StoppingParams) -> float:
    """The recorded online policy played on every possible draw through the dynamics, weighted."""
    total = 0.0
    for seq, prob in _sequences(p, p.rounds):
        q = _with_offers(p, [p.offer_values[i] for i in seq])
        total += prob * M.run(q, M.baseline_actions(q)["online_optimal"])
    return total


TINY = [(2, 2, True), (3, 2, True), (2, 3, False), (3, 1, True)]


@pytest.mark.parametrize("k, n, last_pass", TINY)
@pytest.mark.parametrize("i", range(4))
def test_thresholds_equal_brute_force_over_every_online_policy(k, n, last_pass, i):
    p = M.sample(np.random.default_rng([18, k, n, i]), k, max(n, 2))
    p = _with_offers(p, p.offers[:n])
    thresholds, values = backward_induction(p)
    _, probs, payoffs = _every_policy(p, n, last_pass)
    best = float(np.max(probs @ payoffs))
    assert best == pytest.approx(values[0], abs=1e-9)
    # the threshold policy attains the maximum over all deterministic online policies
    assert _expected_online(p) == pytest.approx(best, abs=1e-9)
    # every threshold is the walk-away value or the brute-force value of continuing one round later
    for t in range(1, n + 1):
        rest = n - t
        if rest == 0:
            cont = p.fallback
        else:
            _, sub_probs, sub_payoffs = _every_policy(_with_offers(p, p.offers[:rest]), rest, last_pass)
            cont = float(np.max(sub_probs @ sub_payoffs))
        assert values[t] == pytest.approx(cont, abs=1e-9)
        assert thresholds[t - 1] == pytest.approx(max(p.fallback, cont - p.waiting_cost), abs=1e-9)


@pytest.mark.parametrize("k, n, last_pass", TINY)
@pytest.mark.parametrize("i", range(3))
def test_the_hindsight_ceiling_bounds_every_policy_on_every_draw(k, n, last_pass, i):
    p = M.sample(np.random.default_rng([19, k, n, i]), k, max(n, 2))
    p = _with_offers(p, p.offers[:n])
    seqs, _, payoffs = _every_policy(p, n, last_pass)
    for seq, row in zip(seqs, payoffs, strict=True):
        q = _with_offers(p, [p.offer_values[j] for j in seq])
        solution = M.solve(q)
        assert np.all(row <= solution.u_star + 1e-9)
        assert float(np.max(row)) == pytest.approx(solution.u_star, abs=1e-9)  # some policy reaches it
        assert M.run(q, solution.optimal_actions) == solution.u_star


@pytest.mark.parametrize("knobs", [(3, 4), (4, 5), (2, 8), (5, 4)])
def test_backward_induction_matches_the_history_tree_and_the_played_policy(knobs):
    for i in range(3):
        p = _sample(300 + i, *knobs)
        thresholds, values = backward_induction(p)
        for t in range(1, p.rounds + 2):
            assert values[t - 1] == pytest.approx(_tree_value(p, t), abs=1e-9)
        assert all(a >= b - 1e-12 for a, b in zip(thresholds, thresholds[1:], strict=False))  # falling over time
        assert thresholds[-1] == p.fallback
        assert _expected_online(p) == pytest.approx(values[0], abs=1e-9)


def test_solver_facts_and_baseline():
    for i in range(10):
        p = _sample(i)
        o = M.outcome(p)
        facts = o.solution.facts
        thresholds, values = backward_induction(p)
        # the facts as the spec records them: canonical (mechanisms.canonical)
        assert facts["accept_thresholds"] == canonical_data(thresholds)
        assert facts["continuation_values"] == canonical_data(values)
        assert facts["online_expected_value"] == canonical_number(values[0])
        assert facts["online_utility"] == o.baselines["online_optimal"]
        assert o.baselines["online_optimal"] <= o.solution.u_star
        assert len(facts["accept_thresholds"]) == p.rounds
        json.dumps(facts)
        hindsight = facts["hindsight_round"]
        expected = p.fallback if hindsight == 0 else p.offers[hindsight - 1] - p.waiting_cost * (hindsight - 1)
        assert o.solution.u_star == expected
        assert o.u_idle == p.fallback


def test_online_policy_accepts_at_the_threshold_and_walks_when_waiting_does_not_pay():
    p = M.params_from_data({"offer_values": [10, 20], "offer_probabilities": [0.5, 0.5], "offers": [10, 10, 20],
                            "waiting_cost": 1, "fallback": 0})
    thresholds, values = backward_induction(p)
    assert values == [18.0, 17.0, 15.0, 0.0]
    assert thresholds == [16.0, 14.0, 0.0]
    assert online_policy(p) == [Action(op="pass_offer"), Action(op="pass_offer"), Action(op="accept_offer")]
    assert M.run(p, online_policy(p)) == 18.0
    # waiting does not pay against a fallback of 19: walk away below the threshold, accept at or above it
    w = M.params_from_data({**p.model_dump(), "fallback": 19})
    assert backward_induction(w) == ([19.0, 19.0, 19.0], [19.5, 19.5, 19.5, 19.0])
    assert online_policy(w) == [Action(op="finish")] and M.run(w, online_policy(w)) == 19.0
    w = _with_offers(w, [20, 10, 10])
    assert online_policy(w) == [Action(op="accept_offer")] and M.run(w, online_policy(w)) == 20.0
    # a fallback above every offer: walk away at once
    q = M.params_from_data({**p.model_dump(), "fallback": 25})
    assert online_policy(q) == [Action(op="finish")] and M.solve(q).optimal_actions == [Action(op="finish")]
    assert M.solve(q).u_star == 25.0
    # waiting is free and the top offer comes last: the ceiling takes it
    r = M.params_from_data({**p.model_dump(), "waiting_cost": 0})
    assert M.solve(r).u_star == 20.0 and M.solve(r).facts["hindsight_round"] == 3


def test_the_posted_best_defaults_to_the_best_offer_value():
    """Without posted figures in the data, the family posts its own (determinism and data round trips: conformance)."""
    p = M.params_from_data({"offer_values": [1, 2], "offer_probabilities": [0.5, 0.5], "offers": [1],
                            "waiting_cost": 0, "fallback": 0})
    assert p.posted_best == 2.0


def test_a_redraw_draws_every_offer_anew_from_the_distribution_and_keeps_the_rest():
    """envs.difficulty scores the family in expectation over redrawn offers: a redraw changes only the offers, draws
    them from the offer distribution (the online policy's mean over redraws is its expected value W_1), and the same
    generator state gives the same redraw."""
    p = _sample(3, 6, 40)
    q = M.redraw(p, np.random.default_rng(5))
    assert q.model_dump(exclude={"offers"}) == p.model_dump(exclude={"offers"}) and q.offers != p.offers
    assert len(q.offers) == p.rounds and set(q.offers) <= set(p.offer_values)
    assert M.redraw(p, np.random.default_rng(5)) == q and M.params_from_data(q.model_dump()) == q
    rng = np.random.default_rng(6)
    paths = [M.redraw(p, rng) for _ in range(600)]
    drawn = np.array([x for path in paths for x in path.offers])
    for value, probability in zip(p.offer_values, p.offer_probabilities, strict=True):
        assert np.mean(drawn == value) == pytest.approx(probability, abs=0.01)
    online = np.array([M.run(path, online_policy(path)) for path in paths])
    expected = M.solve(p).facts["online_expected_value"]
    assert abs(online.mean() - expected) <= 4 * online.std() / np.sqrt(len(online))


CORNERS = [(M.size_range[0], M.horizon_range[0]), (M.size_range[1], M.horizon_range[1])]


@pytest.mark.parametrize("knobs", [*M.difficulty_grid, *CORNERS])
def test_sampling_is_valid_across_the_knobs(knobs):
    size, horizon = knobs
    for i in range(5):
        p = _sample(50 + i, size, horizon)
        assert p.support == size and p.rounds == horizon
        assert p.posted_best > max(p.offer_values)  # the sticker is exaggerated
        assert p.waiting_cost >= 1 and p.fallback >= 0
        assert M.run(p, M.solve(p).optimal_actions) == M.solve(p).u_star


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    assert len(ops) >= 10 and {op.kind for op in ops} == {"probe", "info", "decision", "clock"}
    assert [op.name for op in ops if op.decoy] == ["read_posted_best"]
    assert "finish" in {op.name for op in ops} and len({op.name for op in ops}) == len(ops)
    assert {name: op.kind for op in ops for name in [op.name] if op.kind == "probe"} == {
        "probe_fallback": "probe", "probe_waiting_cost": "probe", "probe_offer_distribution": "probe"}
    for op in ops:
        for name, arg in op.args.items():
            if name == "thresholds":
                assert op.name == "hold_out" and arg.type == "array" and arg.items == "number"
                assert arg.max_items == p.rounds
                continue
            assert name == "count" and arg.type == "integer" and arg.minimum == 1 and arg.maximum == p.rounds
    assert M.group == "far_ood_structure" and M.version == 4
    assert M.probe_allowance(p) == 3 == len(M.listing_order(M.knowledge(p)))
    assert all(M.size_range[0] <= s <= M.size_range[1] and M.horizon_range[0] <= h <= M.horizon_range[1]
               for s, h in M.difficulty_grid)
    assert 3 <= len(M.difficulty_grid) <= 6
    json.dumps(M.initial_state(p))


def test_describe_states_every_fact_and_the_rules_carry_no_hidden_number():
    from mechanisms.facts import REQUIRED_RULES, rules_text

    p = M.params_from_data({"offer_values": [101, 133, 177], "offer_probabilities": [0.55, 0.3, 0.15],
                            "offers": [133, 177, 101, 101], "waiting_cost": 7, "fallback": 61, "posted_best": 190})
    text = M.describe(p, VOCAB)
    for number in ("101", "133", "177", "0.55", "0.3", "0.15", " 7 ", "61", "190", "4 periods", "1: 133; 2: 177"):
        assert number in text
    assert "gone for good" in text and "(t - 1)" in text
    facts = M.facts(p, VOCAB)
    assert {f.key for f in facts} >= set(REQUIRED_RULES)
    rules = rules_text(facts)
    for number in ("101", "133", "177", "0.55", " 7 ", "61"):
        assert number not in rules
    assert set(M.secret_numbers(p)) >= {101, 133, 177, 0.55, 7, 61}
    assert 4 in M.public_numbers(p) and 3 in M.public_numbers(p)


def _redrawn(p: StoppingParams, seed: int, keep: int = 1) -> StoppingParams:
    """The same instance with every offer after the first `keep` drawn anew from the distribution."""
    rng = np.random.default_rng(seed)
    later = rng.choice(p.offer_values, size=p.rounds - keep, p=np.asarray(p.offer_probabilities)).tolist()
    return _with_offers(p, [*p.offers[:keep], *later])


def _fresh_observations(p: StoppingParams) -> dict[str, list]:
    """Every probe and info call (each argument the listing makes) on a fresh state."""
    from envs.completeness import operation_observations

    operations = [op for op in M.operations(p) if op.kind in ("probe", "info")]
    return operation_observations(M, p, operations)


@pytest.mark.parametrize("knobs", [(3, 4), (5, 8), (10, 40)])
def test_no_tool_reveals_a_future_offer(knobs):
    """Issue 26: uncertainty stays uncertain. On a fresh state the offer of round 1 is on the table; every probe and
    info call shows the same thing whatever the offers of the later rounds are, so none tells a future draw."""
    for i in range(4):
        p = _sample(500 + i, *knobs)
        seen = _fresh_observations(p)
        assert set(seen) == {"probe_fallback", "probe_waiting_cost", "probe_offer_distribution", "read_posted_best",
                             "view_offer", "view_history", "view_calendar"}
        for seed in range(6):
            q = _redrawn(p, seed)
            assert _fresh_observations(q) == seen
        # and the later offers really differ across the redraws (the check above could not pass by accident)
        assert len({tuple(_redrawn(p, seed).offers) for seed in range(6)}) > 1
    # no operation is a look-ahead: the only ways to see an offer are the view of the current one and passing
    assert not any("scout" in op.name or op.name == "probe_draw" for op in M.operations(p))


def test_an_offer_is_seen_when_its_round_arrives():
    p = M.params_from_data({"offer_values": [101, 133, 177, 205], "offer_probabilities": [0.4, 0.3, 0.2, 0.1],
                            "offers": [101, 205, 177, 133], "waiting_cost": 7, "fallback": 61, "posted_best": 250})
    state = M.initial_state(p)
    for op in M.operations(p):
        if op.kind in ("probe", "info") and not op.args:
            reply = M.apply(p, state, Action(op=op.name))
            if op.name != "probe_offer_distribution":
                assert "205" not in json.dumps(reply) and "177" not in json.dumps(reply)
    assert M.apply(p, state, Action(op="view_offer"))["offer"] == 101
    assert M.apply(p, state, Action(op="view_history")) == {"passed offers": []}
    reply = M.apply(p, state, Action(op="pass_offer"))
    assert reply["offer"] == 205 and reply["waiting cost so far"] == 7
    assert M.apply(p, state, Action(op="view_history")) == {"passed offers": [{"round": 1, "offer": 101.0}]}
    # accepting states what was done; the result is the ending's (the environment appends the ledger)
    assert M.apply(p, state, Action(op="accept_offer")) == {"accepted round": 2, "finished": True}
    assert M.ledger(p, state) == {"accepted round": 2, "offer": 205.0, "waiting cost": 7.0, "total result": 198.0}


def test_the_offers_are_declared_as_draws_revealed_when_their_round_arrives():
    facts = {f.key: f for f in M.facts(_sample(3), VOCAB)}
    offers = facts["offers"]
    assert offers.draw and offers.probe == "view_offer" and offers.numbers == tuple(_sample(3).offers)
    assert not any(f.draw for key, f in facts.items() if key != "offers")


def test_hold_out_passes_until_an_offer_reaches_its_rounds_threshold():
    p = M.params_from_data({"offer_values": [10, 20, 30], "offer_probabilities": [0.5, 0.3, 0.2],
                            "offers": [20, 10, 30, 20, 10], "waiting_cost": 1, "fallback": 5, "posted_best": 35})
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="hold_out", args={"thresholds": [25, 15, 40]}))
    # round 1 (20 < 25) and round 2 (10 < 15) are passed, round 3 (30 < 40) too: the list ends at round 4
    assert reply == {"passed": 3, "waiting cost of these passes": 3.0, "round": 4, "offer": 20.0, "offers left": 1,
                     "waiting cost so far": 3.0, "threshold reached": False}
    assert state["passed"] == [1, 2, 3] and not M.finished(state)
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="hold_out", args={"thresholds": [25, 10, 40]}))
    assert reply["round"] == 2 and reply["passed"] == 1 and reply["threshold reached"]
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="hold_out", args={"thresholds": [20]}))
    assert reply["round"] == 1 and reply["passed"] == 0 and reply["threshold reached"] and state["passed"] == []
    # holding out past the last round walks away after every pass
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="hold_out", args={"thresholds": [99] * 5}))
    assert reply["walked away"] and M.finished(state) and M.utility(p, state) == 5 - 5
    late = M.initial_state(p)
    M.apply(p, late, Action(op="skip_offers", args={"count": 3}))
    before = copy.deepcopy(late)
    for bad in ([1, 2, 3], [], "x", [1, float("nan")], None):
        with pytest.raises(ActionError):
            M.apply(p, late, Action(op="hold_out", args={"thresholds": bad}))
        assert late == before


def test_default_trusts_the_sticker():
    p = M.params_from_data({"offer_values": [10, 20, 30], "offer_probabilities": [0.5, 0.3, 0.2],
                            "offers": [20, 30, 10, 20], "waiting_cost": 1, "fallback": 5, "posted_best": 35})
    actions = M.default_actions(p)
    assert actions == [Action(op="read_posted_best"), Action(op="hold_out", args={"thresholds": [35.0] * 3}),
                       Action(op="accept_offer")]
    assert M.run(p, actions) == 17.0 and M.solve(p).u_star == 29.0
    q = M.params_from_data({**p.model_dump(), "posted_best": 25})
    assert M.default_actions(q)[1] == Action(op="hold_out", args={"thresholds": [25.0] * 3})
    assert M.run(q, M.default_actions(q)) == 29.0
    assert not any(M.operation(p, a.op).kind == "probe" for a in actions)


def test_passing_every_offer_walks_away_with_the_fallback_minus_costs():
    p = _sample(4)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="skip_offers", args={"count": p.rounds - 1}))
    assert not M.finished(state) and state["round"] == p.rounds
    reply = M.apply(p, state, Action(op="pass_offer"))
    assert reply["finished"] and M.finished(state)
    assert M.utility(p, state) == p.fallback - p.waiting_cost * p.rounds
    state = M.initial_state(p)
    M.apply(p, state, Action(op="skip_offers", args={"count": 2}))
    M.apply(p, state, Action(op="finish"))
    assert M.utility(p, state) == p.fallback - 2 * p.waiting_cost


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(2)
    fresh, late, done = M.initial_state(p), M.initial_state(p), M.initial_state(p)
    M.apply(p, late, Action(op="skip_offers", args={"count": p.rounds - 2}))
    M.apply(p, done, Action(op="accept_offer"))
    bad = [Action(op="no_such_op"), Action(op="skip_offers"), Action(op="skip_offers", args={"count": 0}),
           Action(op="skip_offers", args={"count": p.rounds + 1}), Action(op="skip_offers", args={"count": "2"}),
           Action(op="skip_offers", args={"count": 1.5}), Action(op="skip_offers", args={"count": True}),
           Action(op="skip_offers", args={"count": float("nan")}),
           Action(op="skip_offers", args={"count": float("inf")})]
    for state in (fresh, late, done):
        for action in [*bad, *([Action(op="skip_offers", args={"count": 3})] if state is late else [])]:
            before = copy.deepcopy(state)
            with pytest.raises(ActionError):
                M.apply(p, state, action)
            assert state == before
    for op in ("accept_offer", "pass_offer", "finish"):
        before = copy.deepcopy(done)
        with pytest.raises(ActionError, match="over"):
            M.apply(p, done, Action(op=op))
        assert done == before


@pytest.mark.parametrize("data, message", [
    ({"offer_values": [1, 2], "offer_probabilities": [0.3, 0.3, 0.4], "offers": [1], "waiting_cost": 0,
      "fallback": 0},
     "offer_probabilities must have one entry"),
    ({"offer_values": [2, 1], "offer_probabilities": [0.5, 0.5], "offers": [1], "waiting_cost": 0, "fallback": 0},
     "strictly increasing"),
    ({"offer_values": [1, 1], "offer_probabilities": [0.5, 0.5], "offers": [1], "waiting_cost": 0, "fallback": 0},
     "strictly increasing"),
    ({"offer_values": [1, 2], "offer_probabilities": [0.5, 0.6], "offers": [1], "waiting_cost": 0, "fallback": 0},
     "sum to 1"),
    ({"offer_values": [1, 2], "offer_probabilities": [1.0, 0.0], "offers": [1], "waiting_cost": 0, "fallback": 0},
     "positive"),
    ({"offer_values": [1, 2], "offer_probabilities": [0.5, 0.5], "offers": [3], "waiting_cost": 0, "fallback": 0},
     "round 1"),
    ({"offer_values": [1, 2], "offer_probabilities": [0.5, 0.5], "offers": [], "waiting_cost": 0, "fallback": 0},
     "offers"),
    ({"offer_values": [1, 2], "offer_probabilities": [0.5, 0.5], "offers": [1], "waiting_cost": -1, "fallback": 0},
     "waiting_cost must be non-negative"),
    ({"offer_values": [1, 2], "offer_probabilities": [0.5, 0.5], "offers": [1], "waiting_cost": 0,
      "fallback": float("inf")}, "finite"),
    ({"offer_values": [1, 2], "offer_probabilities": [0.5, 0.5], "offers": [1], "waiting_cost": 0, "fallback": 0,
      "colour": "red"}, "colour"),
    ({"offer_values": [1], "offer_probabilities": [1.0], "offers": [1], "waiting_cost": 0, "fallback": 0},
     "offer_values"),
    ({"offer_values": [1, 2], "offer_probabilities": [0.5, 0.5], "offers": [1] * 61, "waiting_cost": 0,
      "fallback": 0}, "offers"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


# --- facts, belief, heuristics, tiers (issue 15) --------------------------------------------------------------

def _budget(p, share=1.0):
    from setter.spec import turn_budget

    return turn_budget(M, p, M.outcome(p), share)


def _seat_play(p, policy, budget=None):
    from mechanisms.players import run_policy

    return run_policy(M, p, policy, budget)


def test_the_informed_agent_plays_the_online_optimum_when_every_probe_fits():
    """Knowing the three figures (never a draw), the informed agent plays the Bellman rule: it reaches the recorded
    online-optimal utility, the reachable reference; u* stays the hindsight ceiling above it."""
    from envs.difficulty import facts_fit, reachable
    from mechanisms.players import informed

    for i in range(12):
        p = _sample(i, *[(3, 6), (5, 8), (10, 40)][i % 3])
        o, budget = M.outcome(p), _budget(p)
        assert facts_fit(M, p, o, budget) == 1.0
        calls, u = _seat_play(p, informed(M), budget)
        assert u == pytest.approx(reachable(o), abs=1e-9) and reachable(o) == o.baselines["online_optimal"]
        assert reachable(o) <= o.solution.u_star + 1e-9
        assert len(calls) <= budget and M.play(p, calls, budget)[0] == pytest.approx(u)
        assert [a.op for a in calls][:4] == ["read_posted_best", "probe_offer_distribution", "probe_waiting_cost",
                                             "probe_fallback"]


def test_acting_on_the_true_figures_is_the_online_policy_on_every_draw():
    """act_on_belief with the verified figures reproduces online_policy's utility on redrawn offers, in at most two
    calls after the probes."""
    from mechanisms.players import Seat

    for i in range(6):
        p = _sample(40 + i, 6, 12)
        for seed in range(8):
            q = _redrawn(p, seed, keep=0)
            seat = Seat(M, q)
            for op in ("probe_offer_distribution", "probe_waiting_cost", "probe_fallback"):
                seat.call(op)
            belief = M.believed(seat.known)
            assert (belief.offer_values, belief.offer_probabilities, belief.waiting_cost, belief.fallback) == (
                q.offer_values, q.offer_probabilities, q.waiting_cost, q.fallback)
            assert len(M.planned_calls(seat.known, belief)) == 2
            M.act_on_belief(seat, belief)
            assert seat.turns <= 5 and seat._utility() == M.run(q, online_policy(q))


def test_belief_without_probes_uses_no_hidden_value():
    from mechanisms.players import Seat

    for i in range(8):
        p = _sample(i)
        other = M.params_from_data({**p.model_dump(), "offer_values": [x + 1 for x in p.offer_values],
                                    "offers": [x + 1 for x in reversed(p.offers)],
                                    "waiting_cost": p.waiting_cost + 2, "fallback": p.fallback + 5})
        beliefs = []
        for q in (p, other):
            seat = Seat(M, q)
            seat.call("read_posted_best")
            beliefs.append(M.believed(seat.known))
        assert beliefs[0] == beliefs[1]
        assert beliefs[0].waiting_cost == 0.0 and beliefs[0].fallback == 0.0
        assert max(beliefs[0].offer_values) == p.posted_best


def test_heuristics_play_within_the_budget_and_never_beat_the_ceiling():
    from envs.scoring import score

    for i in range(8):
        p = _sample(i, 10, 40)
        o = M.outcome(p)
        for share in (1.0, 0.33):
            budget = _budget(p, share)
            for name, policy in M.heuristic_policies().items():
                calls, u = _seat_play(p, policy, budget)
                assert len(calls) <= budget, name
                assert M.play(p, calls, budget) == (u, len(calls), 0), name
                assert u <= o.solution.u_star + 1e-9, name
                assert 0.0 <= score(u, o.u0, o.solution.u_star) <= 1.0


def test_frontier_budgets_leave_room_for_one_figure_and_hard_for_two():
    """Acting takes two calls and the posted sheet one: a tier's share of the three figures is what fits."""
    from mechanisms.players import informed

    for tier, verified in (("hard", 2), ("frontier", 1), ("easy", 3)):
        size, horizon = M.tiers()[tier].grid[0]
        p = _sample(7, size, horizon)
        calls, _ = _seat_play(p, informed(M), _budget(p, M.tiers()[tier].probe_share))
        assert sum(M.operation(p, a.op).kind == "probe" for a in calls) == verified, tier
        assert calls[1] == Action(op="probe_offer_distribution")  # the figure that sets every threshold first


def test_the_hindsight_solver_is_exact_at_the_tier_sizes():
    from tests.mechanisms.references.sequential_stopping import reference

    for tier in M.tiers().values():
        for size, horizon in tier.grid:
            for i in range(3):
                p = _sample(70 + i, size, horizon)
                solution = M.solve(p)
                assert solution.u_star == pytest.approx(reference(M, p))
                assert M.run(p, solution.optimal_actions) == pytest.approx(solution.u_star)
                assert len(solution.optimal_actions) <= 2  # one skip_offers call, then accept


@pytest.mark.parametrize("tier", ["easy", "medium", "hard", "frontier"])
def test_rendered_environments_pass_admission_at_every_tier(tier):
    from envs.admission import admit
    from tests.support import make_spec

    verdicts = [admit(make_spec("sequential_stopping", i, tier=tier)) for i in range(6)]
    refused = [v.reason for v in verdicts if not v.admitted]
    # a requested tier is the measured one or the instance is refused; completeness and prose never refuse
    refusals = ("completeness", "prose", "executes", "default_replay", "C3", "structure")
    assert not any(r.startswith(refusals) for r in refused), refused
    assert len(refused) < len(verdicts), refused


def test_every_ending_states_the_outcome():
    """Accepting, walking away, passing the last offer and running out of turns all end with the ledger."""
    from envs.agents import tool_call
    from envs.environment import ENDING_KEY, Environment
    from tests.support import make_spec

    spec = make_spec("sequential_stopping", 0)
    params = M.params_from_data(spec.params)
    endings = {"accept": [Action(op="accept_offer")], "walk": [Action(op="finish")],
               "pass_all": [Action(op="skip_offers", args={"count": params.rounds})],
               "turns": [Action(op="view_calendar")] * spec.turn_budget}
    for name, actions in endings.items():
        env = Environment(spec, "hidden")
        for action in actions:
            last = env.step(*tool_call(env, action))
        assert env.done, name
        outcome = last[ENDING_KEY]  # in the passage's words: the result is one of its figures
        assert env.utility() in outcome.values(), (name, outcome)
        assert outcome["episode over"] == ("the turns ran out" if name == "turns" else "finished"), name

