"""The sweeper's claims against the ticks under way (app/sweeper.py), on a core of its own.

A claim leases its games to this sweeper (5 s): nobody else ticks them meanwhile, and only an
append (a tick's, a command's) ends the lease. A tick may have begun on the game as it was before
the deadline claimed (a command moved it on meanwhile: an away seat's turn, due at once) and so
record nothing: a game claimed while its tick was under way, or a tick that joined one another
call had begun (``Croupier.tick`` shares it). The claim then held the game until its lease lapsed:
seen with two replicas under load, turns recorded 5 s late and restarted as after an outage
(``turns restarted after an outage``, docs/rules/common.md §5.1)."""

from __future__ import annotations

import asyncio

from croupier.app.sweeper import Sweeper

GAME = "g"
NOW_MS = 1_000


class Log:
    """The store's claims: each look claims what the next entry of ``claims`` says."""

    def __init__(self, claims: list[list[str]]) -> None:
        self.claims = claims

    async def claim_due(self, now_ms: int, lease_ms: int, limit: int) -> list[str]:
        return self.claims.pop(0) if self.claims else []


class Core:
    """What the sweeper asks of the core: its store, its clock, its ticks and whether a game is
    due by its copy. No tick records anything (each began on the game as it was); the first is
    held until ``first_may_end`` is set. ``due_here`` says the game is still due ``still_due``
    times."""

    def __init__(self, claims: list[list[str]], still_due: int = 0) -> None:
        self.log = Log(claims)
        self.on_deadline = None
        self.first_may_end = asyncio.Event()
        self.still_due = still_due
        self.ticks: list[str] = []
        self.under_way = 0
        self.most_at_once = 0

    def clock(self) -> int:
        return NOW_MS

    def due_here(self, game_id: str, now: int) -> bool:
        self.still_due -= 1
        return self.still_due >= 0

    async def tick(self, game_id: str) -> int:
        self.ticks.append(game_id)
        self.under_way += 1
        self.most_at_once = max(self.most_at_once, self.under_way)
        try:
            if len(self.ticks) == 1:
                await self.first_may_end.wait()
        finally:
            self.under_way -= 1
        return 0


async def _claimed_again_while_ticking() -> Core:
    """A game claimed, and claimed again (its lease ended by a command's append, its new
    deadline due) while the first claim's tick is under way; the core after both sweeps."""
    core = Core(claims=[[GAME], [GAME]])
    sweeper = Sweeper(core)  # type: ignore[arg-type]
    first = asyncio.create_task(sweeper.sweep())
    while not core.ticks:  # the first claim's tick is under way, held
        await asyncio.sleep(0)
    second = asyncio.create_task(sweeper.sweep())  # claims the game again meanwhile
    while core.log.claims:
        await asyncio.sleep(0)
    core.first_may_end.set()
    await asyncio.wait_for(asyncio.gather(first, second), timeout=5)
    return core


def test_a_game_claimed_while_its_tick_is_under_way_is_ticked_again_after_it() -> None:
    """The second claim's game is ticked once the first tick has ended (never two at once):
    else nothing records its deadline until the claim's lease lapses."""
    core = asyncio.run(_claimed_again_while_ticking())
    assert core.ticks == [GAME, GAME]
    assert core.most_at_once == 1


async def _claimed_once(still_due: int) -> Core:
    """A game claimed once, whose ticks record nothing, due here ``still_due`` times after."""
    core = Core(claims=[[GAME]], still_due=still_due)
    core.first_may_end.set()
    await asyncio.wait_for(Sweeper(core).sweep(), timeout=5)  # type: ignore[arg-type]
    return core


def test_a_claimed_game_still_due_after_its_tick_is_ticked_again() -> None:
    """A tick that joined one begun on the game as it was recorded nothing: the game, still
    due by this process's copy, is ticked again."""
    assert asyncio.run(_claimed_once(still_due=1)).ticks == [GAME, GAME]


def test_a_game_that_stays_due_is_ticked_again_only_once() -> None:
    """Whatever keeps a game due after its ticks, a claim costs two ticks at most (the claim
    then lapses, as a failed tick's does), never a loop."""
    assert asyncio.run(_claimed_once(still_due=100)).ticks == [GAME, GAME]
    assert asyncio.run(_claimed_once(still_due=0)).ticks == [GAME]
