"""Scripted Rummy turns (docs/rules/rummy.md §3): opening totals, the discard that must be used, lay-offs and
joker swaps after opening, going out, the stock, and the settlement."""

from __future__ import annotations

import dataclasses

import pytest
from game_invariants import refused
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.game import InvalidRules, MalformedCommand, fold
from croupier.engine.meld_solver import RUMMY, JokerAs, arrange
from croupier.engine.rummy import RummyGame, moves
from croupier.engine.rummy.cards import deck, penalty
from croupier.engine.rummy.events import (
    CardDiscarded,
    CardsLaidOff,
    Discard,
    DiscardTaken,
    DrawStock,
    JokerSwapped,
    LayDown,
    LayOff,
    LayOffCards,
    MeldCards,
    MeldsLaidDown,
    RoundEnded,
    StockReshuffled,
    SwapJoker,
    TakeDiscard,
)
from croupier.engine.rummy.rules import PRESETS, STANDARD, rules_for, unset_seats
from croupier.engine.rummy.scoring import meld_value
from croupier.engine.rummy.state import Phase
from croupier.engine.shuffle import Seeds, shuffled

from .helpers import SEEDS, play, position

GAME = RummyGame()


def listed(state, seat, command) -> bool:
    """Whether the legal-move list holds ``command`` (compared in canonical form)."""
    return moves.canonical(state, command) in [
        moves.canonical(state, c) for c in moves.legal_commands(state, seat)
    ]


def m(cards: str, **named: str) -> MeldCards:
    return MeldCards(tuple(cards.split()), tuple(JokerAs(j, c) for j, c in named.items()))


@pytest.mark.parametrize(
    ("cards", "value"),
    [
        ("AH1 2H1 3H1", 6),  # a low ace counts 1
        ("QH1 KH1 AH1", 31),  # a high ace 11, faces 10
        ("AS1 AH1 AD1", 33),  # aces in a set 11
        ("5H1 JK1 7H1", 18),  # a joker counts as its card
        ("7S1 7H1 JK1 JK2", 28),
        ("QH1 KH1 JK1", 31),  # the joker is the high ace
        ("AH1 2H1 3H1 4H1 5H1 6H1 7H1 8H1 9H1 TH1 JH1 QH1 KH1", 95),  # 13 cards: the ace counts 11
    ],
)
def test_opening_values(cards: str, value: int) -> None:
    assert meld_value(arrange(cards.split(), RUMMY)) == value


def test_card_penalties() -> None:
    assert [penalty(c) for c in ("JK3", "AS2", "KD1", "TC1", "7H2", "2S1")] == [
        20,
        11,
        10,
        10,
        7,
        2,
    ]


# --- opening ----------------------------------------------------------------------------------

HAND = "TS1 JS1 QS1 5H1 5D1 5C1 2C1 3C1 4C1 9D2 JK1 KH1 KD2 8S2"


def test_an_opening_must_reach_the_threshold_in_one_command() -> None:
    state = position([HAND, "2S1 3S1"])
    # 10 + 10 + 10 = 30 alone is not enough for 40; with the fives (15) it is.
    refused(GAME, state, 0, LayDown((m("TS1 JS1 QS1"),)), "OPENING_TOO_LOW")
    after, events = play(state, 0, LayDown((m("TS1 JS1 QS1"), m("5H1 5D1 5C1"))))
    (laid,) = events
    assert isinstance(laid, MeldsLaidDown) and laid.opening == 45 and after.opened[0]
    assert [t.id for t in laid.melds] == [1, 2]
    # Once open, any meld goes down and is worth nothing in particular.
    after, events = play(after, 0, LayDown((m("2C1 3C1 4C1"),)))
    assert events[0].opening == 0
    # The opening threshold is an option (30, 40, 51).
    low = dataclasses.replace(state, rules=rules_for("open-30", {}, 2))
    assert listed(low, 0, LayDown((m("TS1 JS1 QS1"),)))


def test_the_engine_offers_its_best_opening() -> None:
    state = position([HAND, "2S1 3S1"])
    openings = [c for c in moves.legal_commands(state, 0) if isinstance(c, LayDown)]
    assert openings, "the best opening of several melds is offered"
    best = max(openings, key=lambda c: len(c.melds))
    total = sum(
        meld_value(arrange(s.cards, RUMMY, {j.joker: j.card for j in s.jokers})) for s in best.melds
    )
    assert total >= 40 and len(best.melds) >= 2


def test_before_opening_no_lay_off_and_no_swap() -> None:
    state = position([HAND, "2S1 3S1"], melds=[(1, "6H2 JK2 8H2")])
    refused(GAME, state, 0, LayOff(1, ("5H1",)), "NOT_OPENED")
    refused(GAME, state, 0, SwapJoker(1, "KH1", lay_off=LayOffCards(1, ("JK2",))), "NOT_OPENED")


# --- the discard must be used -----------------------------------------------------------------


def test_taking_the_discard_names_where_it_goes() -> None:
    state = position([HAND, "2S1 3S1"], discards="9C2 KS1", phase=Phase.TAKE)
    # Unopened: only as part of an opening; the kings (30) with the spades (30) open.
    refused(GAME, state, 0, TakeDiscard((m("KS1 KH1 KD2"),)), "OPENING_TOO_LOW")
    refused(GAME, state, 0, TakeDiscard((m("TS1 JS1 QS1"), m("5H1 5D1 5C1"))), "DISCARD_NOT_USED")
    refused(GAME, state, 0, TakeDiscard(), "USE_THE_DISCARD", error=MalformedCommand)
    after, events = play(state, 0, TakeDiscard((m("KS1 KH1 KD2"), m("TS1 JS1 QS1"))))
    assert isinstance(events[0], DiscardTaken) and events[1].opening == 60
    assert after.discards == ("9C2",) and after.phase is Phase.PLAY
    # Opened: into one meld, or laid off.
    opened = position(
        ["9S1 8S1 2D1", "2S1"],
        discards="7S2",
        phase=Phase.TAKE,
        opened=[True, True],
        melds=[(1, "4S2 5S2 6S2")],
    )
    assert listed(opened, 0, TakeDiscard(lay_off=LayOffCards(1, ("7S2",))))
    assert listed(opened, 0, TakeDiscard((m("9S1 7S2 8S1"),)))
    refused(GAME, opened, 1, DrawStock(), "NOT_YOUR_TURN")
    refused(GAME, opened, 0, Discard("2D1"), "TAKE_FIRST")


# --- after opening: lay-offs and joker swaps --------------------------------------------------


def test_lay_off_keeps_the_meld_legal() -> None:
    state = position(["9H1 4H2 7S1 2D1", "2S1"], opened=[True, False], melds=[(1, "6H2 JK2 8H2")])
    after, events = play(state, 0, LayOff(1, ("9H1",)))
    assert events == [CardsLaidOff(0, ("9H1",), after.meld(1))]
    assert after.meld(1).cards == ("6H2", "JK2", "8H2", "9H1")
    refused(GAME, after, 0, LayOff(1, ("7S1",)), "CANNOT_LAY_OFF")
    refused(GAME, after, 0, LayOff(1, ("4H2",)), "CANNOT_LAY_OFF")  # 5H is missing


def test_a_swapped_joker_is_played_in_the_same_command() -> None:
    state = position(["7H1 TS1 JS1 2D1", "2S1"], opened=[True, False], melds=[(1, "6H2 JK2 8H2")])
    refused(GAME, state, 0, SwapJoker(1, "7H1"), "USE_THE_JOKER", error=MalformedCommand)
    refused(GAME, state, 0, SwapJoker(1, "TS1", (m("JK2 TS1 JS1"),)), "NOT_THE_JOKERS_CARD")
    refused(GAME, state, 0, SwapJoker(1, "7H1", (m("TS1 JS1 2D1"),)), "JOKER_NOT_PLAYED")
    refused(GAME, state, 0, SwapJoker(1, "7H1", (m("JK2 TS1 2D1"),)), "NOT_A_MELD")
    command = SwapJoker(1, "7H1", (m("TS1 JS1 JK2", JK2="QS"),))
    assert listed(state, 0, command)
    after, events = play(state, 0, command)
    swapped, laid = events
    assert isinstance(swapped, JokerSwapped) and swapped.joker == "JK2"
    assert after.meld(1).cards == ("6H2", "7H1", "8H2") and after.meld(1).jokers == ()
    assert laid.melds[0].cards == ("TS1", "JS1", "JK2") and after.hands[0] == ("2D1",)
    assert (
        GAME.label(state, command)
        == "Swap 7H1 for the joker of meld #1 and meld it with TS1 JS1 JK2"
    )


def test_a_named_joker_that_contradicts_the_meld_is_invalid_argument() -> None:
    state = position(["5H1 JK1 7H1 2D1", "2S1"], opened=[True, False])
    refused(
        GAME,
        state,
        0,
        LayDown((m("5H1 JK1 7H1", JK1="8H"),)),
        "JOKER_CONTRADICTS",
        error=MalformedCommand,
    )
    refused(GAME, state, 0, LayDown((m("5H1 7H1 2D1"),)), "NOT_A_MELD")
    after, _ = play(state, 0, LayDown((m("7H1 5H1 JK1"),)))
    assert after.melds[0].jokers == (JokerAs("JK1", "6H"),)


# --- going out and settlement -----------------------------------------------------------------


def test_going_out_by_the_last_discard_settles_every_hand() -> None:
    state = position(["9D1", "JK1 AS1 KD1", "2S1 3S2", "TC1"], opened=[True] * 4)
    after, events = play(state, 0, Discard("9D1"))
    end = events[-1]
    assert isinstance(events[0], CardDiscarded) and isinstance(end, RoundEnded)
    assert (end.outcome, end.winner, end.hand_values) == ("WENT_OUT", 0, (0, 41, 5, 10))
    assert [(line.payer, line.payee, line.amount) for line in end.settlement.lines] == [
        (1, 0, 41),
        (2, 0, 5),
        (3, 0, 10),
    ]
    assert end.settlement.net == (56, -41, -5, -10) and after.phase is Phase.ROUND_OVER
    assert GAME.is_finished(after)


def test_going_out_by_melding_the_last_cards_needs_no_discard() -> None:
    state = position(
        ["4C1 5C1 6C1", "KD1"],
        opened=[True, False],
        rules=rules_for("standard", {"stake_per_point": 3}, 2),
    )
    _, events = play(state, 0, LayDown((m("4C1 5C1 6C1"),)))
    end = events[-1]
    assert end.outcome == "WENT_OUT" and end.settlement.lines[0].amount == 30
    assert [f.name for f in end.settlement.lines[0].factors] == ["hand_value", "stake_per_point"]


def test_an_empty_stock_is_rebuilt_from_the_discards_and_bounded_by_the_option() -> None:
    state = position(["4C1 9D1", "KD1 2H1"], discards="2S1 3S1 5D2", stock="", opened=[True, True])
    after, events = play(state, 0, Discard("9D1"))
    rebuilt = events[-1]
    assert isinstance(rebuilt, StockReshuffled) and rebuilt.reshuffle == 1
    assert rebuilt.stock == shuffled(("2S1", "3S1", "5D2"), SEEDS, 1, "reshuffle-1")
    assert after.discards == ("9D1",) and after.phase is Phase.TAKE
    bounded = dataclasses.replace(
        state, rules=rules_for("standard", {"max_reshuffles": 1}, 2), reshuffles=1
    )
    after, events = play(bounded, 0, Discard("9D1"))
    assert (events[-1].outcome, events[-1].winner, events[-1].settlement.lines) == (
        "STOCK_OUT",
        None,
        (),
    )


# --- the deal ---------------------------------------------------------------------------------


@given(st.binary(min_size=32, max_size=32), st.integers(2, 4))
def test_the_deal(seed: bytes, seats: int) -> None:
    state = fold(GAME, GAME.start(rules_for("standard", {}, seats), seats, Seeds(seed)))
    assert [len(h) for h in state.hands] == [13] * seats and len(state.discards) == 1
    assert len(state.stock) == 108 - 13 * seats - 1 and state.turn == (state.dealer + 1) % seats
    everything = [c for h in state.hands for c in h] + list(state.stock) + list(state.discards)
    assert sorted(everything) == sorted(deck()) and len(set(deck())) == 108


def test_rule_sets_are_validated() -> None:
    for overrides, seats, field in [
        ({"open_threshold": 35}, 2, "open_threshold"),
        ({}, 5, "seats"),
        ({"max_seats": 6}, 2, "max_seats"),
        ({"min_seats": 1}, 2, "min_seats"),
    ]:
        with pytest.raises(InvalidRules) as info:
            rules_for("standard", overrides, seats)
        assert info.value.field == field
    assert STANDARD.open_threshold == 40
    with pytest.raises(InvalidRules) as info:
        rules_for("standard", {"open_threshold": 45}, 3)
    assert str(info.value).endswith("30, 40 or 51, not 45")  # the choices and the value sent


@pytest.mark.parametrize(
    ("overrides", "field", "said"),
    [
        ({"min_seats": 1}, "min_seats", "option min_seats: 2 to 4 seats, not 1"),
        ({"min_seats": 5, "max_seats": 5}, "min_seats", "option min_seats: 2 to 4 seats, not 5"),
        ({"max_seats": 6}, "max_seats", "option max_seats: 2 to 4 seats, not 6"),
        # Both within 2..4, but no table fits them: before, "max_seats: seats must lie within
        # 2..4", true of both values and naming neither.
        (
            {"min_seats": 4, "max_seats": 3},
            "min_seats",
            "option min_seats: 4 is more than max_seats, 3: no seat count fits",
        ),
    ],
)
def test_a_seat_bound_refused_names_the_option_and_echoes_its_value(
    overrides: dict[str, int], field: str, said: str
) -> None:
    with pytest.raises(InvalidRules) as info:
        rules_for("standard", overrides, 3)
    assert (info.value.reason, info.value.field, str(info.value)) == ("INVALID_OPTION", field, said)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@given(most=st.integers(2, 4), least=st.integers(2, 4))
def test_an_unset_seat_count_is_four_or_the_rule_sets_most(
    preset: str, most: int, least: int
) -> None:
    """docs/rules/rummy.md §3: a table of three (``max_seats`` 3) that names no seat count seats
    three; before, it was refused for the four seats the request never asked for."""
    assert unset_seats(preset, {}) == 4
    overrides = {"min_seats": min(least, most), "max_seats": most}
    seats = unset_seats(preset, overrides)
    assert seats == most
    assert GAME.new_game_rules(preset, overrides, seats).max_seats == most


# --- rule corners (issue 14) ------------------------------------------------------------------


def test_a_use_missing_from_the_command_cites_its_rule() -> None:
    """docs/rules/rummy.md §3.1 (a taken discard is used in the same command) and §3.3 (a swapped
    joker is played in the same command): the refusal names the section."""
    state = position([HAND, "2S1 3S1"], discards="9C2 KS1", phase=Phase.TAKE)
    with pytest.raises(MalformedCommand) as info:
        GAME.validate(state, 0, TakeDiscard())
    assert (info.value.reason, info.value.rule) == ("USE_THE_DISCARD", "docs/rules/rummy.md §3.1")
    swapping = position(
        ["7H1 TS1 JS1 2D1", "2S1"], opened=[True, False], melds=[(1, "6H2 JK2 8H2")]
    )
    with pytest.raises(MalformedCommand) as info:
        GAME.validate(swapping, 0, SwapJoker(1, "7H1"))
    assert (info.value.reason, info.value.rule) == ("USE_THE_JOKER", "docs/rules/rummy.md §3.3")


def test_after_the_opening_command_lay_offs_and_swaps_follow_in_the_same_turn() -> None:
    """docs/rules/rummy.md §3.3: the opening is one command; once it is down, the same turn may lay
    off and swap jokers before its discard."""
    state = position(
        ["TS1 JS1 QS1 5H1 5D1 5C1 7H1 9H2 2D1", "2S1"],
        melds=[(1, "6H2 JK2 8H2")],
    )
    refused(GAME, state, 0, LayOff(1, ("9H2",)), "NOT_OPENED")
    opened, events = play(state, 0, LayDown((m("TS1 JS1 QS1"), m("5H1 5D1 5C1"))))
    assert events[0].opening == 45 and opened.opened[0] and opened.phase is Phase.PLAY
    assert listed(opened, 0, LayOff(1, ("9H2",)))
    laid, _ = play(opened, 0, LayOff(1, ("9H2",)))
    assert laid.meld(1).cards == ("6H2", "JK2", "8H2", "9H2")
    swap = SwapJoker(1, "7H1", lay_off=LayOffCards(3, ("JK2",)))
    assert listed(laid, 0, swap)
    swapped, events = play(laid, 0, swap)
    assert isinstance(events[0], JokerSwapped) and swapped.meld(1).jokers == ()
    assert "JK2" in swapped.meld(3).cards and swapped.phase is Phase.PLAY
    after, events = play(swapped, 0, Discard("2D1"))
    assert isinstance(events[0], CardDiscarded) and after.hands[0] == ()


def test_a_twelve_card_run_whose_ace_could_sit_at_either_end_takes_the_high_end() -> None:
    """docs/rules/rummy.md §3.2: an unnamed joker takes the high end where that is legal. With
    ``AH 3H … QH JK`` the joker could be the 2 (ace low) or the king (ace high): it is the king."""
    cards = ["AH1", "3H1", "4H1", "5H1", "6H1", "7H1", "8H1", "9H1", "TH1", "JH1", "QH1", "JK1"]
    meld = arrange(cards, RUMMY)
    assert meld is not None and meld.jokers == (JokerAs("JK1", "KH"),)
    assert meld.cards[-2:] == ("JK1", "AH1")
    assert meld_value(meld) == sum(range(3, 10)) + 10 * 4 + 11  # 3…9, T J Q K, the ace 11
    # Named, the joker may still be the 2.
    low = arrange(cards, RUMMY, {"JK1": "2H"})
    assert low is not None and low.cards[:3] == ("AH1", "JK1", "3H1")
    state = position([" ".join(cards) + " 2D1", "2S1"], opened=[True, False])
    _, events = play(state, 0, LayDown((MeldCards(tuple(cards)),)))
    assert events[0].melds[0].jokers == (JokerAs("JK1", "KH"),)
    assert all(rules.ace_high_when_ambiguous for rules in PRESETS.values())
    # A game recorded before ``ace_high_when_ambiguous`` replays as it was: the ace low.
    before = dataclasses.replace(
        state, rules=dataclasses.replace(STANDARD, ace_high_when_ambiguous=False)
    )
    _, events = play(before, 0, LayDown((MeldCards(tuple(cards)),)))
    assert events[0].melds[0].jokers == (JokerAs("JK1", "2H"),)


def test_an_unset_seat_count_is_four() -> None:
    """docs/rules/rummy.md §3: a request that leaves ``seats`` unset (0) seats four."""
    from croupier.contract.bindings import RUMMY as BINDING
    from croupier.engine.rummy.rules import DEFAULT_SEATS

    assert BINDING.default_seats == DEFAULT_SEATS == 4


def test_the_legal_move_list_says_when_it_is_compact() -> None:
    """docs/rules/rummy.md §3.3, docs/rules/common.md §5: a list with steps that combine says
    it is not complete (here two melds at once are accepted but not listed); a list of draws and
    discards only is complete."""
    state = position(["TS1 JS1 QS1 5H1 5D1 5C1 2D1", "2S1"], opened=[True, False])
    both = LayDown((m("TS1 JS1 QS1"), m("5H1 5D1 5C1")))
    GAME.validate(state, 0, both)
    assert not listed(state, 0, both) and not GAME.legal_moves_complete(state, 0)
    bare = position(["2D1 9S1", "2S1"], opened=[True, False])
    assert GAME.legal_moves_complete(bare, 0)
    assert {type(c) for c in GAME.legal_commands(bare, 0)} == {Discard}
    taking = position(["2D1 9S1", "2S1"], discards="KD1", phase=Phase.TAKE)
    assert GAME.legal_moves_complete(taking, 0)


RANKS = "A23456789TJQK"


@given(
    suit=st.sampled_from("SHDC"),
    start=st.integers(1, 8),
    length=st.integers(3, 4),
    gap=st.integers(1, 3),
    upward=st.booleans(),
    joker_at=st.one_of(st.none(), st.integers(0, 2)),
)
def test_a_taken_discard_that_needs_hand_cards_to_reach_a_meld_is_listed(
    suit: str, start: int, length: int, gap: int, upward: bool, joker_at: int | None
) -> None:
    """docs/rules/rummy.md §3.3: the discard may be taken and laid off with the hand cards that
    close the gap to a run (5H 6H 7H takes a discarded 9H with the 8H). The list offers that take,
    and so is not complete; it once offered only the discard laid off alone, and with nothing
    else to offer said it was complete while the take was accepted."""
    start = min(start, 12 - length - gap) if upward else max(start, gap + 1)
    run = [RANKS[r] + suit + "1" for r in range(start, start + length)]
    if upward:
        between = range(start + length, start + length + gap)
        top = RANKS[start + length + gap] + suit + "2"
    else:
        between = range(start - gap, start)
        top = RANKS[start - gap - 1] + suit + "2"
    bridge = [RANKS[r] + suit + "2" for r in between]
    if joker_at is not None and joker_at < gap:
        bridge[joker_at] = "JK1"
    other = "S" if suit != "S" else "H"
    state = position(
        [" ".join([*bridge, "K" + other + "1", "5" + other + "1"]), "2C1"],
        discards=top,
        phase=Phase.TAKE,
        opened=[True, True],
        melds=[(1, " ".join(run))],
    )
    refused(GAME, state, 0, TakeDiscard(lay_off=LayOffCards(1, (top,))), "CANNOT_LAY_OFF")
    take = TakeDiscard(lay_off=LayOffCards(1, (top, *bridge)))
    GAME.validate(state, 0, take)
    assert listed(state, 0, take)
    assert not GAME.legal_moves_complete(state, 0)
    laid_off = next(
        c for c in GAME.legal_commands(state, 0) if isinstance(c, TakeDiscard) and c.lay_off
    )
    label = GAME.label(state, laid_off)
    assert label.startswith(f"Take {top} and lay it off with ") and label.endswith("on meld #1")


def _exhaustive_discard_lay_offs(state, hand, top) -> list[LayOffCards]:
    """The discard's lay-offs as every subset of the hand's kin cards, smallest first, finds
    them: the reference the legal-move list's search must match (docs/rules/rummy.md §3.3)."""
    from itertools import combinations

    from croupier.engine.meld_solver import Meld, could_meld, extensions

    rules = moves.shape(state.rules)
    found = []
    for meld in state.melds:
        base = Meld(meld.kind, meld.cards, meld.jokers)
        kin = moves._kin(meld, hand)
        for size in range(len(kin) + 1):
            here = [
                LayOffCards(
                    meld.id, (top, *more), tuple(j for j in way.jokers if j.joker in more + (top,))
                )
                for more in combinations(kin, size)
                if could_meld(meld.cards + (top, *more), rules)
                for way in extensions(base, (top, *more), rules)
            ]
            if here:
                found += here
                break
    return found


SUITED = [r + "H" + d for r in RANKS for d in "12"]


@given(
    run=st.tuples(st.integers(1, 12), st.integers(3, 6)),
    jokers_in_run=st.lists(st.integers(0, 5), max_size=2, unique=True),
    hand=st.lists(st.sampled_from([*SUITED, "JK1", "JK2", "5S1", "9D2"]), max_size=10, unique=True),
    top=st.sampled_from([*SUITED, "JK2", "7S2", "AH2", "KH2"]),
    high=st.booleans(),
    also_a_set=st.booleans(),
)
def test_the_discard_s_lay_offs_are_those_an_exhaustive_search_finds(
    run: tuple[int, int],
    jokers_in_run: list[int],
    hand: list[str],
    top: str,
    high: bool,
    also_a_set: bool,
) -> None:
    """The list's lay-offs of a taken discard are exactly those of a search of every subset of
    the hand's cards that could join each meld, fewest cards first: its shortcut (only the sizes
    and cards that can close the gap between the meld and the discard) leaves none out."""
    start, length = run
    ranks = [start + i for i in range(length) if start + i <= 14]
    if len(ranks) < 3:
        return
    cards = [RANKS[(r - 1) % 13] + "H1" for r in ranks]
    for joker, at in zip(("JK4", "JK3"), jokers_in_run, strict=False):
        if at < len(cards):
            cards[at] = joker
    melds = [(1, " ".join(cards))]
    if also_a_set:
        melds.append((1, "8S1 8D1 8C1"))
    used = {c for _, m in melds for c in m.split()}
    hand = [c for c in hand if c not in used and c != top]
    if top in used or not hand:
        return
    rules = dataclasses.replace(STANDARD, ace_high_when_ambiguous=high)
    try:
        state = position(
            [" ".join(hand), "2C1"],
            discards=top,
            phase=Phase.TAKE,
            opened=[True, True],
            melds=melds,
            rules=rules,
        )
    except AssertionError:  # not a meld
        return
    held = moves.sort_cards(state.hands[0])
    assert list(moves._discard_lay_offs(state, held, top)) == _exhaustive_discard_lay_offs(
        state, held, top
    )


def test_a_discard_that_fits_no_meld_costs_no_search_of_the_hand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Taking the discard to a meld it cannot reach (here a king, with ten hearts in hand that
    do not close the gap) is found out without trying every subset of the hand's hearts on every
    meld: the list, asked at every turn, once took fifty times as long for it (2,051 checks)."""
    melds = [
        (1, "2H1 3H1 4H1"),
        (1, "2H2 3H2 4H2"),
        (1, "2S1 3S1 4S1"),
        (1, "2D1 3D1 4D1"),
        (1, "5S1 5D1 5C1"),
    ]
    hand = "6H1 6H2 8H1 8H2 TH1 TH2 QH1 QH2 AH1 AH2"
    real = moves.could_meld
    tried: list[tuple[str, ...]] = []

    def counted(cards: tuple[str, ...], rules: object) -> bool:
        tried.append(cards)
        return real(cards, rules)  # type: ignore[arg-type]

    for top in ("KH1", "KS1", "JK1", "7H1"):
        state = position(
            [hand, "2C1"], discards=top, phase=Phase.TAKE, opened=[True, True], melds=melds
        )
        listed_before = GAME.legal_commands(state, 0)  # every meld of the hand found and kept
        tried.clear()
        with monkeypatch.context() as patched:
            patched.setattr(moves, "could_meld", counted)
            assert GAME.legal_commands(state, 0) == listed_before
        assert len(tried) <= 64, (top, len(tried))
