"""The Hoola rule set (docs/rules/hoola.md §1) and its named presets.

Every option of docs/rules/hoola.md §1 is a field here, named as there; presets fill them in. The engine reads
options, never preset names. The protobuf ``HoolaRules`` message mirrors this class field by field
(the service converts by name), so the rule set recorded in a game's first event is exactly this.

Decisions where the rules are silent (each tested):

* A meld put down by thank-you counts as the player's meld (for lay-offs, for "unmelded" and for
  Hoola), including a lone 7 taken by thank-you.
* Waiving the unmelded penalty before a loser's first turn (``penalties_before_first_turn``) waives
  both its ×``unmelded_multiplier`` and its ranking last: that loser ranks by hand value.
* Unmelded losers are jointly last among the losers whatever their hand values (docs/rules/hoola.md §1.6: "ties:
  joint last"); they all pay the amount of the last place.
* In ``RANK`` mode a tie group of losers pays the amount of the group's last place.
* ``POINT_DIFFERENCE`` with joint winners uses the lowest plain sum among them.
* With ``reshuffle_discards`` the stock is rebuilt at the end of the turn that drew its last card, at
  most ``max_reshuffles`` times (default 3); after that, or when fewer than two discards remain, the
  round ends as a stock-out. A bound keeps every round finite.
* ``max_reshuffles`` = 0 means *never* here, but *no limit* in Rummy (``RummyRules``). The two were
  not given one meaning, on purpose: recorded games carry the number (the protobuf field has
  presence, and every recorded Rummy game holds an explicit 0 meaning "no limit"), and a Hoola rule
  set with 0 has always meant "never", so either game taking the other's meaning would change the
  outcome of games already recorded or already refereed. Hoola needs no "no limit" (a bound keeps
  its rounds finite, and ``reshuffle_discards`` already switches reshuffling off); Rummy has no
  "never" (``RummyRules``).
* 7-binding is played after the take, like melding, and is a lay-off for Perfect Hoola (the
  bound 7s are put down from the hand).
* Jokers: a joker in a set stands for the set's rank in the suit named (``named_set_joker_suits``,
  set by every preset; unnamed, the first suit the set lacks: spades, hearts, diamonds, clubs); a
  name repeating a suit of the set or of another rank is refused (INVALID_ARGUMENT,
  ``JOKER_CONTRADICTS``). Games recorded before the option took the first suit the set lacked
  whatever was named, chosen again as the set grew. A lone 7 with two jokers is not a meld (one
  natural card). A joker keeps the card it stands for as its meld grows; a natural card cannot
  take its place (Hoola has no joker swap).
* 7-binding in an earlier turn rules out a Hoola (``binding_ends_hoola``, set by every preset;
  games recorded before it did not count it). ``seven_binding_is_meld`` makes binding the binder's
  meld. ``go_out_by_discard`` refuses a meld, lay-off, binding or thank-you that would put down the
  whole hand. Unnamed jokers that could fill
  several places fill them in joker order (JK1 first), but every order is a legal reading.
* Battle Hoola (``out_of_turn_thank_you``, ``FIRST_COME``): a claim is a thank-you by a seat other
  than the one to act, open from a discard until the next player's take (the first up-card has no
  discarder and cannot be claimed). The store's optimistic append decides which of concurrent
  claims is first; the others are answered ABORTED and, re-read, find the card gone. The skipped
  next player's turn does not count as begun.
* Battle Hoola, ``NEAREST_IN_TURN``: an out-of-turn claim is recorded with its time; the first one
  opens a window of ``claim_window_ms``. Each seat claims once. While it is open the next player may
  not draw, stop or declare, but may take the card by thank-you at once (being nearest, they would
  win anyway). The first command recorded after the window closes records the award to the nearest
  claimant first (only recorded claims decide it, so it is the same whenever it is recorded); reads
  show the awarded position as soon as the window has closed. (The service records the award
  itself as the window closes, and answers a command that comes after the close and before that
  record ABORTED, the award recorded first: ``decide`` applying it first is what replays of games
  recorded before 2026-12-02 rely on.)
* A straight flush may hold jokers, as any run may (the seven cards form one run of one suit).
* A straight flush, like four sevens, may be declared on any turn (``first_turn_combinations``
  speaks of low and high hands only).
* A game is a table (docs/rules/hoola.md §1.8) of ``rounds`` rounds; ``rounds = 0`` (the default since the
  turn clocks; it was 1, and every recorded game holds its own) plays until a seat leaves the table
  between rounds. Any seat may start the next round or leave once a round is over; leaving closes
  the table. ``CloseTable``, the older command, is still accepted and listed: it closes the table
  the same way without recording who left, so recorded games replay as they were. A table reaching
  ``rounds`` closes by itself.
* Turn clocks (docs/rules/common.md §5.1, ``engine/clock.py``): on the clock are the seat asked whether it
  plays, the seat to act (nobody while battle claims wait for their window), and between rounds
  the next dealer and every away seat. Forced moves: sit out (play where sitting out is refused);
  draw; discard the card whose loss lowers the hand value most (ties: the last by rank, then suit);
  deal the next round; an away seat leaves the table. A time-out that deals the next round stops
  there: the dealer's first turn is a turn of its own.
* ``forfeit_when_away``: the seat is out of the table. In the round it was dealt into it pays as a
  loser ranked last (above only a liable seat) with the unmelded multiplier whatever it melded;
  the round goes on while two can play it (else it ends now, outcome ``FORFEIT``, the seat left
  winning), the table while two seats are at it (else it closes). Later deals still deal it (one
  function of the seeds) but its cards are set aside unseen, and it is never asked whether it
  plays. A forfeit between rounds pays no round.
* The first dealer ("chosen by the shuffle", docs/rules/hoola.md §1.1) is drawn as players draw for
  the deal (``first_dealer_drawn``, set by every preset): from a shuffle of its own (purpose
  ``first-dealer``, a standard deck without jokers) each seat turns a card in seat order, the
  lowest rank deals (ace low), and seats tied at the lowest turn again; the cards turned are in
  ``RoundDealt.dealer_draws``. Games recorded before it took the rank of the deal's last card
  modulo the seats: that card is the stock's bottom, so the dealer told every seat something of
  a hidden card.
* The next dealer is the round's winner; with joint winners, the first of them in turn order from the
  dealer.
* ``hoola_table_multiplier``: after ``k`` Hoola rounds in a row the next round's stake is
  ``list[(k - 1) mod len]``; any other round resets it to ×1. A Perfect Hoola counts as a Hoola.
* Closing a table settles it: the running balances, as payments netted per pair of seats.
* Sit-out (docs/rules/hoola.md §1.9): ``sit_out`` lets ``max_seats`` reach 7; the play-or-sit-out round is held
  only when more than five seats are at the table. Seats are asked in turn order from the dealer (the
  dealer first); a seat may not sit out when fewer than two could then play. Play begins with the
  first player from the dealer; the dealer stays the dealer (the next round's deal follows the
  winner as always). Turn order, stop limits (by the number playing), ``two_player_stop``, battle
  Hoola claims and the settlement count only the players.
* The sitters-out's cards are shuffled together with the stock (purpose ``sit-out``) into a new
  stock; the up-card stays.
* Brights (an involuntary sitter-out's compensation) are counted on the hand as dealt: the 7s, the
  sets and runs of three or more cards (the meld rules of §1.3, ``ace_wrap`` included; a set or run
  may hold jokers) and the jokers, each card in one of them, in the partition with the most brights.
  Each playing seat pays ``base_stake`` × brights to each involuntary sitter-out; the table's stake
  multiplier does not apply. The payments are lines of the round's settlement (recorded when the
  round ends, shown in the sit-out event from the start). A voluntary sit-out is paid nothing.
* A table the studio ends (``EndGame``, docs/rules/common.md §5.1; the source rules have no such end)
  closes where it stands: the balances of the rounds played are paid as at a table's close, the
  round in play (and a forfeit in it, which its end would have paid) is not scored, nobody wins.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
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


class PaymentMode(Enum):
    RANK = 1
    FLAT = 2
    POINT_DIFFERENCE = 3


class Penalty(Enum):
    UNMELDED = 1
    SEVEN = 2
    JOKER = 3


class ThankYouPenaltyScope(Enum):
    ANY_WIN = 1
    HOOLA_ONLY = 2


class TieMode(Enum):
    SHARED = 1
    VOID = 2


class ClaimPriority(Enum):
    FIRST_COME = 1
    NEAREST_IN_TURN = 2


@dataclass(frozen=True)
class StopLimit:
    """The highest hand value that may stop with ``players`` in the round (``None``: no limit)."""

    players: int
    max_points: int | None


def _limits(*values: int | None) -> tuple[StopLimit, ...]:
    return tuple(
        StopLimit(players, v) for players, v in zip(range(2, 2 + len(values)), values, strict=True)
    )


@dataclass(frozen=True)
class HoolaRules:
    """Every option of docs/rules/hoola.md §1 with the ``korean`` preset's values as defaults."""

    jokers: int = 0
    ace_wrap: bool = True
    ace_low_only: bool = False
    joker_lay_off_alone: bool = True
    seven_binding: bool = False
    thank_you_lone_seven: bool = True
    four_of_a_kind_free: bool = False
    seven_hand_multiplier: int = 2
    joker_hand_multiplier: int = 3
    joker_value: int = 0
    stop_limits: tuple[StopLimit, ...] = _limits(10, 10, 10, 10)
    stop_requires_melds: bool = False
    first_turn_stop: bool = False
    two_player_stop: bool = False
    low_hand_max: int = 15
    high_hand_min: int = 80
    straight_flush_multiplier: int = 0
    first_turn_combinations: bool = False
    reshuffle_discards: bool = False
    payment_mode: PaymentMode = PaymentMode.RANK
    base_stake: int = 1
    unmelded_multiplier: int = 2
    seven_multiplier: int = 2
    joker_multiplier: int = 3
    penalties_before_first_turn: tuple[Penalty, ...] = ()
    hoola_multiplier: int = 4
    perfect_hoola_multiplier: int = 4
    four_sevens_multiplier: int = 1
    low_hand_multiplier: int = 1
    high_hand_multiplier: int = 1
    stop_penalty_multiplier: int = 1
    thank_you_penalty_multiplier: int = 1
    thank_you_penalty_scope: ThankYouPenaltyScope = ThankYouPenaltyScope.ANY_WIN
    tie_mode: TieMode = TieMode.SHARED
    out_of_turn_thank_you: bool = False
    claim_priority: ClaimPriority = ClaimPriority.FIRST_COME
    claim_window_ms: int = 3000
    hoola_table_multiplier: tuple[int, ...] = ()
    sit_out: bool = False
    max_seats: int = 5
    min_seats: int = 2
    # Rebuildings of the stock at most (with reshuffle_discards); 0: never (unlike Rummy's 0: see
    # the decisions above).
    max_reshuffles: int = 3
    rounds: int = 0

    # Turn clocks (engine/clock.py, docs/rules/common.md §5.1); 0: no clock.
    turn_time_ms: int = field(default=0, metadata=ADDED_LATER)
    time_bank_ms: int = field(default=0, metadata=ADDED_LATER)
    max_timeouts: int = field(default=3, metadata=ADDED_LATER)
    forfeit_when_away: bool = field(default=False, metadata=ADDED_LATER)
    # A deadline recorded more than this late (an outage) restarts the seat's turn instead of
    # timing it out (engine/clock.py). 0, as games recorded before the option were played: every
    # deadline times out, however late. Every preset sets it.
    outage_grace_ms: int = field(default=0, metadata=ADDED_LATER)

    # The rule corners of issue 14 (docs/rules/hoola.md §1.3, §1.5). Each default is what games
    # recorded before the option existed did, so that they replay as they were; every preset
    # sets the rules' own reading (``named_set_joker_suits``, ``binding_ends_hoola``).
    # The last card must be a discard: no going out by melding or laying off the whole hand.
    go_out_by_discard: bool = field(default=False, metadata=ADDED_LATER)
    # 7-binding counts as the binder's meld (lay-offs open, no longer "unmelded", no Hoola).
    seven_binding_is_meld: bool = field(default=False, metadata=ADDED_LATER)
    # A set's joker stands for the card named, suit included, recorded as named and kept as the
    # set grows; a name that repeats a suit of the set or has another rank is refused. False:
    # the suit is the first the set lacks, chosen again as the set grows.
    named_set_joker_suits: bool = field(default=False, metadata=ADDED_LATER)
    # Going out after binding 7s in an earlier turn is no Hoola (cards left the hand before the
    # final turn). False: binding did not count against a Hoola.
    binding_ends_hoola: bool = field(default=False, metadata=ADDED_LATER)
    # The first round's dealer is drawn from a shuffle of its own (docs/shuffle.md): each seat
    # turns a card, the lowest deals. False: the rank of the deal's last card, modulo the seats;
    # that card lies at the bottom of the stock, so every seat learned something of it.
    first_dealer_drawn: bool = field(default=False, metadata=ADDED_LATER)

    def stop_limit(self, players: int) -> int | None:
        """The stop limit with ``players`` in the round; ``None``: any hand may stop."""
        for limit in self.stop_limits:
            if limit.players == players:
                return limit.max_points
        return None

    def chooses_players(self, seats: int) -> bool:
        """Whether a round at ``seats`` seats starts with the play-or-sit-out round (§1.9)."""
        return self.sit_out and seats > MAX_PLAYERS

    def stops_allowed(self, players: int) -> bool:
        """Stops and hand combinations exist in this round (docs/rules/hoola.md §1.5, ``two_player_stop``)."""
        return players > 2 or self.two_player_stop


# The rules' own reading of the corners settled after games were first recorded (every preset).
KOREAN = HoolaRules(
    named_set_joker_suits=True,
    binding_ends_hoola=True,
    first_dealer_drawn=True,
    outage_grace_ms=OUTAGE_GRACE_MS,
)

INTERNATIONAL = dataclasses.replace(
    KOREAN,
    ace_wrap=False,
    four_of_a_kind_free=True,
    seven_hand_multiplier=1,
    stop_requires_melds=True,
    first_turn_stop=True,
    low_hand_max=14,
    high_hand_min=83,
    first_turn_combinations=True,
    joker_multiplier=1,
    thank_you_penalty_scope=ThankYouPenaltyScope.HOOLA_ONLY,
    hoola_multiplier=2,
    perfect_hoola_multiplier=2,
    penalties_before_first_turn=(Penalty.SEVEN,),
    out_of_turn_thank_you=True,
    go_out_by_discard=True,
)

# The online services' presets (docs/rules/hoola.md §1.10, from the table in seeds/000_…).
WINJOY = dataclasses.replace(
    KOREAN,
    stop_limits=_limits(None, None, None, None),
    first_turn_stop=True,
    two_player_stop=True,
    high_hand_min=83,
    first_turn_combinations=True,
    thank_you_penalty_multiplier=4,
    stop_penalty_multiplier=2,
    four_sevens_multiplier=7,
    low_hand_multiplier=7,
    high_hand_multiplier=7,
    penalties_before_first_turn=(Penalty.UNMELDED,),
    out_of_turn_thank_you=True,
    hoola_table_multiplier=(2, 4, 1),
)

PMANG = dataclasses.replace(
    KOREAN,
    stop_limits=_limits(15, 15, 15, 15),
    max_seats=4,
    two_player_stop=True,
    high_hand_min=85,
    first_turn_combinations=True,
    joker_multiplier=2,
    thank_you_penalty_multiplier=4,
    stop_penalty_multiplier=2,
    perfect_hoola_multiplier=5,
    four_sevens_multiplier=10,
    low_hand_multiplier=8,
    high_hand_multiplier=8,
    penalties_before_first_turn=(Penalty.UNMELDED, Penalty.SEVEN, Penalty.JOKER),
    hoola_table_multiplier=(2,),
)

HANGAME = dataclasses.replace(
    KOREAN,
    stop_limits=_limits(5, 10, 15, 15),
    max_seats=4,
    two_player_stop=True,
    first_turn_combinations=True,
    thank_you_penalty_multiplier=4,
    stop_penalty_multiplier=4,
    perfect_hoola_multiplier=5,
    four_sevens_multiplier=8,
    low_hand_multiplier=4,
    high_hand_multiplier=4,
    penalties_before_first_turn=(Penalty.UNMELDED,),
    hoola_table_multiplier=(2, 8, 1),
    straight_flush_multiplier=8,
)

DEFAULT_PRESET = "korean"

# At most five play a round; six or seven seats need ``sit_out`` (docs/rules/hoola.md §1.9).
MAX_PLAYERS = 5
# The fewest seats any Hoola table has.
FEWEST_SEATS = 2
MAX_SEATS_WITH_SIT_OUT = 7

PRESETS: dict[str, HoolaRules] = {
    "korean": KOREAN,
    "international": INTERNATIONAL,
    "winjoy": WINJOY,
    "pmang": PMANG,
    "hangame": HANGAME,
}
PRESET_DESCRIPTIONS = {
    "korean": "Offline Korean rules (docs/rules/hoola.md §1, the default)",
    "international": "International rules of the Japanese and Indonesian sources, with battle "
    "Hoola (out-of-turn thank-you, first come)",
    "winjoy": "Winjoy's online rules (docs/rules/hoola.md §1.10): no stop limit, ×7 combinations, "
    "table stakes 2, 4, 1 after Hoola rounds, battle Hoola (first come)",
    "pmang": "Pmang's online rules (docs/rules/hoola.md §1.10): up to 4 players, stop at 15, "
    "every penalty before the first turn, ×2 after a Hoola",
    "hangame": "Hangame's online rules (docs/rules/hoola.md §1.10): up to 4 players, stop at 5/10/15, "
    "straight flush ×8, table stakes 2, 8, 1 after Hoola rounds",
}


# The bounds of every numeric option (docs/rules/hoola.md, "Bounds"): the presets use ×10 at most,
# a hand is worth under 200 points, and a table of 100 rounds at the greatest stake and
# multipliers still settles within int64.
MAX_HAND_POINTS = 200
MAX_ROUNDS = 100
MAX_CLAIM_WINDOW_MS = 60_000
MAX_RESHUFFLES = 10
MAX_TABLE_MULTIPLIERS = 8
# Multipliers multiply (a 7 in a loser's hand once per 7…), so each bound alone is not enough: the
# greatest hand value must fit the events' uint32 (signed, for clients without unsigned integers)
# and the greatest amount a table can move must stay an exact integer in every client (2^53: a
# JavaScript number) and far inside the settlements' int64.
MAX_HAND_CARDS = 10
MAX_HAND_VALUE = 2**31 - 1
MAX_AMOUNT = 2**53
#: Every multiplier option (each at least 1, at most ``MAX_MULTIPLIER``).
MULTIPLIERS = (
    "seven_hand_multiplier",
    "joker_hand_multiplier",
    "unmelded_multiplier",
    "seven_multiplier",
    "joker_multiplier",
    "hoola_multiplier",
    "perfect_hoola_multiplier",
    "four_sevens_multiplier",
    "low_hand_multiplier",
    "high_hand_multiplier",
    "stop_penalty_multiplier",
    "thank_you_penalty_multiplier",
)
BOUNDS: Bounds = {
    "jokers": (0, 2),
    "base_stake": (1, MAX_STAKE),
    **dict.fromkeys(
        (
            *MULTIPLIERS,
            "hoola_table_multiplier",
        ),
        (1, MAX_MULTIPLIER),
    ),
    "straight_flush_multiplier": (0, MAX_MULTIPLIER),  # 0: no straight flush
    "joker_value": (0, MAX_HAND_POINTS),
    "low_hand_max": (0, MAX_HAND_POINTS),
    "high_hand_min": (0, MAX_HAND_POINTS),
    "claim_window_ms": (1, MAX_CLAIM_WINDOW_MS),
    "max_reshuffles": (0, MAX_RESHUFFLES),
    "rounds": (0, MAX_ROUNDS),
    **CLOCK_BOUNDS,
}


def rules_for(preset: str, overrides: dict[str, Any], seats: int) -> HoolaRules:
    """The effective rule set: ``preset`` with ``overrides``; raises :class:`InvalidRules`."""
    return rules_from_preset("Hoola", PRESETS, DEFAULT_PRESET, preset, overrides, seats, validate)


#: Options that do something only with another on (engine/game.py, ``options_need_others``): a
#: new game that sets one away from its default while the other is off is refused, rather than
#: played as if it had not been asked for. No preset sets one without the other.
NEEDS = {
    # Claims out of turn: who wins two at once, and how long a claim is waited for.
    "claim_priority": "out_of_turn_thank_you",
    "claim_window_ms": "out_of_turn_thank_you",
    # How many times the discards are shuffled into a new stock.
    "max_reshuffles": "reshuffle_discards",
}

#: Options a new game may not turn off (engine/game.py, ``kept_by_new_games``).
KEPT_BY_NEW_GAMES = {
    "first_dealer_drawn": "the deal's last card, the stock's bottom, chose the first dealer, "
    "which told every seat something of it",
}


def validate(rules: HoolaRules, seats: int) -> None:
    """Refuse rule sets that cannot be played, naming the option at fault."""

    def bad(option: str, why: str) -> InvalidRules:
        return InvalidRules("INVALID_OPTION", f"option {option}: {why}", field=option)

    most = MAX_SEATS_WITH_SIT_OUT if rules.sit_out else MAX_PLAYERS
    if not FEWEST_SEATS <= rules.min_seats <= rules.max_seats <= most:
        # Name the option at fault: a min_seats below two is wrong whatever max_seats says.
        raise bad(
            "min_seats" if rules.min_seats < FEWEST_SEATS else "max_seats",
            f"seats must lie within {FEWEST_SEATS}..{most}"
            + ("" if rules.sit_out else " (6 or 7 need sit_out)"),
        )
    if not rules.min_seats <= seats <= rules.max_seats:
        # Six or seven take two options (§1.9): say which, rather than only the rule set's range.
        hint = ""
        if rules.max_seats < seats <= MAX_SEATS_WITH_SIT_OUT:
            also = " with sit_out" if seats > MAX_PLAYERS and not rules.sit_out else ""
            hint = f" (raise max_seats to {seats}{also})"
        raise InvalidRules(
            "INVALID_SEATS",
            f"{seats} seats: this rule set seats {rules.min_seats} to {rules.max_seats}{hint}",
            field="seats",
        )
    # A number outside its bounds first: OUT_OF_RANGE, whichever side it misses.
    check_bounds(rules, BOUNDS)
    if rules.ace_low_only and rules.ace_wrap:
        raise bad(
            "ace_low_only",
            "cannot be combined with ace_wrap (an ace low only never wraps K A 2): override "
            "ace_wrap to false too, which every preset but international sets true",
        )
    for limit in rules.stop_limits:
        if limit.max_points is not None and limit.max_points < 0:
            raise bad("stop_limits", "a stop limit cannot be below 0")
    if len({limit.players for limit in rules.stop_limits}) != len(rules.stop_limits):
        raise bad("stop_limits", "one limit per player count")
    if len(rules.hoola_table_multiplier) > MAX_TABLE_MULTIPLIERS:
        raise InvalidRules(
            "OUT_OF_RANGE",
            f"option hoola_table_multiplier: at most {MAX_TABLE_MULTIPLIERS} multipliers",
            field="hoola_table_multiplier",
        )
    # One stop limit per player count (2 to 7) and each penalty once: longer lists mean nothing
    # more and would only swell the game's first event.
    if len(rules.stop_limits) > MAX_SEATS_WITH_SIT_OUT:
        raise InvalidRules(
            "OUT_OF_RANGE",
            f"option stop_limits: at most {MAX_SEATS_WITH_SIT_OUT} limits",
            field="stop_limits",
        )
    if len(set(rules.penalties_before_first_turn)) != len(rules.penalties_before_first_turn):
        raise bad("penalties_before_first_turn", "each penalty at most once")
    # A round plays with two to five (§1.9): a limit for another count could never apply, and a
    # count named twice would leave which limit holds to the list's order.
    counts = [limit.players for limit in rules.stop_limits]
    if len(set(counts)) != len(counts) or not all(
        FEWEST_SEATS <= count <= MAX_PLAYERS for count in counts
    ):
        raise bad(
            "stop_limits",
            f"at most one limit per number of players, each from {FEWEST_SEATS} to {MAX_PLAYERS}",
        )
    for limit in rules.stop_limits:
        if limit.max_points is not None and limit.max_points > MAX_HAND_POINTS:
            raise InvalidRules(
                "OUT_OF_RANGE",
                f"option stop_limits: a stop limit is 0 to {MAX_HAND_POINTS}",
                field="stop_limits",
            )
    hand, table = greatest_amounts(rules)
    if hand > MAX_HAND_VALUE:
        raise InvalidRules(
            "OUT_OF_RANGE",
            f"options joker_value, seven_hand_multiplier and joker_hand_multiplier: a hand could "
            f"be worth {hand}, more than {MAX_HAND_VALUE}; lower them",
            field="seven_hand_multiplier",
        )
    if table > MAX_AMOUNT:
        raise InvalidRules(
            "OUT_OF_RANGE",
            f"option base_stake: with these multipliers a table could move {table}, more than "
            f"{MAX_AMOUNT}; lower the stake or the multipliers",
            field="base_stake",
        )


def greatest_amounts(rules: HoolaRules) -> tuple[int, int]:
    """An upper bound of a hand's value and of what a whole table can move, for these options:
    every multiplier at once, four 7s and every joker in every loser's hand, one player liable for
    all, the greatest table multiplier in every round (an open-ended table: ``MAX_ROUNDS``)."""
    face = MAX_HAND_CARDS * max(13, rules.joker_value)
    jokers = rules.jokers
    hand = face * rules.seven_hand_multiplier**4 * rules.joker_hand_multiplier**jokers
    payment = (
        rules.base_stake
        * max(MAX_SEATS_WITH_SIT_OUT, face)
        * rules.unmelded_multiplier
        * rules.seven_multiplier**4
        * rules.joker_multiplier**jokers
        * max(rules.hoola_multiplier, rules.perfect_hoola_multiplier)
        * rules.four_sevens_multiplier
        * rules.low_hand_multiplier
        * rules.high_hand_multiplier
        * max(rules.straight_flush_multiplier, 1)
        * rules.stop_penalty_multiplier
        * rules.thank_you_penalty_multiplier
        * max((*rules.hoola_table_multiplier, 1))
    )
    rounds = rules.rounds or MAX_ROUNDS
    return hand, payment * MAX_SEATS_WITH_SIT_OUT * rounds
