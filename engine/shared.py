"""Helpers the games share: immutable updates of a state's tuples, the checks of the cards and
joker namings a command carries, and the first dealer's draw."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from croupier.engine.cards import Card, is_joker, rank, standard_deck
from croupier.engine.cards import is_card as is_face
from croupier.engine.game import MalformedCommand
from croupier.engine.meld_solver import JokerAs
from croupier.engine.shuffle import Seeds, shuffled

T = TypeVar("T")
D = TypeVar("D")


class Identified(Protocol):
    """A table meld: known by its id."""

    @property
    def id(self) -> int: ...


M = TypeVar("M", bound=Identified)


# --- states -------------------------------------------------------------------------------------


def replaced(state: T, /, **changes: Any) -> T:
    """A frozen dataclass ``state`` with ``changes`` to its fields: what ``dataclasses.replace``
    makes, several times faster (a fold replaces a state once or twice per event). It copies the
    fields as they are instead of calling ``__init__`` anew, which is the same for the engine's
    states: plain frozen dataclasses, no ``__post_init__``, no ``InitVar``, no slots."""
    kind = type(state)
    unknown = changes.keys() - _field_names(kind)
    if unknown:
        raise TypeError(f"{type(state).__name__} has no field {', '.join(sorted(unknown))}")
    new = object.__new__(kind)
    fields = new.__dict__
    fields.update(state.__dict__)
    fields.update(changes)
    return new


# The field names of each state class, once.
_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_names(kind: type) -> frozenset[str]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = frozenset(f.name for f in dataclasses.fields(kind))
    return names


def replace_at(values: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    """``values`` with the item at ``index`` replaced by ``value`` (states are immutable)."""
    return values[:index] + (value,) + values[index + 1 :]


def without(cards: tuple[Card, ...], gone: tuple[Card, ...]) -> tuple[Card, ...]:
    """``cards`` but those ``gone`` (put down, discarded), in their order."""
    return tuple(c for c in cards if c not in gone)


def placed(melds: tuple[M, ...], meld: M) -> tuple[M, ...]:
    """The table with ``meld`` in place of the meld of its id, or added last if it is new."""
    for i, old in enumerate(melds):
        if old.id == meld.id:
            return replace_at(melds, i, meld)
    return melds + (meld,)


# --- commands -----------------------------------------------------------------------------------


def check_cards(
    cards: tuple[Card, ...], is_card: Callable[[object], bool], deck: str, field: str
) -> None:
    """Every card named is a card of the game's ``deck`` (described for the message), once."""
    for card in cards:
        if not is_card(card):
            raise MalformedCommand("UNKNOWN_CARD", f"{card!r} is not a card of {deck}", field=field)
    if len(set(cards)) != len(cards):
        raise MalformedCommand("DUPLICATE_CARD", "a card is named twice", field=field)


def check_jokers(jokers: tuple[JokerAs, ...], cards: tuple[Card, ...], field: str) -> None:
    """Named jokers: each a joker among ``cards``, named once, as a one-deck card (``"8H"``)."""
    for use in jokers:
        if not isinstance(use, JokerAs) or not is_joker(use.joker) or use.joker not in cards:
            raise MalformedCommand(
                "JOKER_NOT_IN_MELD", "name only jokers the meld holds", field=field
            )
        if not is_face(use.card) or is_joker(use.card):
            raise MalformedCommand(
                "UNKNOWN_CARD",
                f"a joker cannot stand for {use.card!r} (name a card such as 8H)",
                field=field,
            )
    if len({use.joker for use in jokers}) != len(jokers):
        raise MalformedCommand("DUPLICATE_JOKER", "a joker is named twice", field=field)


# --- deals --------------------------------------------------------------------------------------


def first_dealer(
    deck: Sequence[Card],
    seeds: Seeds,
    order: Callable[[Card], int],
    draw: Callable[[int, Card], D],
    seats: int = 2,
) -> tuple[int, tuple[D, ...]]:
    """The seats each turn a card of the shuffled ``deck`` (purpose ``first-dealer``), in seat
    order from seat 0; the lowest ``order`` deals, and the seats tied at the lowest turn again
    (the others are out). The dealer and every card turned, in the order turned. A shuffle of its
    own: the cards turned say nothing of the deal's deck (its last card is the stock's bottom)."""
    turned = shuffled(deck, seeds, 1, "first-dealer")
    draws: list[D] = []
    contenders = list(range(seats))
    position = 0
    while position + len(contenders) <= len(turned):
        cards = turned[position : position + len(contenders)]
        position += len(contenders)
        draws += [draw(seat, card) for seat, card in zip(contenders, cards, strict=True)]
        lowest = min(map(order, cards))
        contenders = [s for s, card in zip(contenders, cards, strict=True) if order(card) == lowest]
        if len(contenders) == 1:
            return contenders[0], tuple(draws)
    # Ties all the way through the deck: two seats alone would need 26 pairs of equals in a row.
    raise AssertionError("the first-dealer shuffle ran out on a tie")


@dataclass(frozen=True)
class DealerDraw:
    """A card a seat turned from a standard deck to draw for the first deal (Gin, and Hoola's
    and Rummy's ``first_dealer_drawn``; Koi-Koi turns Hanafuda cards, its own record)."""

    seat: int
    card: Card


def drawn_by_rank(seeds: Seeds, seats: int) -> tuple[int, tuple[DealerDraw, ...]]:
    """The first dealer as players of a standard deck draw for it (:func:`first_dealer` of a
    deck without jokers, the lowest rank dealing, ace low): Gin's, Hoola's and Rummy's."""
    return first_dealer(standard_deck(), seeds, rank, DealerDraw, seats)


#: Field metadata of an option added after games were recorded under its rule set: records write
#: it only when it differs from its default and read it as its default when it is absent, so the
#: records of earlier games stay, byte for byte, what they were (and their replays verify).
ADDED_LATER: Mapping[str, bool] = MappingProxyType({"added_later": True})
