"""Yaku: the scoring combinations of a player's captured cards (docs/rules/koikoi.md §2.4) and the round
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


@dataclass(frozen=True)
class YakuScore:
    """What a yaku is worth (docs/rules/koikoi.md §2.4): ``points`` with ``cards`` cards; a ``counted`` yaku
    (animals, ribbons, chaff) scores one point more for each card beyond them."""

    points: int
    cards: int
    counted: bool = False


# docs/rules/koikoi.md §2.4, in its order.
SCORES: dict[YakuKind, YakuScore] = {
    YakuKind.GOKO: YakuScore(10, 5),
    YakuKind.SHIKO: YakuScore(8, 4),
    YakuKind.AME_SHIKO: YakuScore(7, 4),
    YakuKind.SANKO: YakuScore(5, 3),
    YakuKind.HANAMI_ZAKE: YakuScore(5, 2),
    YakuKind.TSUKIMI_ZAKE: YakuScore(5, 2),
    YakuKind.INOSHIKACHO: YakuScore(5, 3, counted=True),
    YakuKind.TANE: YakuScore(1, 5, counted=True),
    YakuKind.AKATAN_AOTAN: YakuScore(10, 6, counted=True),
    YakuKind.AKATAN: YakuScore(5, 3, counted=True),
    YakuKind.AOTAN: YakuScore(5, 3, counted=True),
    YakuKind.TAN: YakuScore(1, 5, counted=True),
    YakuKind.KASU: YakuScore(1, 10, counted=True),
}
# The ribbons of a ribbon yaku (three poetry, three blue).
RIBBON_SET = 3
CARDS_PER_MONTH = 4
# Kuttsuki: a dealt hand of four months, two cards each.
KUTTSUKI_MONTHS = 4


def _of(cards: Iterable[Card], *roles: Role) -> tuple[Card, ...]:
    return tuple(c for c in cards if role(c) in roles)


def _scored(yaku_kind: YakuKind, cards: tuple[Card, ...]) -> Yaku:
    """The yaku made of ``cards``, with its points from :data:`SCORES`."""
    score = SCORES[yaku_kind]
    extra = len(cards) - score.cards if score.counted else 0
    return Yaku(yaku_kind, score.points + extra, sort_cards(cards), extra)


def _reaches(yaku_kind: YakuKind, cards: tuple[Card, ...]) -> bool:
    return len(cards) >= SCORES[yaku_kind].cards


def yaku(captured: Iterable[Card], rules: KoiKoiRules) -> tuple[Yaku, ...]:
    """Every yaku ``captured`` scores, in the order of docs/rules/koikoi.md §2.4.

    Only the highest bright yaku counts; Tane is not scored beside Inoshikacho, nor Tan beside
    Akatan, Aotan or Akatan-Aotan (their extra cards already count +1 each).
    """
    cards = sort_cards(tuple(captured))
    found: list[Yaku] = []
    brights = tuple(c for c in cards if kind(c) is Kind.BRIGHT)
    rain = any(role(c) is Role.RAIN_MAN for c in brights)
    if len(brights) == SCORES[YakuKind.GOKO].cards:
        found.append(_scored(YakuKind.GOKO, brights))
    elif len(brights) == SCORES[YakuKind.SHIKO].cards:
        found.append(_scored(YakuKind.AME_SHIKO if rain else YakuKind.SHIKO, brights))
    elif len(brights) == SCORES[YakuKind.SANKO].cards and not rain:
        found.append(_scored(YakuKind.SANKO, brights))
    # The viewing yaku only where the rule set has them (``viewing_yaku``).
    sake = _of(cards, Role.SAKE_CUP) if rules.viewing_yaku else ()
    if sake and _of(cards, Role.CURTAIN):
        found.append(_scored(YakuKind.HANAMI_ZAKE, sake + _of(cards, Role.CURTAIN)))
    if sake and _of(cards, Role.FULL_MOON):
        found.append(_scored(YakuKind.TSUKIMI_ZAKE, sake + _of(cards, Role.FULL_MOON)))
    animals = tuple(c for c in cards if kind(c) is Kind.ANIMAL)
    trio = _of(animals, Role.BOAR, Role.DEER, Role.BUTTERFLIES)
    if len(trio) == SCORES[YakuKind.INOSHIKACHO].cards:
        found.append(_scored(YakuKind.INOSHIKACHO, animals))
    elif _reaches(YakuKind.TANE, animals):
        found.append(_scored(YakuKind.TANE, animals))
    ribbons = tuple(c for c in cards if kind(c) is Kind.RIBBON)
    poetry = len(_of(ribbons, Role.POETRY_RIBBON)) == RIBBON_SET
    blue = len(_of(ribbons, Role.BLUE_RIBBON)) == RIBBON_SET
    if poetry and blue:
        found.append(_scored(YakuKind.AKATAN_AOTAN, ribbons))
    elif poetry:
        found.append(_scored(YakuKind.AKATAN, ribbons))
    elif blue:
        found.append(_scored(YakuKind.AOTAN, ribbons))
    elif _reaches(YakuKind.TAN, ribbons):
        found.append(_scored(YakuKind.TAN, ribbons))
    chaff = tuple(
        c
        for c in cards
        if kind(c) is Kind.CHAFF or (rules.sake_cup_as_chaff and role(c) is Role.SAKE_CUP)
    )
    if _reaches(YakuKind.KASU, chaff):
        found.append(_scored(YakuKind.KASU, chaff))
    return tuple(found)


def formed_or_raised(before: tuple[Yaku, ...], after: tuple[Yaku, ...]) -> bool:
    """Whether ``after`` holds a yaku that ``before`` did not, or one worth more (§2.5)."""
    had = {y.kind: y.points for y in before}
    return any(y.points > had.get(y.kind, 0) for y in after)


def hand_yaku(hand: tuple[Card, ...], rules: KoiKoiRules) -> Yaku | None:
    """Teshi (four of a month) or Kuttsuki (four months, two each) in a dealt hand (§2.4): one
    hand yaku per hand, whatever its shape."""
    months = Counter(month(c) for c in hand)
    four = [m for m, n in months.items() if n == CARDS_PER_MONTH]
    if four:
        return Yaku(
            YakuKind.TESHI,
            rules.hand_yaku_points,
            sort_cards(tuple(c for c in hand if month(c) == four[0])),
        )
    if len(months) == KUTTSUKI_MONTHS and set(months.values()) == {2}:
        return Yaku(YakuKind.KUTTSUKI, rules.hand_yaku_points, sort_cards(hand))
    return None
