"""The Gin Rummy rule set (docs/rules/gin.md §4) and its presets.

The defaults are those of OpenSpiel's ``gin_rummy``, so that results can be compared with it.

Decisions where the rules are silent (each tested):

* The deal: the shuffled deck's cards 1–10 go to the non-dealer, 11–20 to the dealer, the 21st is
  the upcard, the rest the stock, top first. The first hand's dealer: from a shuffle with purpose
  ``first-dealer`` seat 0 turns the first card and seat 1 the second; the lower rank deals (ace
  low), equal ranks turn again. Afterwards the winner of a hand deals the next; after a wash or a
  hand nobody scores, the same dealer deals again.
* The knocker's melds: a knock may name them (``Knock.melds``), which must be one of the
  arrangements of its cards that leave the least deadwood, every meld of it (else refused,
  ``NOT_LEAST_DEADWOOD_MELDS``). Unnamed, the engine takes, of those arrangements, the one after
  which the defender's least deadwood (laying off its best, one card at a time, then melding the
  rest) is highest: the defender has the least to lay off (``knocker_best_melds``, set by every
  preset; of equals, the first in a fixed order). Games recorded before the option took the first
  arrangement in that fixed order. The defender's deadwood is its least after its lay-offs. The
  legal-move list offers each knock unnamed and, for each arrangement, named.
* The defender lays off one card at a time onto the knocker's melds (as extended so far), then
  ends its lay-offs; laying off after gin is refused.
* Big gin (option ``big_gin_bonus`` > 0): knocking with all eleven cards melded, without a discard,
  scores the defender's deadwood + ``big_gin_bonus`` instead of the gin bonus.
* The wall: when the stock holds two cards at the start of a turn, the player may take the discard
  only if it lets them knock at once (and must then knock), or pass, which ends the hand as a wash.
* When both pass the first upcard, the non-dealer must draw from the stock.
* A match is played to ``match_points``; each hand's points are paid as ``points ×
  stake_per_point`` by the other seat, so the hands' payments net to the match's difference.
* Turn clocks (docs/rules/common.md §5.1, engine/clock.py): between hands the next dealer is on the clock to
  deal. A forfeit loses the match by the point difference, at least a scoring hand's least (1).
  A match both seats have left (``end_when_all_away``) ends where it stands: the hands scored
  stand (the lower total pays the difference), the hand in play is not scored, nobody wins it.
  So does a match the studio ends (``EndGame``, docs/rules/common.md §5.1; the source rules have no such
  end), its settlement's note naming the studio and its reason.
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

SEATS = 2


@dataclass(frozen=True)
class GinRules:
    """Every option of docs/rules/gin.md §4 with OpenSpiel's defaults."""

    # The most deadwood a knock may leave.
    knock_card: int = 10
    gin_bonus: int = 25
    undercut_bonus: int = 25
    # 0: no big gin.
    big_gin_bonus: int = 0
    # Hands are played until a seat reaches this total.
    match_points: int = 100
    stake_per_point: int = 1
    # Turn clocks (engine/clock.py, docs/rules/common.md §5.1); 0: no clock.
    turn_time_ms: int = field(default=0, metadata=ADDED_LATER)
    time_bank_ms: int = field(default=0, metadata=ADDED_LATER)
    max_timeouts: int = field(default=3, metadata=ADDED_LATER)
    forfeit_when_away: bool = field(default=False, metadata=ADDED_LATER)
    # A deadline recorded more than this late (an outage) restarts the seat's turn instead of
    # timing it out (engine/clock.py). 0, as games recorded before the option were played: every
    # deadline times out, however late. Every preset sets it.
    outage_grace_ms: int = field(default=0, metadata=ADDED_LATER)
    # A knock naming no melds, where several arrangements leave the least deadwood, takes the one
    # that leaves the defender the least to lay off (docs/rules/gin.md §4). False, as games recorded before
    # the option were played: the first of them in a fixed order. Every preset sets it.
    knocker_best_melds: bool = field(default=False, metadata=ADDED_LATER)
    # A match whose seats are both away ends, abandoned, after each has timed out twice
    # ``max_timeouts`` times in a row (docs/rules/common.md §5.1): forced moves never knock, so
    # it would never end. False, as games recorded before the option were played. Every preset
    # sets it.
    end_when_all_away: bool = field(default=False, metadata=ADDED_LATER)
    # A forced discard (and the forced knock at the wall) lets go the card that leaves the least
    # deadwood; among equals the highest rank (docs/rules/gin.md, "Forced moves"). False, as
    # games recorded before the option were played: the discard's ties went to the last card in
    # the deck's order (suits first), and the knock at the wall was the legal-move list's first.
    # Every preset sets it.
    forced_discard_by_rank: bool = field(default=False, metadata=ADDED_LATER)
    # A timed-out defender's forced lay-offs leave it the least deadwood it can reach (the
    # defender-best set, docs/rules/gin.md, "Forced moves"): each is the legal-move list's first
    # lay-off after which that least can still be reached, then it ends. False, as games
    # recorded before the option were played (a replay re-derives their forced moves bit for
    # bit): the legal-move list's first lay-off, again and again, even one that breaks the
    # defender's own meld and can cost it the hand, then the end. Every preset sets it.
    forced_lay_off_best: bool = field(default=False, metadata=ADDED_LATER)


STANDARD = GinRules(
    knocker_best_melds=True,
    end_when_all_away=True,
    forced_discard_by_rank=True,
    forced_lay_off_best=True,
    outage_grace_ms=OUTAGE_GRACE_MS,
)

DEFAULT_PRESET = "standard"
PRESETS: dict[str, GinRules] = {
    "standard": STANDARD,
    "single-hand": dataclasses.replace(STANDARD, match_points=1),
    "big-gin": dataclasses.replace(STANDARD, big_gin_bonus=31),
}
PRESET_DESCRIPTIONS = {
    "standard": "Gin Rummy with OpenSpiel's gin_rummy defaults (knock at 10, gin and undercut 25), "
    "a match to 100 points",
    "single-hand": "One scoring hand decides the match (a wash is replayed)",
    "big-gin": "The standard game with big gin (all eleven cards melded) worth 31",
}


# The bounds of every numeric option (docs/rules/gin.md, "Bounds"): a match's totals (at most
# match_points plus one hand's points) stay far inside the events' uint32, and a match to the
# greatest total still ends in a few hundred hands.
MAX_MATCH_POINTS = 1_000
MAX_BONUS = 1_000
BOUNDS: Bounds = {
    "knock_card": (0, 10),
    "gin_bonus": (0, MAX_BONUS),
    "undercut_bonus": (0, MAX_BONUS),
    "big_gin_bonus": (0, MAX_BONUS),
    "match_points": (1, MAX_MATCH_POINTS),
    "stake_per_point": (1, MAX_STAKE),
    **CLOCK_BOUNDS,
}


def rules_for(preset: str, overrides: dict[str, Any], seats: int) -> GinRules:
    """The effective rule set: ``preset`` with ``overrides``; raises :class:`InvalidRules`."""
    return rules_from_preset(
        "Gin Rummy", PRESETS, DEFAULT_PRESET, preset, overrides, seats, validate
    )


def validate(rules: GinRules, seats: int) -> None:
    """Refuse rule sets that cannot be played, naming the option at fault."""

    if seats != SEATS:
        raise InvalidRules("INVALID_SEATS", f"{seats} seats: Gin Rummy is for two", field="seats")
    # Every option is a number within its bounds (OUT_OF_RANGE otherwise): no other constraint.
    check_bounds(rules, BOUNDS)
