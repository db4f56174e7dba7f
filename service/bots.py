"""Bots that play any game kind through the gRPC contract: the ``demo`` command and the tests."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.message import Message

from croupier.engine.settlement import factor_sign, factor_words, share_note, stakes
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc


@dataclass
class GameResult:
    game_id: str
    seats: int
    settlement: common_pb2.Settlement
    moves: int
    version: int
    tokens: list[str] = field(default_factory=list)
    rounds: list[common_pb2.Settlement] = field(default_factory=list)
    final: common_pb2.Settlement | None = None

    def describe(self) -> str:
        lines = [
            f"game {self.game_id}: {len(self.rounds)} round(s), {self.moves} moves, "
            f"version {self.version}"
        ]
        for settlement in self.rounds:
            lines += describe_settlement(settlement)
        if self.final is not None and (not self.rounds or self.final != self.rounds[-1]):
            lines += describe_settlement(self.final)
        return "\n".join(lines)


#: The field of each game kind in the ``Rules``, ``View`` and ``EventBody`` oneofs.
KIND_FIELDS: dict[common_pb2.GameKind.ValueType, str] = {
    common_pb2.GAME_KIND_HOOLA: "hoola",
    common_pb2.GAME_KIND_KOIKOI: "koikoi",
    common_pb2.GAME_KIND_GIN: "gin",
    common_pb2.GAME_KIND_RUMMY: "rummy",
}
#: The command id prefix of a batch that time made due (log/records.py's TICK_PREFIX; the bots
#: use the contract only).
TICK_PREFIX = "tick:"
#: How long the bots wait for the service's clock to play the idle seats before giving up: far
#: beyond any turn time a bot game uses (the sweeper records a time-out within tens of ms).
IDLE_WAIT_S = 60.0


class ClockStalled(RuntimeError):
    """Only idle seats were to act and the service's clock did not play them in time."""


class MovesRanOut(RuntimeError):
    """The bots made their most moves (or waits) and the game is still going."""


#: The most moves the bots make in one game. A Gin match of these bots goes on for hands that end
#: in washes now and then: 225 to 1,519 moves over 80 matches (2,000 was met about once in a
#: hundred), so the cap is far beyond any one game rather than a limit a game reaches.
MAX_MOVES = 10_000


def clock_rules(
    kind: common_pb2.GameKind.ValueType,
    overrides: service_pb2.Rules | None,
    turn_time_ms: int,
    max_timeouts: int | None = None,
) -> service_pb2.Rules:
    """``overrides`` (or none) with the game's turn clock set: ``turn_time_ms`` (0: no clock)
    and, if given, ``max_timeouts``; for any game kind."""
    rules = service_pb2.Rules()
    if overrides is not None:
        rules.CopyFrom(overrides)
    game = getattr(rules, KIND_FIELDS[kind])
    game.SetInParent()  # an empty rule set of the kind is still that kind's
    if turn_time_ms:
        game.turn_time_ms = turn_time_ms
    if max_timeouts is not None:
        game.max_timeouts = max_timeouts
    return rules


def time_outs(events: Sequence[service_pb2.GameEvent]) -> list[tuple[service_pb2.GameEvent, Any]]:
    """Each recorded ``TurnTimedOut`` of ``events``, with the event that carries it (its
    ``recorded_at_ms`` says how late the service recorded it)."""
    found = []
    for event in events:
        which = event.body.WhichOneof("body")
        if which is None:
            continue
        body = getattr(event.body, which)
        if "event" not in body.DESCRIPTOR.oneofs_by_name:  # not a game's event (a seed reveal)
            continue
        if body.WhichOneof("event") == "turn_timed_out":
            found.append((event, body.turn_timed_out))
    return found


def _clock_time(ms: int) -> str:
    """A Unix time in ms as the time of day (UTC) to the millisecond."""
    return time.strftime("%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d} UTC"


def describe_tick(events: Sequence[service_pb2.GameEvent]) -> list[str]:
    """What time made due, in words: each time-out (which seat, its deadline, how late the
    service recorded it, whether the seat is now away), then the forced moves' events."""
    lines = []
    for event in events:
        which = event.body.WhichOneof("body")
        body = getattr(event.body, which) if which else None
        kind = body.WhichOneof("event") if body is not None and body.DESCRIPTOR.oneofs else None
        if body is None or kind is None:
            lines.append(f"    #{event.version} (hidden from this seat)")
            continue
        if kind == "turn_restarted":
            again = body.turn_restarted
            lines.append(
                f"  seat {again.seat}'s deadline {_clock_time(again.deadline_ms)} passed while the "
                f"service was away (recorded {again.at_ms - again.deadline_ms} ms after it): its "
                "turn starts again"
            )
            continue
        if kind == "turn_timed_out":
            timed = body.turn_timed_out
            late = event.recorded_at_ms - timed.deadline_ms
            away = "; it is away: its turns are forced at once" if timed.away else ""
            lines.append(
                f"  seat {timed.seat} timed out: deadline {_clock_time(timed.deadline_ms)}, "
                f"recorded {late} ms after it{away}; forced:"
            )
            continue
        fields = _short(getattr(body, kind))
        lines.append(
            f"    #{event.version} {kind.replace('_', ' ')}" + (f": {fields}" if fields else "")
        )
    return lines


def _short(message: Any) -> str:
    """A message on one short line: a card (or anything with a ``code``) by its code, a meld by
    its cards."""
    names = message.DESCRIPTOR.fields_by_name
    if "code" in names:
        return str(message.code)
    if "cards" in names and "kind" in names:
        return " ".join(_short(c) for c in message.cards)
    parts = []
    for described, value in message.ListFields():
        if described.message_type is None:
            text = ", ".join(map(str, value)) if _repeated(value) else str(value)
        elif _repeated(value):
            text = "[" + ", ".join(_short(v) for v in value) + "]"
        else:
            text = _short(value)
        parts.append(f"{described.name.replace('_', ' ')} {text}")
    return "; ".join(parts)


def _repeated(value: Any) -> bool:
    """Whether a field's value is a repeated container (neither text nor a message)."""
    return hasattr(value, "__len__") and not isinstance(value, (str, bytes, Message))


def describe_settlement(s: common_pb2.Settlement) -> list[str]:
    """A settlement in words: every payment with every factor and its reason."""
    lines = [
        # The outcome in words ("went out", "table closed"), as the timeline says it.
        f"round {s.round}: {s.outcome.replace('_', ' ').lower()}; winner(s): "
        + (", ".join(f"seat {w}" for w in s.winners) or "none")
    ]
    lines += [f"  note: {n}" for n in s.notes]
    for line in s.lines:
        factors = " ".join(
            f"{factor_sign(i, f)} {factor_words(f)} {f.value}" for i, f in enumerate(line.factors)
        )
        share = share_note(line.amount, line.factors, len(s.winners))
        lines.append(
            f"  seat {line.payer} → seat {line.payee}: {stakes(line.amount)}   ({factors})"
            + (f", {share}" if share else "")
        )
        lines += [f"      {factor_words(f)} {f.value}: {f.reason}" for f in line.factors]
    lines.append("  net, in stakes: " + ", ".join(f"seat {i} {n:+d}" for i, n in enumerate(s.net)))
    return lines


def _oneof(message: Message, group: str) -> Any:
    """The message set in ``message``'s oneof ``group``, which must be set."""
    which = message.WhichOneof(group)
    if which is None:
        raise TypeError(f"{message.DESCRIPTOR.full_name}: no {group} is set")
    return getattr(message, which)


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def move_kind(m: service_pb2.LegalMove) -> str:
    """The move's kind: the name of the field set in its game's command."""
    game = getattr(m.command, m.command.WhichOneof("game") or "hoola")
    return game.WhichOneof("move") or ""


def choose(moves: list[service_pb2.LegalMove], rng: random.Random) -> service_pb2.LegalMove:
    """A plausible move of whatever game the moves are for."""
    by_kind: dict[str, list[service_pb2.LegalMove]] = {}
    for move in moves:
        by_kind.setdefault(move_kind(move), []).append(move)
    if "next_round" in by_kind:
        return by_kind["next_round"][0]
    game = moves[0].command.WhichOneof("game") if moves else "hoola"
    if game == "koikoi":
        return _choose_koikoi(moves, by_kind, rng)
    if game == "gin":
        return _choose_gin(moves, by_kind, rng)
    if game == "rummy":
        return _choose_rummy(moves, by_kind, rng)
    return _choose_hoola(moves, by_kind, rng)


def _choose_rummy(
    moves: list[service_pb2.LegalMove],
    by_kind: dict[str, list[service_pb2.LegalMove]],
    rng: random.Random,
) -> service_pb2.LegalMove:
    """Meld and lay off whenever it can (the biggest first), else draw, then shed high cards."""
    for kind in ("lay_down", "take_discard", "swap_joker", "lay_off"):
        if kind in by_kind and rng.random() < 0.9:
            return max(by_kind[kind], key=lambda m: (len(str(m.command)), rng.random()))
    if "draw_stock" in by_kind:
        return by_kind["draw_stock"][0]
    if "discard" in by_kind:
        order = "23456789TJQKA"
        return max(
            by_kind["discard"],
            key=lambda m: (
                m.command.rummy.discard.card.startswith("JK"),
                order.find(m.command.rummy.discard.card[0]) + rng.random() * 6,
            ),
        )
    return rng.choice(moves)


def _choose_gin(
    moves: list[service_pb2.LegalMove],
    by_kind: dict[str, list[service_pb2.LegalMove]],
    rng: random.Random,
) -> service_pb2.LegalMove:
    """Knock when it may, lay off what it can, take the discard now and then, shed high cards."""
    for kind in ("knock", "lay_off"):
        if kind in by_kind and rng.random() < 0.9:
            return rng.choice(by_kind[kind])
    if "draw_discard" in by_kind and rng.random() < 0.3:
        return by_kind["draw_discard"][0]
    for kind in ("draw_stock", "end_lay_offs", "pass"):
        if kind in by_kind:
            return by_kind[kind][0]
    if "discard" in by_kind:
        order = "A23456789TJQK"
        return max(
            by_kind["discard"],
            key=lambda m: order.index(m.command.gin.discard.card[0]) + rng.random() * 6,
        )
    return rng.choice(moves)


def _choose_koikoi(
    moves: list[service_pb2.LegalMove],
    by_kind: dict[str, list[service_pb2.LegalMove]],
    rng: random.Random,
) -> service_pb2.LegalMove:
    """Capture when it can; shobu more often than koi-koi."""
    if "shobu" in by_kind:
        return by_kind["shobu" if rng.random() < 0.7 else "koi_koi"][0]
    captures = [m for m in moves if ", capture" in m.label or m.label.startswith("Capture")]
    return rng.choice(captures if captures and rng.random() < 0.8 else moves)


def _choose_hoola(
    moves: list[service_pb2.LegalMove],
    by_kind: dict[str, list[service_pb2.LegalMove]],
    rng: random.Random,
) -> service_pb2.LegalMove:
    """Declare or stop when it may, meld big, lay off, discard high."""
    if "next_round" in by_kind:
        return by_kind["next_round"][0]
    if "play" in by_kind and ("sit_out" not in by_kind or rng.random() < 0.8):
        return by_kind["play"][0]
    if "declare" in by_kind:
        return by_kind["declare"][0]
    if "stop" in by_kind and rng.random() < 0.6:
        return by_kind["stop"][0]
    if "thank_you" in by_kind and rng.random() < 0.5:
        return rng.choice(by_kind["thank_you"])
    if "draw" in by_kind:
        return by_kind["draw"][0]
    if "meld" in by_kind and rng.random() < 0.8:
        return max(by_kind["meld"], key=lambda m: (len(m.command.hoola.meld.cards), rng.random()))
    if "lay_off" in by_kind and rng.random() < 0.8:
        return rng.choice(by_kind["lay_off"])
    if "discard" in by_kind:
        order = "A23456789TJQK"
        return max(
            by_kind["discard"],
            key=lambda m: order.index(m.command.hoola.discard.card[0]) + rng.random() * 4,
        )
    return rng.choice(moves)


def _claimant(
    stub: service_pb2_grpc.GameServiceStub,
    game_id: str,
    tokens: list[str],
    turn: int,
    rng: random.Random,
) -> int:
    """A seat other than ``turn`` that may claim the discard now, else ``turn``."""
    others = [s for s in range(len(tokens)) if s != turn]
    rng.shuffle(others)
    for seat in others:
        legal = stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game_id), metadata=auth(tokens[seat])
        )
        if legal.moves:
            return seat
    return turn


def _require_a_player(seats: int, idle_seats: Collection[int]) -> None:
    """Refuse a table whose every seat is idle: nobody would play it, the clock alone would."""
    if all(seat in idle_seats for seat in range(seats)):
        raise ValueError(
            "at least one seat must play: a table of idle seats only is played by the clock alone"
        )


def play_game(
    channel: grpc.Channel,
    *,
    studio: str,
    seats: int = 3,
    preset: str = "",
    rng: random.Random | None = None,
    client_seed: str = "",
    on_move: Callable[[int, str], None] | None = None,
    overrides: service_pb2.Rules | None = None,
    max_moves: int = MAX_MOVES,
    max_rounds: int = 3,
    kind: common_pb2.GameKind.ValueType = common_pb2.GAME_KIND_HOOLA,
    players: Sequence[str] = (),
    claims: bool = False,
    on_created: Callable[[service_pb2.CreateGameResponse], None] | None = None,
    idle_seats: Collection[int] = (),
    on_tick: Callable[[list[service_pb2.GameEvent]], None] | None = None,
) -> GameResult:
    """Create a game of ``kind`` (``studio`` is the studio credential CreateGame takes) and play
    it to the end; returns its last round's settlement.

    Between rounds the bots deal the next round; an open-ended Hoola table (``rounds = 0``, the
    default) is left, which closes it, after ``max_rounds``. With ``claims``, seats out of turn
    take discards by battle-Hoola claims when they may, and the seat to act waits out an open
    claim window. ``on_created`` is called with the new game before the first move (to watch it,
    say).

    ``idle_seats`` never send a command: the game's turn clock (``overrides`` with a
    ``turn_time_ms``, see :func:`clock_rules`) plays them. When only they are to act, the bots
    wait for the service to record the time-out (a ``StreamEvents`` wait, bounded by
    ``IDLE_WAIT_S``) and pass the events of what they waited for to ``on_tick``.

    A game still going after ``max_moves`` moves (or waits) raises :class:`MovesRanOut`.
    """
    # Refused before the game is created (finish_game refuses it too): `croupier demo` with every
    # seat idle said so, but only after creating a game that the service's clock then played
    # alone to its end, for nobody. An unset count (0, the game's default) is known only once
    # the game is made: finish_game checks it then.
    if seats:
        _require_a_player(seats, idle_seats)
    rng = rng or random.Random()
    stub = service_pb2_grpc.GameServiceStub(channel)
    created = stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=kind,
            preset=preset,
            seats=seats,
            client_seeds=[client_seed] if client_seed else [],
            overrides=overrides,
            players=players,
        ),
        metadata=auth(studio),
    )
    if on_created is not None:
        on_created(created)
    return finish_game(
        channel,
        created.game_id,
        [t.token for t in created.tokens],
        rng,
        on_move,
        max_moves,
        max_rounds,
        claims,
        idle_seats,
        on_tick,
    )


def _events(
    stub: service_pb2_grpc.GameServiceStub,
    game_id: str,
    token: str,
    after: int,
    until: int | None = None,
) -> list[service_pb2.GameEvent]:
    """The events after version ``after`` up to ``until`` (recorded already), as ``token``'s
    seat sees them; without ``until``, wait for the first one (only idle seats are to act: the
    service's clock will record it). One stream, bounded by ``IDLE_WAIT_S``: the bots never
    spin on GetView."""
    stream = stub.StreamEvents(
        service_pb2.StreamEventsRequest(game_id=game_id, after_version=after),
        metadata=auth(token),
        timeout=IDLE_WAIT_S,
    )
    events: list[service_pb2.GameEvent] = []
    try:
        events.append(next(stream).event)
        while until is not None and events[-1].version < until:
            events.append(next(stream).event)
    except grpc.RpcError as error:
        if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise ClockStalled(
                f"game {game_id}: only idle seats were to act at version {after} and the "
                f"service's clock did not play them within {IDLE_WAIT_S:.0f} s"
            ) from None
        raise
    except StopIteration:  # the game ended and the server closed the stream
        pass
    finally:
        stream.cancel()
    return events


def finish_game(
    channel: grpc.Channel,
    game_id: str,
    tokens: Sequence[str],
    rng: random.Random | None = None,
    on_move: Callable[[int, str], None] | None = None,
    max_moves: int = MAX_MOVES,
    max_rounds: int = 3,
    claims: bool = False,
    idle_seats: Collection[int] = (),
    on_tick: Callable[[list[service_pb2.GameEvent]], None] | None = None,
) -> GameResult:
    """Play the game ``game_id`` (whatever state it is in, one token per seat) to the end, as
    :func:`play_game` does (``idle_seats``, ``on_tick`` and :class:`MovesRanOut` too)."""
    rng = rng or random.Random()
    stub = service_pb2_grpc.GameServiceStub(channel)
    tokens = list(tokens)
    seats = len(tokens)
    idle = frozenset(idle_seats)
    active = [s for s in range(seats) if s not in idle]
    _require_a_player(seats, idle)
    viewer = tokens[active[0]]
    # Forced moves are shown as the first idle seat sees them (its own draws too).
    watcher = tokens[min(idle)] if idle else viewer
    moves = waits = 0
    seen: int | None = None  # the version up to which what time made due was reported

    def catch_up(version: int) -> None:
        """Report what time made due up to ``version`` (recorded), before the next move."""
        nonlocal seen
        if on_tick is None:
            return
        if seen is not None and version > seen:
            recorded = _events(stub, game_id, watcher, seen, version)
            ticks = [e for e in recorded if e.command_id.startswith(TICK_PREFIX)]
            if ticks:
                on_tick(ticks)
        seen = version if seen is None else max(seen, version)

    while True:
        view = stub.GetView(service_pb2.GetViewRequest(game_id=game_id), metadata=auth(viewer))
        catch_up(view.version)
        if view.finished:
            break
        if moves >= max_moves or waits >= max_moves:
            # Said here, rather than met as GetSettlement's "the game is not over yet".
            raise MovesRanOut(
                f"game {game_id} is still going after {moves} moves and {waits} waits "
                f"(version {view.version})"
            )
        game = _oneof(view.view, "game")
        phase = game.DESCRIPTOR.fields_by_name["phase"].enum_type.values_by_number[game.phase].name
        between_rounds = phase.endswith(("_ROUND_OVER", "_HAND_OVER"))
        seat = rng.randrange(seats) if between_rounds else game.turn
        if claims and not between_rounds and rng.random() < 0.5:
            seat = _claimant(stub, game_id, tokens, seat, rng)
        if seat in idle and seat != game.turn and not between_rounds:
            seat = game.turn  # an idle seat claims nothing
        if seat in idle:
            if between_rounds:  # any seat may deal the next round: one that plays does
                seat = rng.choice(active)
            else:
                # Only an idle seat is to act: its clock runs out and the service plays it (what
                # it recorded is reported as the loop looks again).
                _events(stub, game_id, watcher, view.version)
                waits += 1
                continue
        legal = stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game_id), metadata=auth(tokens[seat])
        )
        if not legal.moves:  # a claim window is open: the seat to act waits for it to close
            time.sleep(0.05)
            continue
        catch_up(legal.version)
        move = choose(list(legal.moves), rng)
        # Leaving closes the table (LeaveTable; CloseTable is its older form, kept for old games).
        closing = [m for m in legal.moves if move_kind(m) == "leave_table"] or [
            m for m in legal.moves if move_kind(m) == "close_table"
        ]
        if between_rounds and closing and game.round >= max_rounds:
            move = closing[0]
        try:
            answer = stub.SubmitCommand(
                service_pb2.SubmitCommandRequest(
                    game_id=game_id,
                    command_id=uuid.uuid4().hex,
                    expected_version=legal.version,
                    command=move.command,
                ),
                metadata=auth(tokens[seat]),
            )
        except grpc.RpcError as error:
            # The game moved on between our look and our command: time recorded something (a
            # turn's time-out, a battle claim window's close), as the service does without any
            # client. ABORTED says so: look again, as every client should.
            if error.code() != grpc.StatusCode.ABORTED:
                raise
            continue
        moves += 1
        if on_move is not None:
            on_move(seat, move.label)
        if seen is not None and answer.events and answer.events[0].version == seen + 1:
            seen = answer.version  # the bots' own command: nothing made due before it
    final = stub.GetSettlement(
        service_pb2.GetSettlementRequest(game_id=game_id, final=True),
        metadata=auth(tokens[0]),
    ).settlement
    replay = stub.GetReplay(service_pb2.GetReplayRequest(game_id=game_id))
    bodies = [_oneof(e.body, "body") for e in replay.events]
    rounds = [
        getattr(b, b.WhichOneof("event")).settlement
        for b in bodies
        if b.DESCRIPTOR.oneofs and b.WhichOneof("event") in ("round_ended", "hand_ended")
    ]
    # The last round's; a game that ended before any round did (a forfeit, or a table nobody
    # attended, at its first turns) has only its final settlement.
    settlement = (
        stub.GetSettlement(
            service_pb2.GetSettlementRequest(game_id=game_id), metadata=auth(tokens[0])
        ).settlement
        if rounds
        else final
    )
    return GameResult(
        game_id, seats, settlement, moves, replay.events[-1].version, tokens, rounds, final
    )
