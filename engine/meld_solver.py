"""Sets and runs of the rummy family (docs/rules/hoola.md §1.3, §3.2, §4), shared by Hoola, Rummy with jokers
and Gin Rummy; what differs between them is a :class:`MeldRules` setting (Hoola's ace wrap, its
special sevens and rank-only set jokers among them).

A meld is validated from its cards in any order. Jokers go where the natural cards fix them (a gap
in a run); a joker that could stand at either end of a run stands for the card the client names,
else at the high end where that is a legal card, else at the low end. In a set a joker stands for
the set's rank, recorded in the first suit the set lacks. The solver also finds the arrangement of
a hand that leaves the least deadwood (Gin).

Cards are the codes of :mod:`croupier.engine.cards`; with two decks a code carries its copy
(``"7S1"``, ``"7S2"``), and jokers are ``"JK1"`` … ``"JK4"``. Rank and suit read the first two
characters either way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from itertools import combinations, pairwise, permutations

from croupier.engine.cards import RANKS, SUITS, Card, is_joker, rank, suit


class MeldKind(Enum):
    SET = 1
    RUN = 2
    # A 7 alone on the table (Hoola, docs/rules/hoola.md §1.3): a meld still open to become a set or a run.
    LONE_SEVEN = 3


SEVEN = 7
# A suit's ranks, ace to king: the longest run without the same ace at both ends.
SUIT_LENGTH = 13
# An ace above the king, as a rank value (Q K A).
HIGH_ACE = 14
SHORTEST_MELD = 3
LARGEST_SET = 4


@dataclass(frozen=True)
class MeldRules:
    """What a legal meld is in one game."""

    # Q K A is a run (the ace high); A 2 3 always is.
    ace_high: bool = True
    # K A 2 is a run too: the ranks lie on a circle (Hoola's ``ace_wrap``; overrides ``ace_high``).
    ace_wrap: bool = False
    # The fewest natural cards in a meld.
    min_naturals: int = 2
    # The most jokers in a 3-card set and in a 4-card set.
    set_jokers: tuple[int, int] = (1, 2)
    # Whether two jokers may stand side by side in a run.
    adjacent_jokers: bool = False
    # Hoola's sevens (docs/rules/hoola.md §1.3): a 7 alone is a meld, a lone 7 still open; and a meld holding
    # a natural 7 may be two cards long (two 7s, a 7 and its neighbour, a 7 and a joker: then one
    # natural card is enough).
    lone_seven: bool = False
    two_card_sevens: bool = False
    # A client naming a set's joker names its rank only: the set's jokers take the suits it lacks
    # in joker order (Hoola's games recorded before ``named_set_joker_suits``). Otherwise a named
    # suit counts, and must be one the set lacks.
    set_joker_rank_only: bool = False
    # Every way to give a set's unnamed jokers the suits it lacks is a reading of its own (Hoola,
    # whose legal-move lists are complete); otherwise only the first (joker order, suits S H D C).
    every_set_reading: bool = False
    # Of run readings that reach as far past their highest natural card, the one lying highest
    # comes first: where an ace could sit at either end, it is high (Rummy's
    # ``ace_high_when_ambiguous``); otherwise the lowest, as games recorded before it read them.
    highest_window_first: bool = False


#: Rummy's melds (docs/rules/rummy.md §3.2); ``RUMMY_RECORDED_BEFORE`` reads a run whose ace could sit at
#: either end as games recorded before ``ace_high_when_ambiguous`` did (the ace low).
RUMMY = MeldRules(highest_window_first=True)
RUMMY_RECORDED_BEFORE = MeldRules()
GIN = MeldRules(ace_high=False, min_naturals=3, set_jokers=(0, 0))


@dataclass(frozen=True)
class JokerAs:
    """A joker and the card it stands for (``"8H"``; in a set the rank with a suit it lacks)."""

    joker: Card
    card: Card


@dataclass(frozen=True)
class Meld:
    """Cards as a set or a run: the cards in table order (runs low to high), each joker's card."""

    kind: MeldKind
    cards: tuple[Card, ...]
    jokers: tuple[JokerAs, ...] = ()

    def named(self) -> dict[Card, Card]:
        return {j.joker: j.card for j in self.jokers}


def face(rank_value: int, suit_letter: str) -> Card:
    """The one-deck code of a rank value (1–13, 14 for a high ace) in a suit: ``"8H"``."""
    return RANKS[(rank_value - 1) % SUIT_LENGTH] + suit_letter


def _run_windows(length: int, rules: MeldRules) -> list[list[int]]:
    """Every stretch of ``length`` consecutive rank values a run may occupy, never the same ace at
    both ends (at most 13 long). Values run 1 (ace low) … 13, and 14 (ace high) with
    ``ace_high``; with ``ace_wrap`` the ranks lie on a circle of 13."""
    if length > SUIT_LENGTH:
        return []
    if rules.ace_wrap:
        if length == SUIT_LENGTH:
            return [list(range(1, SUIT_LENGTH + 1))]
        return [
            [(start - 1 + k) % SUIT_LENGTH + 1 for k in range(length)]
            for start in range(1, SUIT_LENGTH + 1)
        ]
    top = HIGH_ACE if rules.ace_high else SUIT_LENGTH
    return [list(range(low, low + length)) for low in range(1, top - length + 2)]


def runs(
    naturals: list[Card], jokers: list[Card], rules: MeldRules, named: dict[Card, Card]
) -> list[Meld]:
    """Every reading of the cards as one run, the default first: the one reaching furthest past
    its highest natural (an unnamed joker extends a run at its high end where it can); of those
    reaching as far, with ``highest_window_first``, the one lying highest. That second rule
    matters only where an ace could sit at either end (``AH 3H … QH JK``: the joker is the king
    and the ace high, not the 2 with the ace low, docs/rules/rummy.md §3.2's "high end where legal");
    without it, or on Hoola's circle (``ace_wrap``), the first window in rank order comes first."""
    return [
        m
        for _, m in sorted(
            _runs(naturals, jokers, rules, named), key=lambda x: (-x[0][0], -x[0][1])
        )
    ]


def _runs(
    naturals: list[Card], jokers: list[Card], rules: MeldRules, named: dict[Card, Card]
) -> list[tuple[tuple[int, int], Meld]]:
    """Every reading of the cards as one run, with how far it reaches past its highest natural
    and (off the circle) its highest rank value."""
    if len({suit(c) for c in naturals}) != 1:
        return []
    s = suit(naturals[0])
    length = len(naturals) + len(jokers)
    holds_a_seven = any(rank(c) == SEVEN for c in naturals)
    if length < (2 if rules.two_card_sevens and holds_a_seven else SHORTEST_MELD):
        return []
    found = []
    for window in _run_windows(length, rules):
        slots: dict[int, Card] = {}
        for card in naturals:
            high = rank(card) == 1 and HIGH_ACE in window and 1 not in window
            value = HIGH_ACE if high else rank(card)
            if value not in window or value in slots:
                break
            slots[value] = card
        else:
            free = [v for v in window if v not in slots]
            if not rules.adjacent_jokers and any(v + 1 in free for v in free):
                continue
            chosen: dict[int, JokerAs] = {}
            for joker, card in named.items():
                place = next((v for v in free if face(v, s) == card[:2] and v not in chosen), None)
                if place is None:
                    break
                chosen[place] = JokerAs(joker, face(place, s))
            else:
                open_slots = [v for v in free if v not in chosen]
                highest = max(i for i, v in enumerate(window) if v in slots)
                for order in permutations(sorted(j for j in jokers if j not in named)):
                    uses = {
                        **chosen,
                        **{
                            v: JokerAs(j, face(v, s))
                            for v, j in zip(open_slots, order, strict=False)
                        },
                    }
                    cards = tuple(slots[v] if v in slots else uses[v].joker for v in window)
                    found.append(
                        (
                            (
                                len(window) - 1 - highest,
                                window[-1] if rules.highest_window_first else 0,
                            ),
                            Meld(
                                MeldKind.RUN,
                                cards,
                                tuple(sorted(uses.values(), key=lambda j: j.joker)),
                            ),
                        )
                    )
    return found


def _sets(
    naturals: list[Card], jokers: list[Card], rules: MeldRules, named: dict[Card, Card]
) -> list[Meld]:
    """The cards as one set (one rank, natural suits all different, at most four cards): its
    reading, or with ``every_set_reading`` every one of them, the default first."""
    if len({rank(c) for c in naturals}) != 1 or len({suit(c) for c in naturals}) != len(naturals):
        return []
    length = len(naturals) + len(jokers)
    r = rank(naturals[0])
    shortest = 2 if rules.two_card_sevens and r == SEVEN else SHORTEST_MELD
    if not shortest <= length <= LARGEST_SET or (
        length >= SHORTEST_MELD and len(jokers) > rules.set_jokers[length - SHORTEST_MELD]
    ):
        return []
    cards = tuple(sorted(naturals)) + tuple(sorted(jokers))
    missing = [x for x in SUITS if x not in {suit(c) for c in naturals}]
    if rules.set_joker_rank_only:
        # A named joker must have the set's rank; its suit is not the client's to choose.
        if any(rank(card) != r for card in named.values()):
            return []
        return [
            Meld(
                MeldKind.SET,
                cards,
                tuple(
                    JokerAs(j, face(r, x)) for j, x in zip(sorted(jokers), missing, strict=False)
                ),
            )
        ]
    uses = []
    for joker in sorted(jokers):
        card = named.get(joker)
        if card is not None:
            # A named card of another rank, or of a suit the set holds already (a natural card
            # of the meld, or another joker's), contradicts the set.
            if rank(card) != r or card[1:2] not in missing:
                return []
            uses.append(JokerAs(joker, card[:2]))
            missing.remove(card[1])
    unnamed = sorted(j for j in jokers if j not in named)
    suits = permutations(missing, len(unnamed)) if rules.every_set_reading else [missing]
    return [
        Meld(
            MeldKind.SET,
            cards,
            tuple(
                sorted(
                    uses + [JokerAs(j, face(r, x)) for j, x in zip(unnamed, way, strict=False)],
                    key=lambda j: j.joker,
                )
            ),
        )
        for way in suits
    ]


def arrangements(
    cards: Iterable[Card], rules: MeldRules, named: dict[Card, Card] | None = None
) -> list[Meld]:
    """Every way the cards make one meld, the default first (docs/rules/hoola.md §1.3, §3.2): runs (the one
    reaching highest first), then the set.

    ``named`` fixes what jokers stand for; a named card that fits nowhere leaves no arrangement.
    """
    cards = tuple(cards)
    naming = tuple((named or {}).items())
    try:
        return list(_arrangements(cards, rules, naming))
    except TypeError:  # an unhashable card (a malformed command): worked out without the memo
        return list(_arrangements.__wrapped__(cards, rules, naming))


# Legal-move lists ask the solver about the same few cards again and again (every subset of a hand
# that changes by a card a turn, then validation of each candidate found): its answers are kept,
# the most recent of them (about ten megabytes when full, measured).
ARRANGEMENTS_MEMO = 1 << 15


@lru_cache(maxsize=ARRANGEMENTS_MEMO)
def _arrangements(
    cards: tuple[Card, ...], rules: MeldRules, naming: tuple[tuple[Card, Card], ...]
) -> tuple[Meld, ...]:
    named = dict(naming)
    if not cards or len(set(cards)) != len(cards) or any(j not in cards for j in named):
        return ()
    jokers = [c for c in cards if is_joker(c)]
    naturals = [c for c in cards if not is_joker(c)]
    if not naturals:
        return ()
    one_seven = len(naturals) == 1 and rank(naturals[0]) == SEVEN
    if rules.lone_seven and one_seven and not jokers:
        return (Meld(MeldKind.LONE_SEVEN, cards),)
    if len(naturals) < rules.min_naturals and not (
        rules.two_card_sevens and one_seven and len(cards) == 2
    ):
        return ()
    return (*runs(naturals, jokers, rules, named), *_sets(naturals, jokers, rules, named))


def meld_groups(cards: Iterable[Card]) -> list[tuple[Card, ...]]:
    """The cards that could share a meld, as a meld's natural cards share a rank or a suit: each
    rank's, then each suit's (ranks and suits in order, the cards as given), each with every
    joker. Legal-move lists try subsets of each group, and keep each group's answers: a draw or a
    meld changes one or two of a hand's groups."""
    return sorted_out(cards).groups()


@dataclass(frozen=True)
class SortedOut:
    """Cards' jokers, and their natural cards by rank and by suit (each as given, in order): what
    a meld's natural cards share."""

    jokers: tuple[Card, ...]
    by_rank: dict[int, tuple[Card, ...]]
    by_suit: dict[str, tuple[Card, ...]]

    def groups(self) -> list[tuple[Card, ...]]:
        """:func:`meld_groups`: each rank's cards, then each suit's, each with every joker."""
        return [
            *(self.by_rank[r] + self.jokers for r in sorted(self.by_rank)),
            *(self.by_suit[s] + self.jokers for s in sorted(self.by_suit)),
        ]


def sorted_out(cards: Iterable[Card]) -> SortedOut:
    """The cards' jokers and natural cards, by rank and by suit (:class:`SortedOut`)."""
    cards = tuple(cards)
    by_rank: dict[int, list[Card]] = {}
    by_suit: dict[str, list[Card]] = {}
    for card in cards:
        if not is_joker(card):
            by_rank.setdefault(rank(card), []).append(card)
            by_suit.setdefault(suit(card), []).append(card)
    return SortedOut(
        tuple(c for c in cards if is_joker(c)),
        {r: tuple(same) for r, same in by_rank.items()},
        {s: tuple(same) for s, same in by_suit.items()},
    )


def could_meld(cards: Iterable[Card], rules: MeldRules) -> bool:
    """A quick test that is ``False`` only when the cards make no meld (:func:`arrangements` is
    empty), so that legal-move generation asks the solver only about cards that might: a meld's
    natural cards share a rank (a set), or a suit with ranks all different and close enough for a
    run of all the cards to span them (an ace low, high or, with ``ace_wrap``, on the circle)."""
    cards = tuple(cards)
    naturals = [c for c in cards if not is_joker(c)]
    if not naturals:
        return False
    # Legal-move lists ask about every subset of a hand's groups: the ranks are read once.
    ranks = {rank(c) for c in naturals}
    if len(ranks) == 1:
        return True
    if len({suit(c) for c in naturals}) != 1 or len(ranks) != len(naturals):
        return False
    return _shortest_span(sorted(ranks), rules) <= len(cards)


def _shortest_span(values: list[int], rules: MeldRules) -> int:
    """How many consecutive ranks the shortest stretch holding every value covers (``values``
    sorted, distinct; an ace is 1 and may also be high)."""
    if rules.ace_wrap:
        gaps = [b - a for a, b in pairwise(values)]
        gaps.append(values[0] + SUIT_LENGTH - values[-1])
        return SUIT_LENGTH - max(gaps) + 1
    span = values[-1] - values[0] + 1
    if rules.ace_high and values[0] == 1 and len(values) > 1:
        span = min(span, HIGH_ACE - values[1] + 1)
    return span


def arrange(
    cards: Iterable[Card], rules: MeldRules, named: dict[Card, Card] | None = None
) -> Meld | None:
    """The default arrangement of the cards as one meld, or ``None``."""
    found = arrangements(cards, rules, named)
    return found[0] if found else None


def extensions(
    meld: Meld, cards: Iterable[Card], rules: MeldRules, named: dict[Card, Card] | None = None
) -> list[Meld]:
    """Every way ``meld`` can take ``cards`` (a lay-off), the default first: a run stays a run
    with its jokers where they stand, a set stays a set."""
    fixed = meld.named() if meld.kind is MeldKind.RUN else {}
    return [
        m
        for m in arrangements(meld.cards + tuple(cards), rules, {**fixed, **(named or {})})
        if m.kind is meld.kind
    ]


def extend(
    meld: Meld, cards: Iterable[Card], rules: MeldRules, named: dict[Card, Card] | None = None
) -> Meld | None:
    found = extensions(meld, cards, rules, named)
    return found[0] if found else None


def swap(meld: Meld, natural: Card, rules: MeldRules) -> tuple[Meld, Card] | None:
    """Give ``natural`` for the table joker it is (docs/rules/rummy.md §3.3): the meld after, and the joker.

    In a run the natural must be the joker's exact card; in a set its rank, in a suit the set does
    not hold yet.
    """
    if is_joker(natural):
        return None
    for use in meld.jokers:
        if meld.kind is MeldKind.RUN and use.card != natural[:2]:
            continue
        if meld.kind is MeldKind.SET and (
            rank(use.card) != rank(natural)
            or suit(natural) in {suit(c) for c in meld.cards if not is_joker(c)}
        ):
            continue
        cards = tuple(natural if c == use.joker else c for c in meld.cards)
        rest = tuple(j for j in meld.jokers if j.joker != use.joker)
        after = arrange(cards, rules, {j.joker: j.card for j in rest})
        if after is not None and after.kind is meld.kind:
            if meld.kind is MeldKind.RUN:
                after = Meld(MeldKind.RUN, cards, rest)
            return after, use.joker
    return None


# --- deadwood (Gin) ---------------------------------------------------------------------------


def deadwood_value(card: Card) -> int:
    """A = 1, 2–10 face value, J/Q/K = 10 (docs/rules/gin.md §4)."""
    return min(rank(card), 10)


def candidate_melds(hand: Iterable[Card], rules: MeldRules) -> list[tuple[Card, ...]]:
    """Every natural meld within the hand (sets of 3–4, runs of 3 or more), in a stable order."""
    return list(_candidate_melds(tuple(sorted(set(hand))), rules))


@lru_cache(maxsize=ARRANGEMENTS_MEMO)
def _candidate_melds(cards: tuple[Card, ...], rules: MeldRules) -> tuple[tuple[Card, ...], ...]:
    """:func:`candidate_melds` of sorted, distinct ``cards``, remembered: the solvers ask for the
    melds of the same sub-hands again and again (every discard a legal-move list tries)."""
    found: list[tuple[Card, ...]] = []
    by_rank: dict[int, list[Card]] = {}
    for c in cards:
        by_rank.setdefault(rank(c), []).append(c)
    for group in by_rank.values():
        for size in range(SHORTEST_MELD, LARGEST_SET + 1):
            for combo in combinations(group, size):
                if arrange(combo, rules) is not None:
                    found.append(combo)
    for s in SUITS:
        held = {rank(c): c for c in cards if suit(c) == s}
        values = sorted(held) + ([HIGH_ACE] if rules.ace_high and 1 in held else [])
        for i, low in enumerate(values):
            run = [low]
            for value in values[i + 1 :]:
                if value != run[-1] + 1:
                    break
                run.append(value)
                if len(run) >= SHORTEST_MELD:
                    found.append(tuple(held[1 if v == HIGH_ACE else v] for v in run))
    return tuple(found)


def best_melds(hand: Iterable[Card], rules: MeldRules) -> tuple[tuple[Meld, ...], tuple[Card, ...]]:
    """The melds that leave the least deadwood, and the deadwood (docs/rules/gin.md §4). Of arrangements
    that leave as little, the first in a fixed order is chosen, so the answer is deterministic."""
    return _best_melds(tuple(sorted(set(hand))), rules)


@lru_cache(maxsize=ARRANGEMENTS_MEMO)
def _best_melds(
    cards: tuple[Card, ...], rules: MeldRules
) -> tuple[tuple[Meld, ...], tuple[Card, ...]]:
    """:func:`best_melds` of sorted, distinct ``cards``, remembered (a legal-move list asks it of
    the same hand for every knock it tries)."""
    melds, rest = _best(cards, rules)
    # Every candidate is a natural meld, so each arranges.
    return tuple(m for meld in melds if (m := arrange(meld, rules)) is not None), rest


def clear_cache() -> None:
    """Forget the best arrangements and the melds found so far (they are memoized): the solver
    works from scratch again, as when timing it."""
    _best.cache_clear()
    _all_least.cache_clear()
    _arrangements.cache_clear()
    _candidate_melds.cache_clear()
    _least_arrangements.cache_clear()
    _best_melds.cache_clear()
    _deadwood.cache_clear()


@lru_cache(maxsize=8192)
def _best(
    cards: tuple[Card, ...], rules: MeldRules
) -> tuple[tuple[tuple[Card, ...], ...], tuple[Card, ...]]:
    return _best_among(cards, _candidate_melds(cards, rules), {})


def _best_among(
    cards: tuple[Card, ...],
    melds: tuple[tuple[Card, ...], ...],
    known: dict[tuple[Card, ...], tuple[tuple[tuple[Card, ...], ...], tuple[Card, ...]]],
) -> tuple[tuple[tuple[Card, ...], ...], tuple[Card, ...]]:
    """The best arrangement of sorted ``cards``, given ``melds``: every candidate meld within
    them, in :func:`_candidate_melds`' order. A meld within fewer cards is one of the melds
    within more, in the same order, so the sub-hands' candidates are filtered from the hand's,
    never searched for again (``known``: the sub-hands solved in this search)."""
    if not cards:
        return (), ()
    found = known.get(cards)
    if found is not None:
        return found
    first, rest = cards[0], cards[1:]
    # Either the first card is deadwood, or it is in one of the melds that hold it.
    others = tuple(m for m in melds if first not in m)
    best_melds_, best_rest = _best_among(rest, others, known)
    best = (best_melds_, (first,) + best_rest)
    for meld in melds:
        if first not in meld:
            continue
        left_cards = tuple(c for c in rest if c not in meld)
        within = tuple(m for m in others if not any(c in meld for c in m))
        melds_, left = _best_among(left_cards, within, known)
        if deadwood_count(left) < deadwood_count(best[1]):
            best = ((meld,) + melds_, left)
    known[cards] = best
    return best


def least_arrangements(
    hand: Iterable[Card], rules: MeldRules
) -> tuple[tuple[tuple[Meld, ...], tuple[Card, ...]], ...]:
    """Every arrangement of the hand into melds that leaves the least deadwood, with its
    deadwood (docs/rules/gin.md §4, the knocker's melds), in a fixed order: the one :func:`best_melds`
    chooses first. Each is a different set of melds; the cards of a meld are in table order."""
    return _least_arrangements(tuple(sorted(set(hand))), rules)


@lru_cache(maxsize=1024)
def _least_arrangements(
    cards: tuple[Card, ...], rules: MeldRules
) -> tuple[tuple[tuple[Meld, ...], tuple[Card, ...]], ...]:
    least = deadwood_count(_best(cards, rules)[1])
    found = [
        (tuple(m for meld in melds if (m := arrange(meld, rules)) is not None), left)
        for melds, left in _all_least(cards, rules, least)
    ]
    first = best_melds(cards, rules)
    return (first, *(way for way in found if meld_sets(way[0]) != meld_sets(first[0])))


def meld_sets(melds: Iterable[Meld | Iterable[Card]]) -> frozenset[frozenset[Card]]:
    """Melds as sets of cards, whatever their order: what tells two arrangements apart."""
    return frozenset(frozenset(m.cards if isinstance(m, Meld) else m) for m in melds)


@lru_cache(maxsize=1024)
def _all_least(
    cards: tuple[Card, ...], rules: MeldRules, budget: int
) -> tuple[tuple[tuple[tuple[Card, ...], ...], tuple[Card, ...]], ...]:
    """Every set of disjoint melds of ``cards`` that leaves at most ``budget`` deadwood (the
    first card is deadwood, or in one of the melds holding it), each set once. With the least
    deadwood as the budget: every arrangement that leaves the least."""
    if not cards:
        return (((), ()),)
    first, rest = cards[0], cards[1:]
    found: list[tuple[tuple[tuple[Card, ...], ...], tuple[Card, ...]]] = []
    if deadwood_value(first) <= budget:
        for melds, left in _all_least(rest, rules, budget - deadwood_value(first)):
            found.append((melds, (first,) + left))
    for meld in _candidate_melds(cards, rules):
        if first not in meld:
            continue
        for melds, left in _all_least(tuple(c for c in rest if c not in meld), rules, budget):
            found.append(((meld,) + melds, left))
    return tuple(found)


def deadwood_count(cards: Iterable[Card]) -> int:
    """What unmelded cards count (docs/rules/gin.md §4)."""
    return sum(map(deadwood_value, cards))


def deadwood(hand: Iterable[Card], rules: MeldRules) -> int:
    """The least deadwood the hand can leave."""
    return _deadwood(tuple(sorted(set(hand))), rules)


@lru_cache(maxsize=ARRANGEMENTS_MEMO)
def _deadwood(cards: tuple[Card, ...], rules: MeldRules) -> int:
    return deadwood_count(_best(cards, rules)[1])
