"""Itemized settlements, shared by every game: who pays whom, and every factor of why."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class MatchOutcome(StrEnum):
    """How a two-seat match by points ends (each game's own outcomes name how a round ends).

    Outcomes are string enums with the very strings the protobuf contract carries: events and
    settlements hold the plain string (``.value``), which a recorded game reads back as it was.
    """

    MATCH_OVER = "MATCH_OVER"
    MATCH_DRAWN = "MATCH_DRAWN"
    #: A seat that was away forfeited the match (docs/rules/common.md §5.1).
    FORFEIT = "FORFEIT"
    #: Every seat was away for long enough: nobody attended the match (docs/rules/common.md §5.1).
    ABANDONED = "ABANDONED"


@dataclass(frozen=True)
class Factor:
    """One factor of a payment: a base amount or a multiplier, or (``added``) an amount added
    on top, such as a liability covering another loser's payment."""

    name: str
    value: int
    reason: str
    added: bool = False


@dataclass(frozen=True)
class SettlementLine:
    payer: int
    payee: int
    amount: int
    factors: tuple[Factor, ...]
    summary: str


@dataclass(frozen=True)
class Settlement:
    round: int
    winners: tuple[int, ...]
    outcome: str
    lines: tuple[SettlementLine, ...]
    net: tuple[int, ...]
    notes: tuple[str, ...] = ()


class FactorLike(Protocol):
    """A factor as the engine or the contract (``common_pb2.Factor``) holds it."""

    @property
    def value(self) -> int: ...
    @property
    def added(self) -> bool: ...


def amount_of(factors: Iterable[FactorLike]) -> int:
    """A line's amount from its factors, applied in order: an ``added`` factor adds its value,
    any other multiplies the amount so far (the first one sets it)."""
    amount: int | None = None
    for factor in factors:
        if factor.added:
            amount = (amount or 0) + factor.value
        else:
            amount = factor.value if amount is None else amount * factor.value
    return amount or 0


#: How the name of a factor that is a rule option's multiplier ends (``unmelded_multiplier``).
MULTIPLIER = "_multiplier"


class NamedFactor(FactorLike, Protocol):
    """A factor with its name, as the engine or the contract holds it."""

    @property
    def name(self) -> str: ...


def factor_label(factor: NamedFactor) -> str:
    """A factor's name as people read it beside its value (``stop_penalty``, not
    ``stop_penalty_multiplier``, beside a 16).

    A factor that multiplies is named after the option whose value it is
    (``unmelded_multiplier 2``). A liability's added factor (Hoola's stop and thank-you
    penalties, docs/rules/hoola.md §1.6) bears its option's name too, but its value is the amount
    it adds, another loser's payment × the option (its reason says both): written as it is
    recorded, ``stop penalty multiplier 16`` read as a ×16 where the table plays ×4, and a support
    agent reading the page against the rules took a right payment for a wrong one. The recorded
    name is left as it is (settlements are part of the hashed events)."""
    if factor.added and factor.name.endswith(MULTIPLIER):
        return factor.name.removesuffix(MULTIPLIER)
    return factor.name


#: Factors whose recorded name is the engine's word, said in a player's (the recorded name stays:
#: settlements are hashed events). The web client says them alike (clients/web/src/render.ts).
FACTOR_WORDS = {
    "table_balance": "balance paid at the table's close",
    "table_multiplier": "stakes raised after Hoola rounds",
}


def factor_words(factor: NamedFactor) -> str:
    """A factor's name in words beside its value (``balance paid at the table's close``,
    ``stop penalty``, ``unmelded multiplier``): the timeline's, the demo's and the page's."""
    return FACTOR_WORDS.get(factor.name) or factor_label(factor).replace("_", " ")


def factor_sign(index: int, factor: FactorLike) -> str:
    """How a line's ``index``-th factor works on its amount, as :func:`amount_of` applies it: the
    first sets it (``=``), whatever its kind (a table's close pays one ``added`` factor: "+ 2"
    read as added to something unsaid); a later ``added`` one adds its value (``+``), any other
    multiplies (``×``)."""
    if index == 0:
        return "="
    return "+" if factor.added else "×"


def share_note(amount: int, factors: Iterable[FactorLike], winners: int) -> str:
    """Why a line pays less than its factors make: it is one joint winner's share of a payment
    split among them (Hoola's ``tie_mode`` ``SHARED``, docs/rules/common.md, "Settlement
    records"), in words (``"its share of 8, split 2 ways"``); empty for any other line."""
    whole = amount_of(factors)
    if winners < 2 or whole == amount:
        return ""
    return f"its share of {whole}, split {winners} ways"


def stakes(amount: int) -> str:
    """An amount a settlement pays, with its unit, as people read it (the demo, the timeline):
    every game's payments are in stakes (docs/rules/common.md, "Settlement records"). Bare,
    "seat 0 pays seat 2 2" read as two seat numbers, or as two of something unnamed."""
    return f"{amount} stake" + ("" if abs(amount) == 1 else "s")


def net_of(seats: int, lines: tuple[SettlementLine, ...]) -> tuple[int, ...]:
    """Net stakes per seat: received minus paid."""
    net = [0] * seats
    for line in lines:
        net[line.payer] -= line.amount
        net[line.payee] += line.amount
    return tuple(net)


def points_won(
    number: int,
    outcome: StrEnum,
    winner: int,
    factors: list[Factor],
    stake: int,
    notes: tuple[str, ...],
) -> tuple[int, Settlement]:
    """A two-seat round won on points: the factors make the points, and the other seat pays them
    × ``stake``. Returns the points and the settlement."""
    points = amount_of(tuple(factors))
    if stake != 1:
        factors = [*factors, Factor("stake_per_point", stake, "stakes per point")]
    loser = 1 - winner
    line = SettlementLine(
        loser,
        winner,
        points * stake,
        tuple(factors),
        f"seat {loser} pays seat {winner} {points * stake} for {points} point(s)",
    )
    return points, Settlement(number, (winner,), outcome.value, (line,), net_of(2, (line,)), notes)


def match_settlement(number: int, totals: tuple[int, ...], stake: int, played: str) -> Settlement:
    """A two-seat match by points: the lower total pays the difference × ``stake``; equal totals
    draw. ``number`` is the last round's (or hand's) number; ``played`` says what was played."""
    if totals[0] == totals[1]:
        return Settlement(
            number,
            (0, 1),
            MatchOutcome.MATCH_DRAWN.value,
            (),
            (0, 0),
            (f"both seats scored {totals[0]} over {played}: a draw",),
        )
    winner = 0 if totals[0] > totals[1] else 1
    loser = 1 - winner
    factors = [
        Factor(
            "point_difference",
            totals[winner] - totals[loser],
            f"seat {winner} scored {totals[winner]} over {played}, seat {loser} {totals[loser]}",
        )
    ]
    if stake != 1:
        factors.append(Factor("stake_per_point", stake, "stakes per point"))
    amount = amount_of(tuple(factors))
    line = SettlementLine(
        loser, winner, amount, tuple(factors), f"seat {loser} pays seat {winner} {amount}"
    )
    return Settlement(
        number,
        (winner,),
        MatchOutcome.MATCH_OVER.value,
        (line,),
        net_of(2, (line,)),
        (f"seat {winner} won the match {totals[winner]} to {totals[loser]}",),
    )


def match_abandoned(
    number: int,
    totals: tuple[int, ...],
    stake: int,
    played: str,
    why: str,
    standing: str = "the hands scored",
) -> Settlement:
    """A two-seat match by points that nobody attends any more (docs/rules/common.md §5.1): it
    ends where it stands. The hands (rounds) scored stand, so the lower total pays the difference ×
    ``stake`` as after a match played out, but nobody wins the match. ``played`` says what was
    played to the end; ``why`` says how it came to end; ``standing``, what stands (the words
    are recorded: Gin's abandoned matches hold the default)."""
    scored = match_settlement(number, totals, stake, played)
    return Settlement(
        number,
        (),
        MatchOutcome.ABANDONED.value,
        scored.lines,
        scored.net,
        (
            f"{why}: {standing} stand (seat 0 {totals[0]} point(s), seat 1 {totals[1]}, "
            f"over {played}, paid as scored) and nobody wins the match",
        ),
    )


def match_forfeited(
    number: int,
    totals: tuple[int, ...],
    seat: int,
    least: int,
    stake: int,
    why: str,
) -> Settlement:
    """A two-seat match that ``seat`` forfeits (docs/rules/common.md §5.1): it loses by the
    current point difference, at least ``least`` (the game's least winning score), × ``stake``
    — the most a loser pays in a match by points. A forfeiting seat that leads gives up its lead
    and still pays the least score. ``number`` is the round (or hand) in play; ``why`` says how
    the seat came to forfeit."""
    winner = 1 - seat
    lead = totals[winner] - totals[seat]
    score = f"seat {winner} has {totals[winner]} point(s), seat {seat} {totals[seat]}"
    if lead >= least:
        factors = [Factor("point_difference", lead, score)]
    else:
        factors = [Factor("round_minimum", least, f"{score}: a forfeit pays at least {least}")]
    if stake != 1:
        factors.append(Factor("stake_per_point", stake, "stakes per point"))
    amount = amount_of(tuple(factors))
    line = SettlementLine(
        seat,
        winner,
        amount,
        tuple(factors),
        f"seat {seat} forfeits and pays seat {winner} {amount}",
    )
    return Settlement(
        number,
        (winner,),
        MatchOutcome.FORFEIT.value,
        (line,),
        net_of(2, (line,)),
        (f"{why}; seat {winner} wins the match",),
    )
