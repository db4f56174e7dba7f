"""Bots that play Hoola through the gRPC contract: the ``demo`` command and the service tests."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc


@dataclass
class GameResult:
    game_id: str
    seats: int
    settlement: common_pb2.Settlement
    moves: int
    version: int
    tokens: list[str] = field(default_factory=list)

    def describe(self) -> str:
        s = self.settlement
        lines = [f"game {self.game_id}: {s.outcome} after {self.moves} moves "
                 f"(version {self.version}); winner(s): {', '.join(f'seat {w}' for w in s.winners)}"]
        lines += [f"  note: {n}" for n in s.notes]
        for line in s.lines:
            factors = " × ".join(f"{f.name} {f.value}" for f in line.factors)
            lines.append(f"  seat {line.payer} → seat {line.payee}: {line.amount}   ({factors})")
            lines += [f"      {f.name} {f.value}: {f.reason}" for f in line.factors]
        lines.append("  net: " + ", ".join(f"seat {i} {n:+d}" for i, n in enumerate(s.net)))
        return "\n".join(lines)


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def choose(moves: list[service_pb2.LegalMove], rng: random.Random) -> service_pb2.LegalMove:
    """A plausible move: declare or stop when it may, meld big, lay off, discard high."""
    def kind(m: service_pb2.LegalMove) -> str:
        return m.command.hoola.WhichOneof("move") or ""

    by_kind: dict[str, list[service_pb2.LegalMove]] = {}
    for move in moves:
        by_kind.setdefault(kind(move), []).append(move)
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
        return max(by_kind["discard"], key=lambda m: (order.index(m.command.hoola.discard.card[0])
                                                       + rng.random() * 4))
    return rng.choice(moves)


def play_game(channel: grpc.Channel, seats: int = 3, preset: str = "korean",
              rng: random.Random | None = None, client_seed: str = "",
              on_move: Callable[[int, str], None] | None = None,
              overrides: service_pb2.Rules | None = None,
              max_moves: int = 2000) -> GameResult:
    """Create a Hoola game and play it to the end; returns its settlement."""
    rng = rng or random.Random()
    stub = service_pb2_grpc.GameServiceStub(channel)
    created = stub.CreateGame(service_pb2.CreateGameRequest(
        kind=common_pb2.GAME_KIND_HOOLA, preset=preset, seats=seats,
        client_seeds=[client_seed] if client_seed else [], overrides=overrides))
    tokens = [t.token for t in created.tokens]
    moves = 0
    while moves < max_moves:
        view = stub.GetView(service_pb2.GetViewRequest(game_id=created.game_id),
                            metadata=auth(tokens[0]))
        if view.finished:
            break
        seat = view.view.hoola.turn
        legal = stub.ListLegalMoves(service_pb2.ListLegalMovesRequest(game_id=created.game_id),
                                    metadata=auth(tokens[seat]))
        move = choose(list(legal.moves), rng)
        stub.SubmitCommand(service_pb2.SubmitCommandRequest(
            game_id=created.game_id, command_id=uuid.uuid4().hex,
            expected_version=legal.version, command=move.command), metadata=auth(tokens[seat]))
        moves += 1
        if on_move is not None:
            on_move(seat, move.label)
    settlement = stub.GetSettlement(service_pb2.GetSettlementRequest(game_id=created.game_id),
                                    metadata=auth(tokens[0])).settlement
    replay = stub.GetReplay(service_pb2.GetReplayRequest(game_id=created.game_id))
    return GameResult(created.game_id, seats, settlement, moves, replay.events[-1].version, tokens)
