"""Yaku: the scoring combinations of a player's captured cards (RULES.md §2.4) and the round
score (§2.6)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from croupier.engine.koikoi.cards import Card, Kind, Role, kind, month, role, sort_cards
from croupier.engine.koikoi.rules import KoiKoiRules


class YakuKind(Enum):
    GOKO = 1
    SHIKO = 2
    AME_SHIKO = 3
    SANKO = 4
    HANAMI_ZAKE = 5
    TSUKIMI_ZAKE = 6
    INOSHIKACHO = 7
    AKATAN = 8
    AOTAN = 9
    AKATAN_AOTAN = 10
    TANE = 11
    TAN = 12
    KASU = 13
    TESHI = 14
    KUTTSUKI = 15


@dataclass(frozen=True)
class Yaku:
    """One scoring combination: its points (``extra`` of them for cards beyond the minimum)."""

    kind: YakuKind
    points: int
    cards: tuple[Card, ...]
    extra: int = 0


def _of(cards: Iterable[Card], *roles: Role) -> tuple[Card, ...]:
    return tuple(c for c in cards if role(c) in roles)


def _counted(yaku_kind: YakuKind, base: int, minimum: int, cards: tuple[Card, ...]) -> Yaku:
    """A yaku worth ``base`` at ``minimum`` cards, +1 per further card."""
    extra = len(cards) - minimum
    return Yaku(yaku_kind, base + extra, sort_cards(cards), extra)


def yaku(captured: Iterable[Card], rules: KoiKoiRules) -> tuple[Yaku, ...]:
    """Every yaku ``captured`` scores, in the order of RULES.md §2.4.

    Only the highest bright yaku counts; Tane is not scored beside Inoshikacho, nor Tan beside
    Akatan, Aotan or Akatan-Aotan (their extra cards already count +1 each).
    """
    cards = sort_cards(tuple(captured))
    found: list[Yaku] = []
    brights = tuple(c for c in cards if kind(c) is Kind.BRIGHT)
    rain = any(role(c) is Role.RAIN_MAN for c in brights)
    if len(brights) == 5:
        found.append(Yaku(YakuKind.GOKO, 10, brights))
    elif len(brights) == 4:
        found.append(Yaku(YakuKind.AME_SHIKO, 7, brights) if rain else Yaku(YakuKind.SHIKO, 8, brights))
    elif len(brights) == 3 and not rain:
        found.append(Yaku(YakuKind.SANKO, 5, brights))
    sake = _of(cards, Role.SAKE_CUP)
    if sake and _of(cards, Role.CURTAIN):
        found.append(Yaku(YakuKind.HANAMI_ZAKE, 5, sort_cards(sake + _of(cards, Role.CURTAIN))))
    if sake and _of(cards, Role.FULL_MOON):
        found.append(Yaku(YakuKind.TSUKIMI_ZAKE, 5, sort_cards(sake + _of(cards, Role.FULL_MOON))))
    animals = tuple(c for c in cards if kind(c) is Kind.ANIMAL)
    if len(_of(animals, Role.BOAR, Role.DEER, Role.BUTTERFLIES)) == 3:
        found.append(_counted(YakuKind.INOSHIKACHO, 5, 3, animals))
    elif len(animals) >= 5:
        found.append(_counted(YakuKind.TANE, 1, 5, animals))
    ribbons = tuple(c for c in cards if kind(c) is Kind.RIBBON)
    poetry = len(_of(ribbons, Role.POETRY_RIBBON)) == 3
    blue = len(_of(ribbons, Role.BLUE_RIBBON)) == 3
    if poetry and blue:
        found.append(_counted(YakuKind.AKATAN_AOTAN, 10, 6, ribbons))
    elif poetry:
        found.append(_counted(YakuKind.AKATAN, 5, 3, ribbons))
    elif blue:
        found.append(_counted(YakuKind.AOTAN, 5, 3, ribbons))
    elif len(ribbons) >= 5:
        found.append(_counted(YakuKind.TAN, 1, 5, ribbons))
    chaff = tuple(c for c in cards if kind(c) is Kind.CHAFF
                  or (rules.sake_cup_as_chaff and role(c) is Role.SAKE_CUP))
    if len(chaff) >= 10:
        found.append(_counted(YakuKind.KASU, 1, 10, chaff))
    return tuple(found)


def formed_or_raised(before: tuple[Yaku, ...], after: tuple[Yaku, ...]) -> bool:
    """Whether ``after`` holds a yaku that ``before`` did not, or one worth more (§2.5)."""
    had = {y.kind: y.points for y in before}
    return any(y.points > had.get(y.kind, 0) for y in after)


def hand_yaku(hand: tuple[Card, ...], rules: KoiKoiRules) -> Yaku | None:
    """Teshi (four of a month) or Kuttsuki (four months, two each) in a dealt hand (§2.4): one
    hand yaku per hand, whatever its shape."""
    months = Counter(month(c) for c in hand)
    four = [m for m, n in months.items() if n == 4]
    if four:
        return Yaku(YakuKind.TESHI, rules.hand_yaku_points,
                    sort_cards(tuple(c for c in hand if month(c) == four[0])))
    if len(hand) == 8 and sorted(months.values()) == [2, 2, 2, 2]:
        return Yaku(YakuKind.KUTTSUKI, rules.hand_yaku_points, sort_cards(hand))
    return None
