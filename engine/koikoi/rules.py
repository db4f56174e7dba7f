"""The Koi-Koi rule set (docs/rules/koikoi.md §2) and its named presets.

Every option is a field here, named as in the ``KoiKoiRules`` message; presets fill them in and the
engine reads options, never preset names.

Decisions where the rules are silent (each tested):

* The deal: the dealer's hand is the shuffled deck's cards 1–8, the other hand 9–16, the field
  17–24, the stock the rest, top first. A field with four cards of one month is redealt from the
  seed with purpose ``redeal-1``, ``redeal-2`` … (the round's deal is ``deal``); the event records
  how many redeals it took.
* The first dealer: from a shuffle with purpose ``first-dealer`` seat 0 turns the first card and
  seat 1 the second; the earlier month deals; on the same month the next two cards are turned. The
  turned cards are recorded in the first deal.
* Playing a card whose month matches two field cards needs the capture named in the command; when
  the stock's turned card matches two, the player names it with ``ChooseCapture`` before anything
  else happens. With one or three matches there is no choice, and a command naming one is refused.
* "Formed or raised" compares the player's yaku after both steps of the turn with those at the
  turn's start: a yaku scored now that was not, or now scores more points.
* On the last turn a new or raised yaku wins at once: shobu is the only choice, so it is taken
  (no decision step).
* After a koi-koi the next new or raised yaku, by either player, ends the round at the end of that
  turn and wins it.
* The sake cup counts as an animal and as a chaff at once (``sake_cup_as_chaff``).
* Hanami-zake and Tsukimi-zake score, as in Nintendo's rules; ``viewing_yaku`` off is the house
  rule many tables play (without them the sake cup scores only as an animal, and as a chaff).
* A round's score is paid by the loser as ``score × stake_per_point``; the match settlement pays
  the difference of the totals (the same amount as the rounds' payments netted).
* The next round is dealt by a ``NextRound`` command from either seat (the round's result stays
  on screen until then); the match ends by itself after its last round.
* Turn clocks (docs/rules/common.md §5.1, engine/clock.py): between rounds the seat that will play second in
  the next round (the loser; after a drawn round, its dealer) is on the clock to deal it, so that
  a time-out never forces the next round's lead. A forfeit loses the match by the point
  difference, at least a won round's least score (1; 2 when ``double_from`` is 1).
* A match the studio ends (``EndGame``, docs/rules/common.md §5.1; the source rules have no such end)
  ends where it stands: the rounds scored stand (the lower total pays the difference), the
  round in play is not scored, nobody wins.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from croupier.engine.clock import CLOCK_BOUNDS, OUTAGE_GRACE_MS
from croupier.engine.game import (
    MAX_MULTIPLIER,
    MAX_STAKE,
    Bounds,
    InvalidRules,
    check_bounds,
    rules_from_preset,
)
from croupier.engine.shared import ADDED_LATER

SEATS = 2
ROUND_COUNTS = (3, 6, 12)


@dataclass(frozen=True)
class KoiKoiRules:
    """Every option of docs/rules/koikoi.md §2 with Nintendo's values as defaults."""

    # Rounds in the match: 12, 6 or 3 (docs/rules/koikoi.md §2.7).
    rounds: int = 12
    # What one point is worth in the settlement.
    stake_per_point: int = 1
    # A round score at or above this is doubled (§2.6); 0: never.
    double_from: int = 7
    # The winner's score is multiplied by this when the opponent called koi-koi (§2.6).
    koi_koi_multiplier: int = 2
    # Teshi and Kuttsuki (§2.4).
    hand_yaku_points: int = 6
    sake_cup_as_chaff: bool = True
    # Turn clocks (engine/clock.py, docs/rules/common.md §5.1); 0: no clock.
    turn_time_ms: int = field(default=0, metadata=ADDED_LATER)
    time_bank_ms: int = field(default=0, metadata=ADDED_LATER)
    max_timeouts: int = field(default=3, metadata=ADDED_LATER)
    forfeit_when_away: bool = field(default=False, metadata=ADDED_LATER)
    # A deadline recorded more than this late (an outage) restarts the seat's turn instead of
    # timing it out (engine/clock.py). 0, as games recorded before the option were played: every
    # deadline times out, however late. Every preset sets it.
    outage_grace_ms: int = field(default=0, metadata=ADDED_LATER)
    # A house rule a studio may ask for (docs/rules/koikoi.md, "Forced moves"): a forced play
    # gives away as little as it can, a card that captures before one that does not, then the
    # least valuable kind (chaff, ribbon, animal, bright), then the earliest month. The rules'
    # own forced play, which the presets keep to, is the hand's first card in deck order (a
    # bright before the chaff of its month: an idle player's bright can go to the field). Games
    # created while every preset set it (2026-12-06) replay with it, as their rules record.
    forced_play_least: bool = field(default=False, metadata=ADDED_LATER)
    # The viewing yaku, Hanami-zake (curtain and sake cup) and Tsukimi-zake (full moon and sake
    # cup), score (§2.4). Off: the house rule that drops them, as many tables play. Every game
    # recorded before the option scored them, as its default does.
    viewing_yaku: bool = field(default=True, metadata=ADDED_LATER)


NINTENDO = KoiKoiRules(outage_grace_ms=OUTAGE_GRACE_MS)

DEFAULT_PRESET = "nintendo"
PRESETS: dict[str, KoiKoiRules] = {
    "nintendo": NINTENDO,
    "nintendo-6": dataclasses.replace(NINTENDO, rounds=6),
    "nintendo-3": dataclasses.replace(NINTENDO, rounds=3),
}
PRESET_DESCRIPTIONS = {
    "nintendo": "Nintendo's Koi-Koi (docs/rules/koikoi.md §2): a match of 12 rounds",
    "nintendo-6": "Nintendo's Koi-Koi, a match of 6 rounds",
    "nintendo-3": "Nintendo's Koi-Koi, a match of 3 rounds",
}


# The bounds of every numeric option (docs/rules/koikoi.md, "Bounds"): a round's points (under
# 100 with every yaku) × 2 × the koi-koi multiplier × the stake stay far inside the events' uint32.
MAX_POINTS_OPTION = 100
BOUNDS: Bounds = {
    "stake_per_point": (1, MAX_STAKE),
    "koi_koi_multiplier": (1, MAX_MULTIPLIER),
    "hand_yaku_points": (1, MAX_POINTS_OPTION),
    "double_from": (0, MAX_POINTS_OPTION),
    **CLOCK_BOUNDS,
}


def rules_for(preset: str, overrides: dict[str, Any], seats: int) -> KoiKoiRules:
    """The effective rule set: ``preset`` with ``overrides``; raises :class:`InvalidRules`."""
    return rules_from_preset("Koi-Koi", PRESETS, DEFAULT_PRESET, preset, overrides, seats, validate)


def validate(rules: KoiKoiRules, seats: int) -> None:
    """Refuse rule sets that cannot be played, naming the option at fault."""

    def bad(option: str, why: str) -> InvalidRules:
        return InvalidRules("INVALID_OPTION", f"option {option}: {why}", field=option)

    if seats != SEATS:
        raise InvalidRules("INVALID_SEATS", f"{seats} seats: Koi-Koi is for two", field="seats")
    # A number outside its bounds first: OUT_OF_RANGE, whichever side it misses.
    check_bounds(rules, BOUNDS)
    if rules.rounds not in ROUND_COUNTS:
        raise bad("rounds", f"12, 6 or 3, not {rules.rounds}")
