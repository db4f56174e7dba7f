"""The Rummy-with-jokers rule set (docs/rules/rummy.md §3) and its presets.

Decisions where the rules are silent (each tested):

* A game is one round (deal, play, settlement); play another game for another round.
* The deal: the dealer ("drawn by the shuffle", docs/rules/rummy.md §3.1) is drawn as players draw
  for the deal (``first_dealer_drawn``, set by every preset): from a shuffle of its own (purpose
  ``first-dealer``, a standard deck without jokers) each seat turns a card in seat order, the
  lowest rank deals (ace low), seats tied at the lowest turn again (``RoundDealt.dealer_draws``).
  Games recorded before it took ``rank(last card of the shuffled deck) mod seats``: the stock's
  bottom card, of which the dealer told every seat something. 13 cards to each seat from the
  dealer's left, then the upcard, then the stock, top first. The player on the dealer's left
  plays first.
* Legal-move lists hold the atomic steps (docs/rules/rummy.md §3 and the issue): drawing, taking the discard
  into each meld or lay-off it can go to, each meld the hand can make, each one-card lay-off, each
  joker swap with each place for the joker, each discard. A player who has not opened is offered
  every single meld worth the threshold and the opening of most value the engine finds; openings of
  several melds may be sent in any combination and are validated as one command. The list says
  so (``legal_moves_complete``, ``complete = false`` on ListLegalMoves) whenever it offers a step
  that combines with others; a list of draws and discards only is complete.
* A request's unset seat count (0) is four (``DEFAULT_SEATS``), or the rule set's ``max_seats``
  when it seats fewer (``unset_seats``): a table of three made by the overrides seats three.
* An unnamed joker that could stand in several places of a run takes the high end where legal, else
  the low end (docs/rules/rummy.md §3.2); which of several unnamed jokers takes which place follows joker order.
  Where the ace could sit at either end (``AH 3H … QH JK``), the joker is the king and the ace high
  (``ace_high_when_ambiguous``, set by every preset; games recorded before it read the ace low).
* When the stock is empty at the end of a turn, the discards under the top are shuffled into a new
  stock (purpose ``reshuffle-N``). ``max_reshuffles`` bounds it (3 in every preset, as the rules
  say; 0: no limit, which the presets set until 2026-12-06 and games recorded before then hold);
  when the stock is empty and cannot be rebuilt, the round ends with no winner and nobody pays.
* ``max_reshuffles`` = 0 means *no limit* here but *never* in Hoola (``HoolaRules``), and stays so:
  every recorded Rummy game holds an explicit 0 (the protobuf field has presence) that must go on
  meaning "no limit" when it is replayed under ENGINE_VERSION 1, and Hoola's 0 has always meant
  "never". One meaning for both would need a new engine version (or a new field); until then each
  rule set documents its own, and Rummy has no way to say "never".
* In a set an ace counts 11; in a run it counts 1 only at the low end of ``A 2 3 …`` (a 13-card run
  counts it 11).

Turn clocks (docs/rules/common.md §5.1, ``engine/clock.py``; docs/rules/rummy.md §3.5):

* The seat to act is on the clock in both steps of its turn: taking a card, then playing and
  discarding. Nothing is on the clock before the deal or after the round: a game is one round, so
  there is no next round for anyone to deal.
* The forced move draws from the stock, never takes the discard (taking it is one command with the
  meld that uses it, so no turn ever holds a taken card still to be used), never opens, lays off or
  swaps, and discards the card of highest penalty; ties: the higher rank, then the card later in
  deck order. A forced discard of a seat's last card goes out, as any discard would. The stock is
  never empty when a seat must take (it is rebuilt, or the round ends, as the turn before ends), so
  the forced draw is always legal; a forced discard that leaves it empty rebuilds it as any other.
* An away seat comes back with ``ComeBack``, legal for it at any time in the round: its own turns
  are forced the instant they start, and Rummy has no other move outside a turn.
* ``forfeit_when_away``: the away seat's hand is laid face up, out of play, and it pays its value ×
  ``stake_per_point`` to every other seat still in play, as if each had gone out (``SeatForfeited``).
  With two or more seats still in play the round goes on without it (its turns are skipped, its
  melds stay on the table); when one seat is left, it wins the round (outcome ``FORFEIT``). The
  round's settlement holds the forfeits' lines, whatever its outcome.
* A game the studio ends (``EndGame``, docs/rules/common.md §5.1; the source rules have no such end) ends
  as one every seat has left: outcome ``ABANDONED``, no winner, nobody pays but the forfeits
  already paid.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from croupier.engine.clock import CLOCK_BOUNDS, OUTAGE_GRACE_MS
from croupier.engine.game import (
    MAX_STAKE,
    Bounds,
    InvalidRules,
    check_bounds,
    rules_from_preset,
)
from croupier.engine.shared import ADDED_LATER


@dataclass(frozen=True)
class RummyRules:
    # The least total of a player's first lay-down (40; options 30 and 51).
    open_threshold: int = 40
    stake_per_point: int = 1
    # Rebuildings of the stock from the discards; 0: no limit (unlike Hoola's: see the decisions).
    max_reshuffles: int = 0
    min_seats: int = 2
    max_seats: int = 4
    # Turn clocks (engine/clock.py, docs/rules/common.md §5.1); 0: no clock.
    turn_time_ms: int = field(default=0, metadata=ADDED_LATER)
    time_bank_ms: int = field(default=0, metadata=ADDED_LATER)
    max_timeouts: int = field(default=3, metadata=ADDED_LATER)
    forfeit_when_away: bool = field(default=False, metadata=ADDED_LATER)
    # A deadline recorded more than this late (an outage) restarts the seat's turn instead of
    # timing it out (engine/clock.py). 0, as games recorded before the option were played: every
    # deadline times out, however late. Every preset sets it.
    outage_grace_ms: int = field(default=0, metadata=ADDED_LATER)
    # A run whose ace could sit at either end (``AH 3H … QH JK``) reads with the unnamed joker at
    # the high end and the ace high (docs/rules/rummy.md §3.2). False, as games recorded before the option
    # read it: the ace low. Every preset sets it.
    ace_high_when_ambiguous: bool = field(default=False, metadata=ADDED_LATER)
    # A round whose every seat in play is away ends, abandoned, after each has timed out twice
    # ``max_timeouts`` times in a row (docs/rules/common.md §5.1): forced moves never meld, so it
    # would never end. False, as games recorded before the option were played. Every preset
    # sets it.
    end_when_all_away: bool = field(default=False, metadata=ADDED_LATER)
    # The dealer is drawn from a shuffle of its own (docs/shuffle.md): each seat turns a card of a
    # standard deck, the lowest rank deals. False, as games recorded before the option: the rank
    # of the deal's last card modulo the seats, a card at the bottom of the stock that the dealer
    # told every seat something of. Every preset sets it.
    first_dealer_drawn: bool = field(default=False, metadata=ADDED_LATER)


#: The presets' ``max_reshuffles``: docs/rules/rummy.md §3.1 (the spec's default).
PRESET_RESHUFFLES = 3

STANDARD = RummyRules(
    max_reshuffles=PRESET_RESHUFFLES,
    ace_high_when_ambiguous=True,
    end_when_all_away=True,
    first_dealer_drawn=True,
    outage_grace_ms=OUTAGE_GRACE_MS,
)

DEFAULT_PRESET = "standard"
#: The seats of a game whose request leaves ``seats`` unset or 0 (docs/rules/rummy.md §3).
DEFAULT_SEATS = 4
PRESETS: dict[str, RummyRules] = {
    "standard": STANDARD,
    "open-30": dataclasses.replace(STANDARD, open_threshold=30),
    "open-51": dataclasses.replace(STANDARD, open_threshold=51),
}
PRESET_DESCRIPTIONS = {
    "standard": "Rummy with jokers (docs/rules/rummy.md §3): 108 cards, 13 each, open with 40",
    "open-30": "The standard game opening with 30",
    "open-51": "The standard game opening with 51",
}
OPEN_THRESHOLDS = (30, 40, 51)


# The bounds of every numeric option (docs/rules/rummy.md, "Bounds"): a hand's penalty (under 1,000
# points) × the stake stays far inside the settlement's int64.
MAX_RESHUFFLES = 100
# The fewest seats any Rummy table has.
FEWEST_SEATS = 2
# The most seats any Rummy table has.
MOST_SEATS = 4
BOUNDS: Bounds = {
    "stake_per_point": (1, MAX_STAKE),
    "max_reshuffles": (0, MAX_RESHUFFLES),
    **CLOCK_BOUNDS,
}


def rules_for(preset: str, overrides: dict[str, Any], seats: int) -> RummyRules:
    """The effective rule set: ``preset`` with ``overrides``; raises :class:`InvalidRules`."""
    return rules_from_preset("Rummy", PRESETS, DEFAULT_PRESET, preset, overrides, seats, validate)


def unset_seats(preset: str, overrides: dict[str, Any]) -> int:
    """The seats of a request that leaves ``seats`` unset (0): :data:`DEFAULT_SEATS`, or the rule
    set's ``max_seats`` when it seats fewer. A studio that made a table of three (``max_seats``
    3) and sent no seat count gets three, rather than a refusal of four seats it never asked
    for. An unknown preset or a ``max_seats`` out of bounds is refused by :func:`rules_for`."""
    base = PRESETS.get(preset or DEFAULT_PRESET, STANDARD)
    most = overrides.get("max_seats", base.max_seats)
    return min(DEFAULT_SEATS, most) if isinstance(most, int) else DEFAULT_SEATS


#: Options a new game may not turn off (engine/game.py, ``kept_by_new_games``).
KEPT_BY_NEW_GAMES = {
    "first_dealer_drawn": "the deal's last card, the stock's bottom, chose the dealer, which "
    "told every seat something of it",
}


def validate(rules: RummyRules, seats: int) -> None:
    def bad(option: str, why: str) -> InvalidRules:
        return InvalidRules("INVALID_OPTION", f"option {option}: {why}", field=option)

    # A number outside its bounds first: OUT_OF_RANGE, whichever side it misses.
    check_bounds(rules, BOUNDS)
    if rules.open_threshold not in OPEN_THRESHOLDS:
        raise bad("open_threshold", f"30, 40 or 51, not {rules.open_threshold}")
    # Name the option at fault and echo its value: each bound alone first (a min_seats of 5
    # names min_seats, not max_seats), then the two together.
    for option in ("min_seats", "max_seats"):
        value = getattr(rules, option)
        if not FEWEST_SEATS <= value <= MOST_SEATS:
            raise bad(option, f"{FEWEST_SEATS} to {MOST_SEATS} seats, not {value}")
    if rules.min_seats > rules.max_seats:
        raise bad(
            "min_seats",
            f"{rules.min_seats} is more than max_seats, {rules.max_seats}: no seat count fits",
        )
    if not rules.min_seats <= seats <= rules.max_seats:
        raise InvalidRules(
            "INVALID_SEATS",
            f"{seats} seats: this rule set seats {rules.min_seats} to {rules.max_seats}",
            field="seats",
        )
