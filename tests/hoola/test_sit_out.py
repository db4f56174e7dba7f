"""Six or seven players: the play-or-sit-out round and the brights paid to sitters-out (docs/rules/hoola.md §1.9)."""

from __future__ import annotations

import dataclasses
from itertools import combinations

import pytest
from game_invariants import refused
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.cards import standard_deck
from croupier.engine.game import Context, fold
from croupier.engine.hoola import HoolaGame, moves
from croupier.engine.hoola.events import (
    CardDiscarded,
    Draw,
    NextRound,
    Play,
    PlayBegan,
    PlayDeclared,
    SatOut,
    SitOut,
    Stop,
    ThankYou,
)
from croupier.engine.hoola.melds import Bright, MeldKind, arrange, brights
from croupier.engine.hoola.rules import KOREAN, PRESETS, rules_for
from croupier.engine.hoola.state import Phase, Turn, evolve
from croupier.engine.shuffle import Seeds, shuffled

from .helpers import SEEDS, ended, play, position

GAME = HoolaGame()


def sit_out_rules(base=KOREAN, **options: object):
    return dataclasses.replace(base, sit_out=True, max_seats=7, **options)


def choosing(
    hands: list[str], dealer: int = 0, upcard: str = "", stock: str | None = None, **options: object
):
    """A fresh deal at six or seven seats, before anyone has chosen."""
    return position(
        hands,
        rules=sit_out_rules(**options),
        phase=Phase.CHOOSING,
        turn=dealer,
        dealer=dealer,
        discards=upcard,
        stock=stock,
        players=(),
        turns_started=[0] * len(hands),
        this_turn=Turn(),
    )


def kinds(found: tuple[Bright, ...]) -> list[str]:
    return sorted(f"{b.kind.name} {' '.join(b.cards)}" for b in found)


# --- brights ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hand", "options", "expected"),
    [
        # Three 7s pay more one by one than as a set.
        ("7S 7H 7D 2C 3C 4C 9D", {}, ["RUN 2C 3C 4C", "SEVEN 7D", "SEVEN 7H", "SEVEN 7S"]),
        # A long run pays more cut in two around a lone 7 than whole.
        ("4C 5C 6C 7C 8C 9C TC", {}, ["RUN 4C 5C 6C", "RUN 8C 9C TC", "SEVEN 7C"]),
        # As many either way: the run shows more cards than the lone 7.
        ("5S 6S 7S 8S 9S KH KD", {}, ["RUN 5S 6S 7S 8S 9S"]),
        ("9C 9D 9H 9S 2C 3C 4C", {}, ["RUN 2C 3C 4C", "SET 9C 9D 9H 9S"]),
        ("2C 5D 9H JS KD 3S 8H", {}, []),
        # A joker pays alone or completes a run: as much either way, and the run shows more cards.
        ("JK1 5S 6S KH KD KC 2H", {"jokers": 1}, ["RUN 5S 6S JK1", "SET KC KD KH"]),
        ("JK1 5S 9S KH KD KC 2H", {"jokers": 1}, ["JOKER JK1", "SET KC KD KH"]),
        (
            "7S 7H 7D 7C JK1 JK2 2D",
            {"jokers": 2},
            ["JOKER JK1", "JOKER JK2", "SEVEN 7C", "SEVEN 7D", "SEVEN 7H", "SEVEN 7S"],
        ),
        # Runs around the ace follow ace_wrap.
        ("KS AS 2S 9H 9D 9C 4D", {}, ["RUN KS AS 2S", "SET 9C 9D 9H"]),
        ("KS AS 2S 9H 9D 9C 4D", {"ace_wrap": False}, ["SET 9C 9D 9H"]),
    ],
)
def test_brights_pay_the_arrangement_with_the_most(
    hand: str, options: dict, expected: list[str]
) -> None:
    found = brights(hand.split(), dataclasses.replace(KOREAN, **options))
    assert kinds(found) == sorted(expected)


def partitions(cards: list[str]):
    if not cards:
        yield []
        return
    first, rest = cards[0], cards[1:]
    for size in range(len(rest) + 1):
        for others in combinations(rest, size):
            left = [c for c in rest if c not in others]
            for tail in partitions(left):
                yield [(first, *others)] + tail


def is_bright(block: tuple[str, ...], rules) -> bool:
    if len(block) == 1:
        return block[0].startswith("JK") or block[0][0] == "7"
    way = arrange(block, rules)
    return len(block) >= 3 and way is not None and way.kind in (MeldKind.SET, MeldKind.RUN)


@given(
    st.lists(st.sampled_from(standard_deck(2)), min_size=0, max_size=7, unique=True), st.booleans()
)
def test_brights_are_disjoint_valid_and_as_many_as_any_partition_pays(
    hand: list[str], wrap: bool
) -> None:
    rules = dataclasses.replace(KOREAN, jokers=2, ace_wrap=wrap)
    found = brights(hand, rules)
    used = [c for b in found for c in b.cards]
    assert len(used) == len(set(used)) and set(used) <= set(hand)
    assert all(is_bright(b.cards, rules) for b in found)
    assert len(found) == max(sum(is_bright(block, rules) for block in p) for p in partitions(hand))


# --- the play-or-sit-out round ----------------------------------------------------------------

SEVEN_HANDS = [
    "AS AH AD AC 2S 2H 2D",  # 0: the dealer, value 10
    "3S 4S 8D 9S TS JD QD",  # 1: 57
    "3D 4D 5D 6S 8S JS QS",  # 2: 49
    "3C 8C 9C 5H 6H 8H 4H",  # 3: 43
    "3H TH JH QH KC 5S 6D",  # 4: 60
    "7S 7H 4C 5C 6C 9D 9H",  # 5: 7S, 7H, run 4C 5C 6C
    "KS KH KD QC JC TC 2C",  # 6: set of kings, run TC JC QC
]


def test_once_five_play_the_rest_sit_out_involuntarily_and_each_player_pays_their_brights() -> None:
    state = choosing(SEVEN_HANDS, upcard="7D", stock="TD 7C", first_turn_stop=True)
    events = []
    for seat in range(5):
        assert moves.legal_commands(state, seat) == [Play(), SitOut()]
        state, new = play(state, seat, Play())
        events += new
    assert [type(e) for e in events] == [PlayDeclared] * 5 + [SatOut, SatOut, PlayBegan]
    five, six = events[5:7]
    assert (five.seat, five.voluntary, five.compensation) == (5, False, 3)
    assert kinds(five.brights) == ["RUN 4C 5C 6C", "SEVEN 7H", "SEVEN 7S"]
    assert (six.seat, six.voluntary, six.compensation) == (6, False, 2)
    # Their cards went into the stock, shuffled from the round's seed.
    began = events[-1]
    assert began.players == (0, 1, 2, 3, 4)
    expected = shuffled(("TD", "7C") + five.hand + six.hand, SEEDS, 1, "sit-out")
    assert began.stock == expected and began.stock_count == 16
    assert state.hands[5] == state.hands[6] == () and state.phase is Phase.TAKE and state.turn == 0

    state, new = play(state, 0, Stop())
    settlement = ended(new).settlement
    assert [
        (line.payer, line.payee, line.amount, [(f.name, f.value) for f in line.factors])
        for line in settlement.lines
    ] == [
        # The round: the losers by rank (their first turn never came, so they rank by value).
        (1, 0, 3, [("rank", 3)]),
        (2, 0, 2, [("rank", 2)]),
        (3, 0, 1, [("rank", 1)]),
        (4, 0, 4, [("rank", 4)]),
        # The sitters-out: every player, the winner too, pays each bright.
        *[(p, 5, 3, [("brights", 3)]) for p in (0, 1, 2, 3, 4)],
        *[(p, 6, 2, [("brights", 2)]) for p in (0, 1, 2, 3, 4)],
    ]
    assert settlement.net == (10 - 5, -3 - 5, -2 - 5, -1 - 5, -4 - 5, 15, 10)
    assert "7S" in settlement.lines[4].factors[0].reason


def test_base_stake_multiplies_the_brights() -> None:
    state = choosing(SEVEN_HANDS, upcard="7D", stock="TD 7C", base_stake=5)
    for seat in range(5):
        state, events = play(state, seat, Play())
    assert [e.compensation for e in events if isinstance(e, SatOut)] == [15, 10]


def test_a_seat_that_sits_out_by_choice_is_paid_nothing_and_play_passes_it_over() -> None:
    hands = SEVEN_HANDS[:6]
    state = choosing(hands, dealer=2, upcard="7D", stock="TD 7C 7S 7H KS")
    state, events = play(state, 2, SitOut())
    assert events == [SatOut(2, True, tuple(hands[2].split()))]
    for seat in (3, 4, 5, 0, 1):
        state, events = play(state, seat, Play())
    began = events[-1]
    assert isinstance(began, PlayBegan) and began.players == (0, 1, 3, 4, 5)
    assert sorted(began.stock) == sorted(["TD", "7C", "7S", "7H", "KS"] + hands[2].split())
    # Play begins after the dealer, who sits out; the sitter-out has nothing to do.
    assert state.turn == 3 and state.dealer == 2
    refused(GAME, state, 2, Draw(), "SITTING_OUT")
    assert moves.legal_commands(state, 2) == []
    # A discard passes the turn over the sitter-out.
    state = evolve(dataclasses.replace(state, turn=1, phase=Phase.PLAY), CardDiscarded(1, "3S"))
    assert state.turn == 3
    # The voluntary sitter-out's hand stays hidden from the others.
    sat = state.sat_out[0]
    assert GAME.redact(sat, 0).hand == () and GAME.redact(sat, 2).hand == sat.hand
    assert GAME.view(state, 0).sat_out[0].hand == ()


def test_at_least_two_play() -> None:
    state = choosing(SEVEN_HANDS[:6], upcard="7D", stock="TD 7C 7S 7H KS KH KD QC JC TC 2C")
    for seat in range(4):
        state, _ = play(state, seat, SitOut())
    refused(GAME, state, 4, SitOut(), "TOO_FEW_PLAYERS")
    assert moves.legal_commands(state, 4) == [Play()]
    state, _ = play(state, 4, Play())
    refused(GAME, state, 5, SitOut(), "TOO_FEW_PLAYERS")
    state, events = play(state, 5, Play())
    assert events[-1].players == (4, 5)
    # Two play: the round is a two-player round (no stops without two_player_stop).
    state = dataclasses.replace(state, turns_started=(0, 0, 0, 0, 2, 2))
    refused(GAME, state, 4, Stop(), "NO_STOP_WITH_TWO")


def test_choosing_comes_first_and_in_turn() -> None:
    state = choosing(SEVEN_HANDS, dealer=3, upcard="7D", stock="TD 7C")
    refused(GAME, state, 3, Draw(), "CHOOSE_FIRST")
    refused(GAME, state, 4, Play(), "NOT_YOUR_TURN")
    assert moves.legal_commands(state, 4) == []
    for seat in (3, 4, 5, 6, 0):
        state, _ = play(state, seat, Play())
    refused(GAME, state, 1, Play(), "NOT_CHOOSING")
    refused(GAME, state, state.turn, SitOut(), "NOT_CHOOSING")
    assert [sat.seat for sat in state.sat_out] == [1, 2]


def test_the_stop_limit_and_battle_claims_count_only_the_players() -> None:
    rules = {"out_of_turn_thank_you": True}
    hands = ["AS 2S 3S 4D", "9C 9D", "KC KD", "AH 2H 3H 4H", "QC QD", "JC JD", "TC TD"]
    state = position(
        hands,
        rules=sit_out_rules(PRESETS["hangame"], **rules),
        discards="9H",
        top_discarder=0,
        turn=1,
        players=(0, 1, 3),
        stock="5C 6C",
    )
    # Hangame: 10 points with three players (15 would hold for seven).
    assert moves.validate(state, 1, Draw()) is None
    state = dataclasses.replace(state, turn=3)
    assert Stop() in moves.legal_commands(state, 3)  # value 10
    refused(
        GAME,
        dataclasses.replace(
            state, hands=(*state.hands[:3], ("AH", "2H", "3H", "5H"), *state.hands[4:])
        ),
        3,
        Stop(),
        "STOP_OVER_LIMIT",
    )
    # Seat 1 may claim the 9 out of turn; seat 2 sits out and may not.
    assert ThankYou(("9D", "9C")) in moves.legal_commands(state, 1)
    refused(GAME, state, 2, ThankYou(("KC", "KD")), "SITTING_OUT")


def test_every_round_of_a_table_chooses_again() -> None:
    rules = rules_for("korean", {"sit_out": True, "max_seats": 7, "rounds": 2}, 6)
    seeds = Seeds(b"\x05" * 32)
    state = fold(GAME, GAME.start(rules, 6, seeds))
    now, winners = 0, ()
    while state.round == 1 or state.phase is not Phase.CHOOSING:
        assert not GAME.is_finished(state)
        seat = state.turn if state.phase is not Phase.ROUND_OVER else 0
        legal = GAME.legal_commands(state, seat)
        command = next((c for c in legal if isinstance(c, (SitOut, NextRound, Draw))), legal[-1])
        for event in GAME.decide(state, seat, command, Context(seeds, now)):
            winners = state.result.winners if state.result else ()
            state = evolve(state, event)
    assert state.round == 2 and state.players == () and state.sat_out == ()
    assert all(len(hand) == 7 for hand in state.hands)
    assert state.dealer == state.turn == winners[0]


def test_sit_out_opens_six_and_seven_seats_only() -> None:
    from croupier.engine.game import InvalidRules

    with pytest.raises(InvalidRules) as info:
        rules_for("korean", {"max_seats": 7}, 7)
    assert info.value.field == "max_seats"
    with pytest.raises(InvalidRules) as info:
        rules_for("korean", {"sit_out": True, "max_seats": 8}, 7)
    assert info.value.field == "max_seats"
    # Seven seats asked of a rule set that seats five: the refusal names the options to set.
    with pytest.raises(InvalidRules) as info:
        rules_for("korean", {"sit_out": True}, 7)
    assert info.value.field == "seats" and "raise max_seats to 7)" in str(info.value)
    with pytest.raises(InvalidRules) as info:
        rules_for("korean", {}, 6)
    assert "raise max_seats to 6 with sit_out" in str(info.value)
    # At five seats or fewer there is nothing to choose: play starts at once.
    state = fold(GAME, GAME.start(rules_for("korean", {"sit_out": True}, 5), 5, SEEDS))
    assert state.phase is Phase.TAKE and state.players == (0, 1, 2, 3, 4)
