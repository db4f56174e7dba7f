"""How a Hoola round ends and what each loser pays (docs/rules/hoola.md §1.5, §1.6), itemized."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from croupier.engine.hoola.melds import Bright, BrightKind, hand_value, jokers, plain_sum, sevens
from croupier.engine.hoola.rules import PaymentMode, Penalty, TieMode
from croupier.engine.hoola.state import HoolaState
from croupier.engine.settlement import Factor, Settlement, SettlementLine, amount_of, net_of


@dataclass(frozen=True)
class Liability:
    """One player pays for every loser (stop penalty, thank-you penalty)."""

    seat: int
    name: str
    multiplier: int
    reason: str


class HoolaOutcome(StrEnum):
    """How a round ends (docs/rules/hoola.md §1.5), and the table's close (§1.8); events and settlements
    hold the string (see :class:`MatchOutcome`)."""

    GOING_OUT = "GOING_OUT"
    STOP = "STOP"
    FAILED_STOP = "FAILED_STOP"
    STOCK_OUT = "STOCK_OUT"
    COMBINATION = "COMBINATION"
    TABLE_CLOSED = "TABLE_CLOSED"
    # A forfeit left one seat to play the round (docs/rules/common.md §5.1): it wins.
    FORFEIT = "FORFEIT"


@dataclass(frozen=True)
class Outcome:
    """How the round ended, before any payment is computed."""

    kind: HoolaOutcome
    winners: tuple[int, ...]
    winner_factor: Factor | None = None
    liability: Liability | None = None
    notes: tuple[str, ...] = ()
    hoola: bool = False
    perfect_hoola: bool = False
    thank_you_hoola: bool = False


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def lowest_hands(state: HoolaState, seats: Sequence[int]) -> tuple[int, ...]:
    """The seats among ``seats`` with the lowest hand value, in turn order from the dealer."""
    values = {s: hand_value(state.hands[s], state.rules) for s in seats}
    best = min(values.values())
    return tuple(s for s in turn_order(state) if s in values and values[s] == best)


def turn_order(state: HoolaState) -> list[int]:
    """The round's players in turn order from the dealer."""
    return state.in_turn_order(state.dealer)


def _penalties(state: HoolaState, seat: int) -> set[Penalty]:
    """The loser penalties that apply to ``seat``: all of them once its first turn came, else only
    those in ``penalties_before_first_turn`` (docs/rules/hoola.md §1.6)."""
    if state.turns_started[seat] > 0:
        return set(Penalty)
    return set(state.rules.penalties_before_first_turn)


def _forfeited(state: HoolaState, seat: int) -> bool:
    """A seat that forfeited in this round: it pays as the loser who pays the most
    (docs/rules/common.md §5.1), unmelded whatever it put down, and ranked last (above only a liable seat)."""
    return seat in state.round_forfeits


def _unmelded(state: HoolaState, seat: int) -> bool:
    """An unmelded loser whose penalty applies: paid ×``unmelded_multiplier`` and ranked last."""
    if _forfeited(state, seat):
        return True
    return not state.melded[seat] and Penalty.UNMELDED in _penalties(state, seat)


def _loser_factors(state: HoolaState, seat: int) -> list[Factor]:
    """The loser multipliers of one seat (unmelded, 7s, jokers)."""
    rules = state.rules
    applies = _penalties(state, seat)
    hand = state.hands[seat]
    factors: list[Factor] = []
    if _unmelded(state, seat) and rules.unmelded_multiplier > 1:
        why = "forfeited: counts as unmelded" if _forfeited(state, seat) else "made no meld"
        factors.append(Factor("unmelded_multiplier", rules.unmelded_multiplier, why))
    if rules.seven_multiplier > 1 and Penalty.SEVEN in applies:
        factors += [
            Factor("seven_multiplier", rules.seven_multiplier, f"holds {c}") for c in sevens(hand)
        ]
    if rules.joker_multiplier > 1 and Penalty.JOKER in applies:
        factors += [
            Factor("joker_multiplier", rules.joker_multiplier, f"holds {c}") for c in jokers(hand)
        ]
    return factors


def _base(state: HoolaState, losers: list[int], outcome: Outcome) -> dict[int, Factor]:
    """Each loser's base payment in stakes (docs/rules/hoola.md §1.6, ``payment_mode``)."""
    rules = state.rules
    if rules.payment_mode is PaymentMode.FLAT:
        return {s: Factor("flat", 1, "every loser pays one stake") for s in losers}
    if rules.payment_mode is PaymentMode.POINT_DIFFERENCE:
        winner_sum = min(plain_sum(state.hands[w], rules) for w in outcome.winners)
        out = {}
        for s in losers:
            diff = plain_sum(state.hands[s], rules) - winner_sum
            out[s] = Factor(
                "point_difference",
                max(1, diff),
                f"face sum {plain_sum(state.hands[s], rules)} − winner's {winner_sum}"
                + (" (at least 1)" if diff < 1 else ""),
            )
        return out
    liable = outcome.liability.seat if outcome.liability else None

    keys = {}
    for seat in losers:
        unmelded = _unmelded(state, seat)
        keys[seat] = (
            seat == liable,
            _forfeited(state, seat),
            unmelded,
            0 if unmelded else hand_value(state.hands[seat], rules),
        )
    ordered = sorted(losers, key=keys.__getitem__)
    out = {}
    for seat in ordered:
        # A tie group pays the amount of its last place.
        place = max(i for i, s in enumerate(ordered, 1) if keys[s] == keys[seat])
        tied = sum(1 for s in ordered if keys[s] == keys[seat]) > 1
        why = (
            "liable, ranks last"
            if seat == liable
            else "forfeited, ranks last"
            if keys[seat][1]
            else "made no meld, ranks last"
            if keys[seat][2]
            else f"hand value {keys[seat][3]}"
        )
        out[seat] = Factor(
            "rank", place, f"{ordinal(place)} among the losers{' (tied)' if tied else ''}: {why}"
        )
    return out


def settle(state: HoolaState, outcome: Outcome) -> Settlement:
    """Every payment of the round, itemized (docs/rules/hoola.md §1.6)."""
    rules = state.rules
    winners = outcome.winners
    # The seats that forfeited in the round are losers too, after the players.
    losers = [s for s in turn_order(state) if s not in winners] + list(state.round_forfeits)
    notes = list(outcome.notes)
    if len(winners) > 1 and rules.tie_mode is TieMode.VOID:
        notes.append("tie for the win with tie_mode VOID: nobody pays")
        return _with_sit_outs(
            state,
            Settlement(
                state.round, winners, outcome.kind.value, (), (0,) * state.seats, tuple(notes)
            ),
        )
    base = _base(state, losers, outcome)
    own: dict[int, tuple[int, list[Factor]]] = {}
    for seat in losers:
        factors = [base[seat]]
        if rules.base_stake != 1:
            factors.append(Factor("base_stake", rules.base_stake, "stake of the round"))
        factors += _loser_factors(state, seat)
        if outcome.winner_factor is not None:
            factors.append(outcome.winner_factor)
        if state.table_multiplier != 1:
            factors.append(
                Factor(
                    "table_multiplier",
                    state.table_multiplier,
                    f"round after {state.hoola_streak} Hoola round(s) in a row "
                    "(hoola_table_multiplier)",
                )
            )
        own[seat] = (amount_of(tuple(factors)), factors)
    payers = own
    liability = outcome.liability
    if liability is not None:
        # The liable seat pays its own amount and, added on top, every other loser's × the penalty.
        factors = list(own[liability.seat][1])
        for seat in losers:
            if seat != liability.seat:
                covered = own[seat][0] * liability.multiplier
                factors.append(
                    Factor(
                        liability.name,
                        covered,
                        f"{liability.reason}: pays seat {seat}'s {own[seat][0]}"
                        f" × {liability.multiplier}",
                        added=True,
                    )
                )
        payers = {liability.seat: (amount_of(tuple(factors)), factors)}
    lines: list[SettlementLine] = []
    for payer in losers:
        if payer not in payers or payers[payer][0] == 0:
            continue
        amount, factors = payers[payer]
        share, remainder = divmod(amount, len(winners))
        for i, winner in enumerate(winners):
            part = share + (remainder if i == 0 else 0)
            if part == 0:
                continue
            split = f", split {len(winners)} ways" if len(winners) > 1 else ""
            lines.append(
                SettlementLine(
                    payer,
                    winner,
                    part,
                    tuple(factors),
                    f"seat {payer} pays seat {winner} {part}{split}",
                )
            )
    return _with_sit_outs(
        state,
        Settlement(
            state.round,
            winners,
            outcome.kind.value,
            tuple(lines),
            net_of(state.seats, tuple(lines)),
            tuple(notes),
        ),
    )


def describe_bright(bright: Bright) -> str:
    name = {BrightKind.SEVEN: "", BrightKind.JOKER: ""}.get(
        bright.kind, bright.kind.name.lower() + " "
    )
    return name + " ".join(bright.cards)


def _with_sit_outs(state: HoolaState, settlement: Settlement) -> Settlement:
    """The round's settlement with what each player owes the involuntary sitters-out (§1.9)."""
    lines = list(settlement.lines)
    notes = list(settlement.notes)
    for sitter in state.sat_out:
        if sitter.voluntary:
            notes.append(f"seat {sitter.seat} sat out by choice")
            continue
        if not sitter.brights:
            notes.append(f"seat {sitter.seat} sat out involuntarily, with no bright to be paid for")
            continue
        held = ", ".join(describe_bright(b) for b in sitter.brights)
        factors = [
            Factor(
                "brights",
                len(sitter.brights),
                f"seat {sitter.seat} sat out involuntarily holding {held}",
            )
        ]
        if state.rules.base_stake != 1:
            factors.append(Factor("base_stake", state.rules.base_stake, "stake per bright"))
        for payer in turn_order(state):
            lines.append(
                SettlementLine(
                    payer,
                    sitter.seat,
                    sitter.compensation,
                    tuple(factors),
                    f"seat {payer} pays seat {sitter.seat} "
                    f"{sitter.compensation} for sitting out involuntarily",
                )
            )
    if not state.sat_out:
        return settlement
    return replace(
        settlement, lines=tuple(lines), net=net_of(state.seats, tuple(lines)), notes=tuple(notes)
    )


def table_settlement(state: HoolaState, played: int | None = None) -> Settlement:
    """Closing a table: its running balances, each seat paid or paying its balance.

    Each seat that is down pays the seats that are up, in seat order (a greedy matching: each
    debtor pays the first creditor still owed as much as it can, then the next; every line names
    the balances that make it). The winners are the seats with the highest balance. ``played``:
    the rounds the balances are over, when not every round dealt (a table ended in a round's
    play).
    """
    played = state.round if played is None else played
    debtors = [[s, -b] for s, b in enumerate(state.scores) if b < 0]
    creditors = [[s, b] for s, b in enumerate(state.scores) if b > 0]
    lines: list[SettlementLine] = []
    for debtor in debtors:
        for creditor in creditors:
            amount = min(debtor[1], creditor[1])
            if amount == 0:
                continue
            debtor[1] -= amount
            creditor[1] -= amount
            reason = (
                f"seat {debtor[0]} is {state.scores[debtor[0]]} over {played} round(s), "
                f"seat {creditor[0]} +{state.scores[creditor[0]]}"
            )
            lines.append(
                SettlementLine(
                    debtor[0],
                    creditor[0],
                    amount,
                    (Factor("table_balance", amount, reason, added=True),),
                    f"seat {debtor[0]} pays seat {creditor[0]} {amount}",
                )
            )
    winners = tuple(s for s, b in enumerate(state.scores) if b == max(state.scores))
    return Settlement(
        state.round,
        winners,
        HoolaOutcome.TABLE_CLOSED.value,
        tuple(lines),
        net_of(state.seats, tuple(lines)),
        (f"{played} round(s) played",),
    )


#: A table's settlement when it was abandoned (the studio ended it): nobody wins it.
ABANDONED = "ABANDONED"


def abandoned_settlement(state: HoolaState, played: int, why: str) -> Settlement:
    """A table that ends where it stands (the studio ended it, ``why``; docs/rules/common.md
    §5.1): the balances of the ``played`` rounds are paid as at a table's close, the round in
    play is not scored (nor a forfeit in it, which a round's end would have paid), and nobody
    wins the table."""
    closed = table_settlement(state, played)
    return replace(
        closed,
        winners=(),
        outcome=ABANDONED,
        notes=(
            f"{why}: the {played} round(s) played stand, their balances paid as at a table's "
            "close; the round in play is not scored and nobody wins the table"
            if played
            else f"{why} before a round was over: nobody pays and nobody wins the table",
        ),
    )
