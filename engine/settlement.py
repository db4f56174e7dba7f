"""Itemized settlements, shared by every game: who pays whom, and every factor of why."""

from __future__ import annotations

from dataclasses import dataclass


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


def amount_of(factors: tuple[Factor, ...]) -> int:
    """A line's amount from its factors, applied in order: an ``added`` factor adds its value,
    any other multiplies the amount so far (the first one sets it)."""
    amount: int | None = None
    for factor in factors:
        if factor.added:
            amount = (amount or 0) + factor.value
        else:
            amount = factor.value if amount is None else amount * factor.value
    return amount or 0


def net_of(seats: int, lines: tuple[SettlementLine, ...]) -> tuple[int, ...]:
    """Net stakes per seat: received minus paid."""
    net = [0] * seats
    for line in lines:
        net[line.payer] -= line.amount
        net[line.payee] += line.amount
    return tuple(net)
