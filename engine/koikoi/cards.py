"""The 48 Hanafuda cards as data (docs/rules/koikoi.md §2.1).

A card is its code: the month, a kind letter (B bright, A animal, R ribbon, C chaff) and, for chaff,
its number: ``"3B"`` (Cherry curtain), ``"9A"`` (Chrysanthemum sake cup), ``"1R"`` (Pine poetry
ribbon), ``"12C3"`` (Paulownia chaff 3). Codes are what commands carry and the shuffle permutes; the
table below gives each its month, kind, role and name for views, labels and scoring.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

Card = str


class Kind(Enum):
    BRIGHT = 1
    ANIMAL = 2
    RIBBON = 3
    CHAFF = 4


class Role(Enum):
    """What a card does beyond its kind (the yaku of §2.4 name these cards)."""

    ORDINARY = 1
    RAIN_MAN = 2
    SAKE_CUP = 3
    POETRY_RIBBON = 4
    BLUE_RIBBON = 5
    PLAIN_RIBBON = 6
    CURTAIN = 7
    FULL_MOON = 8
    BOAR = 9
    DEER = 10
    BUTTERFLIES = 11


@dataclass(frozen=True)
class HanafudaCard:
    code: Card
    month: int
    kind: Kind
    role: Role
    name: str
    plant: str


PLANTS = (
    "Pine",
    "Plum",
    "Cherry",
    "Wisteria",
    "Iris",
    "Peony",
    "Bush clover",
    "Susuki grass",
    "Chrysanthemum",
    "Maple",
    "Willow",
    "Paulownia",
)

# month: (bright, animal, ribbon, chaff count) — docs/rules/koikoi.md §2.1, row by row.
_TABLE: dict[int, tuple[tuple[str, Role] | None, tuple[str, Role] | None, Role | None, int]] = {
    1: (("crane", Role.ORDINARY), None, Role.POETRY_RIBBON, 2),
    2: (None, ("bush warbler", Role.ORDINARY), Role.POETRY_RIBBON, 2),
    3: (("curtain", Role.CURTAIN), None, Role.POETRY_RIBBON, 2),
    4: (None, ("cuckoo", Role.ORDINARY), Role.PLAIN_RIBBON, 2),
    5: (None, ("eight-plank bridge", Role.ORDINARY), Role.PLAIN_RIBBON, 2),
    6: (None, ("butterflies", Role.BUTTERFLIES), Role.BLUE_RIBBON, 2),
    7: (None, ("boar", Role.BOAR), Role.PLAIN_RIBBON, 2),
    8: (("full moon", Role.FULL_MOON), ("geese", Role.ORDINARY), None, 2),
    9: (None, ("sake cup", Role.SAKE_CUP), Role.BLUE_RIBBON, 2),
    10: (None, ("deer", Role.DEER), Role.BLUE_RIBBON, 2),
    11: (("rain man", Role.RAIN_MAN), ("swallow", Role.ORDINARY), Role.PLAIN_RIBBON, 1),
    12: (("phoenix", Role.ORDINARY), None, None, 3),
}
_RIBBON_NAMES = {
    Role.POETRY_RIBBON: "poetry ribbon",
    Role.BLUE_RIBBON: "blue ribbon",
    Role.PLAIN_RIBBON: "red ribbon",
}


def _build() -> tuple[HanafudaCard, ...]:
    cards = []
    for month, (bright, animal, ribbon, chaff) in _TABLE.items():
        plant = PLANTS[month - 1]
        if bright:
            cards.append(
                HanafudaCard(
                    f"{month}B", month, Kind.BRIGHT, bright[1], f"{plant} {bright[0]}", plant
                )
            )
        if animal:
            cards.append(
                HanafudaCard(
                    f"{month}A", month, Kind.ANIMAL, animal[1], f"{plant} {animal[0]}", plant
                )
            )
        if ribbon:
            cards.append(
                HanafudaCard(
                    f"{month}R",
                    month,
                    Kind.RIBBON,
                    ribbon,
                    f"{plant} {_RIBBON_NAMES[ribbon]}",
                    plant,
                )
            )
        for n in range(1, chaff + 1):
            name = "Willow lightning" if month == 11 else f"{plant} chaff {n}"
            cards.append(
                HanafudaCard(f"{month}C{n}", month, Kind.CHAFF, Role.ORDINARY, name, plant)
            )
    return tuple(cards)


CARDS: tuple[HanafudaCard, ...] = _build()
BY_CODE: dict[Card, HanafudaCard] = {c.code: c for c in CARDS}


def deck() -> tuple[Card, ...]:
    """The canonical unshuffled order: month 1 to 12, each bright, animal, ribbon, chaff.

    The shuffle permutes this order; replays depend on it, so it never changes.
    """
    return tuple(c.code for c in CARDS)


def is_card(code: object) -> bool:
    return isinstance(code, str) and code in BY_CODE


def card(code: Card) -> HanafudaCard:
    return BY_CODE[code]


def month(code: Card) -> int:
    return BY_CODE[code].month


def kind(code: Card) -> Kind:
    return BY_CODE[code].kind


def role(code: Card) -> Role:
    return BY_CODE[code].role


def name(code: Card) -> str:
    return BY_CODE[code].name if code in BY_CODE else code


_ORDER = {c.code: i for i, c in enumerate(CARDS)}


def sort_cards(cards: tuple[Card, ...] | list[Card]) -> tuple[Card, ...]:
    """In deck order (by month, then bright, animal, ribbon, chaff); unknown codes last."""
    return tuple(sorted(cards, key=lambda c: _ORDER.get(c, len(_ORDER))))
