"""The one way a repeated fault is said at most once a while (app/throttle.Throttle), which the
HTTP listener's refusals, asyncio's accept failures, PostgreSQL's held games and the sweeper share."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from croupier.app.throttle import Throttle

EVERY_S = 10.0


@given(st.lists(st.integers(min_value=0, max_value=3 * int(EVERY_S)), max_size=60))
def test_a_thing_is_said_at_most_once_a_while_and_every_time_is_counted_once(
    gaps: list[int],
) -> None:
    now = [0.0]
    throttle = Throttle(EVERY_S, clock=lambda: now[0])
    said_at: list[float] = []
    counted = 0
    for gap in gaps:
        now[0] += gap
        said = throttle.due()
        if said is None:
            continue
        # Said: never sooner than EVERY_S after the last time, which it tells.
        if said_at:
            assert said.since_s == now[0] - said_at[-1] >= EVERY_S
        else:
            assert said.since_s is None
        said_at.append(now[0])
        counted += said.unsaid + 1  # the ones held back, and this one
    # Once EVERY_S has gone by, the next time is said, and tells the ones held back since.
    now[0] += EVERY_S
    last = throttle.due()
    assert last is not None
    assert counted + last.unsaid == len(gaps)
