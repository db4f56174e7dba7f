"""The notifier wakes the streams of the game named, and only those; other threads hand their
notices to the loop."""

from __future__ import annotations

import asyncio
import threading

from croupier.app.notifier import Notifier


def test_only_the_named_games_waiters_wake() -> None:
    async def scenario() -> None:
        notifier = Notifier()
        notifier.bind(asyncio.get_running_loop())
        one, other = notifier.waiter("one"), notifier.waiter("other")
        also_one = notifier.waiter("one")
        assert (notifier.streams("one"), notifier.streams("other"), notifier.streams()) == (2, 1, 3)
        notifier.notify("one", 5)
        assert one.is_set() and also_one.is_set() and not other.is_set()
        for game, event in (("one", one), ("one", also_one), ("other", other)):
            notifier.release(game, event)
        assert notifier.streams() == 0

    asyncio.run(scenario())


def test_a_notice_from_another_thread_reaches_the_loop() -> None:
    async def scenario() -> None:
        notifier = Notifier()
        notifier.bind(asyncio.get_running_loop())
        waiting = notifier.waiter("game")
        threading.Thread(target=notifier.notify_threadsafe, args=("game", 3)).start()
        await asyncio.wait_for(waiting.wait(), 10)
        notifier.release("game", waiting)

    asyncio.run(scenario())


def test_a_released_waiter_is_not_woken_and_not_kept() -> None:
    async def scenario() -> None:
        notifier = Notifier()
        gone = notifier.waiter("game")
        notifier.release("game", gone)
        notifier.notify("game")
        assert not gone.is_set() and notifier.streams("game") == 0

    asyncio.run(scenario())


def test_a_version_heard_of_already_wakes_nobody() -> None:
    """The store's listener also hears this process's own appends, after the process told of
    them: the second notice of one version must not wake every stream on the game again."""

    async def scenario() -> None:
        notifier = Notifier()
        notifier.notify("game", 7)
        again = notifier.waiter("game")
        notifier.notify("game", 7)
        notifier.notify("game", 6)
        assert not again.is_set() and notifier.latest("game") == 7
        notifier.notify("game", 8)
        assert again.is_set() and notifier.latest("game") == 8
        unknown = notifier.waiter("game")
        notifier.notify("game")  # no version: someone appended, which version is not known
        assert unknown.is_set()
        notifier.release("game", again)
        notifier.release("game", unknown)

    asyncio.run(scenario())


def test_watching_is_set_while_some_stream_waits() -> None:
    """What the store's look for other processes' appends goes by (often only while set)."""

    async def scenario() -> None:
        notifier = Notifier()
        assert not notifier.watching.is_set()
        one, other = notifier.waiter("one"), notifier.waiter("other")
        assert notifier.watching.is_set()
        notifier.release("one", one)
        assert notifier.watching.is_set()  # "other" still waits
        notifier.release("other", other)
        assert not notifier.watching.is_set()

    asyncio.run(scenario())
