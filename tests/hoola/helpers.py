"""Building Hoola positions by hand and playing commands on them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from game_invariants import play_commands

from croupier.engine.cards import Card, standard_deck
from croupier.engine.hoola import HoolaGame
from croupier.engine.hoola.events import HoolaCommand, HoolaEvent, RoundEnded
from croupier.engine.hoola.melds import MeldKind, TableMeld, arrange
from croupier.engine.hoola.rules import KOREAN, HoolaRules
from croupier.engine.hoola.state import HoolaState, Phase, Turn
from croupier.engine.shuffle import Seeds

GAME = HoolaGame()
SEEDS = Seeds(b"\x01" * 32, ("test",))

#: Hoola's games in the turn-clock property tests (tests/test_clock.py: game, preset, seats,
#: rule changes): three seats, and four with battle claims. (Six seats with the sit-out question
#: have a property test of their own in test_clock.py here: when both players of a round are
#: away they play it out at once and the table closes, which the generic away-and-back test
#: does not expect.)
CLOCKED: list[tuple[HoolaGame, str, int, dict[str, object]]] = [
    (GAME, "korean", 3, {}),
    (GAME, "korean", 4, {"out_of_turn_thank_you": True}),
]


def position(
    hands: Sequence[str],
    *,
    rules: HoolaRules = KOREAN,
    discards: str = "",
    stock: str | None = None,
    turn: int = 0,
    dealer: int = 0,
    phase: Phase = Phase.TAKE,
    melds: Sequence[tuple[int, str]] = (),
    melded: Sequence[bool] | None = None,
    turns_started: Sequence[int] | None = None,
    top_discarder: int | None = None,
    this_turn: Turn | None = None,
    **changes: object,
) -> HoolaState:
    """A position from card strings: ``position(["7H 8H 9H", "2C 3C"], discards="KS")``.

    ``melds`` are ``(owner, "cards")``; the stock defaults to every other card in deck order.
    Every seat has had a turn unless ``turns_started`` says otherwise.
    """
    split = [tuple(h.split()) for h in hands]
    table = []
    for i, (owner, cards) in enumerate(melds, 1):
        arranged = arrange(cards.split(), rules)
        assert arranged is not None, cards
        table.append(TableMeld(i, owner, arranged.kind, arranged.cards, arranged.jokers))
    pile = tuple(discards.split())
    used = {c for h in split for c in h} | set(pile) | {c for m in table for c in m.cards}
    rest = tuple(c for c in standard_deck(rules.jokers) if c not in used)
    n = len(split)
    state = HoolaState(
        rules=rules,
        seats=n,
        commitment="",
        client_seeds=(),
        round=1,
        dealer=dealer,
        turn=turn,
        phase=phase,
        hands=tuple(split),
        stock=tuple(stock.split()) if stock is not None else rest,
        discards=pile,
        top_discarder=top_discarder,
        melds=tuple(table),
        melded=tuple(melded) if melded is not None else (False,) * n,
        bound=(False,) * n,
        turns_started=tuple(turns_started) if turns_started is not None else (2,) * n,
        this_turn=this_turn
        or Turn(start_hand=split[turn], melded_before=bool(melded and melded[turn])),
        scores=(0,) * n,
        players=tuple(range(n)),
    )
    return dataclasses.replace(state, **changes)  # type: ignore[arg-type]


def play(
    state: HoolaState, seat: int, *commands: HoolaCommand
) -> tuple[HoolaState, list[HoolaEvent]]:
    """Apply commands in turn; returns the final state and every event."""
    return play_commands(GAME, SEEDS, state, seat, commands)


def ended(events: list[HoolaEvent]) -> RoundEnded:
    """The round's end among ``events`` (a one-round table closes right after it)."""
    found = [e for e in events if isinstance(e, RoundEnded)]
    assert found, events
    return found[-1]


def cards(text: str) -> tuple[Card, ...]:
    return tuple(text.split())


__all__ = ["MeldKind", "Phase", "Turn", "cards", "ended", "play", "position"]
