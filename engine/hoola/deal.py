"""The deal of a Hoola round from the committed seeds (docs/rules/hoola.md §1.1, docs/shuffle.md)."""

from __future__ import annotations

from croupier.engine.cards import rank, standard_deck
from croupier.engine.hoola.events import DealerDraw, Hand, RoundDealt
from croupier.engine.hoola.rules import HoolaRules
from croupier.engine.shared import drawn_by_rank
from croupier.engine.shuffle import Seeds, shuffled

HAND_SIZE = 7


def deal(
    rules: HoolaRules,
    seats: int,
    seeds: Seeds,
    round_no: int,
    dealer: int | None = None,
    table_multiplier: int = 1,
    hoola_streak: int = 0,
    balances: tuple[int, ...] = (),
) -> RoundDealt:
    """Deal a round from the seeds: 7 cards each from the dealer on, one up-card, the rest stock.

    The first dealer is chosen by the shuffle: with ``first_dealer_drawn`` drawn from a shuffle
    of its own (each seat turns a card, the lowest rank deals); in games recorded before it, the
    seat of the deck's last card's rank modulo the seat count. Either is a pure function of the
    committed seed.
    """
    deck = shuffled(standard_deck(rules.jokers), seeds, round_no, "deal")
    draws: tuple[DealerDraw, ...] = ()
    if dealer is None and rules.first_dealer_drawn:
        dealer, draws = drawn_by_rank(seeds, seats)
    elif dealer is None:
        dealer = rank(deck[-1]) % seats
    hands = []
    for seat in range(seats):
        offset = ((seat - dealer) % seats) * HAND_SIZE
        cards = deck[offset : offset + HAND_SIZE]
        hands.append(Hand(seat, cards, len(cards)))
    upcard = deck[seats * HAND_SIZE]
    stock = deck[seats * HAND_SIZE + 1 :]
    return RoundDealt(
        round_no,
        dealer,
        tuple(hands),
        upcard,
        stock,
        len(stock),
        table_multiplier,
        hoola_streak,
        balances or (0,) * seats,
        draws,
    )
