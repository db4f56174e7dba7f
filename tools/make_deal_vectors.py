"""Write the deal vectors the TypeScript client's check of the deal is held to
(tests/golden/deal_vectors.json, read by clients/typescript/test/dealcheck.test.ts):

    .venv/bin/python tools/make_deal_vectors.py tests/golden/deal_vectors.json

Each vector is a game as its seats received it: the events a deal's check reads (the game's first
event, every deal, the revealed seed) in protobuf's JSON mapping, once complete (every hand and
the stock: what every seat is sent once the game is over) and once per seat and for a spectator
as sent during play (the other hands and the stock hidden by the engine's ``redact``, the call the
service makes for each copy, app/core.py). The games are the compatibility corpus's
(replays/corpus/, recorded by the service, verified by tests/replays/test_corpus.py): every kind,
first dealers drawn and, in games recorded before ``first_dealer_drawn``, read off the deck's last
card, Hoola's jokers, seven seats. The corpus has no Koi-Koi round dealt again (one deal in about
230 is), so one more vector is the start of a Koi-Koi match as the engine makes it for CreateGame
(``start``) from a server seed whose first round needed a redeal, with that seed revealed.

Also written: each kind's options added later (``engine.shared.ADDED_LATER``) with the value a
game's first event means by leaving one out (records write them only when not their default).

tests/test_deal_vectors.py checks that the committed file is what this writes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from croupier.contract.bindings import BINDINGS, KOIKOI, GameBinding
from croupier.engine.koikoi import deal as koikoi_deal
from croupier.engine.koikoi.rules import KoiKoiRules
from croupier.engine.shuffle import Seeds
from croupier.replays.format import load
from croupier.v1 import service_pb2

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "replays" / "corpus" / "log-format-2"
#: The corpus games made vectors: name → what it brings.
GAMES = {
    "gin-standard": "three hands; the first dealer's draw tied once",
    "koikoi-nintendo-3": "three rounds; the first dealer drawn by month",
    "hoola-korean-first-dealer-drawn": "five seats, two rounds; the first dealer drawn",
    "hoola-international-corners": "two jokers, three rounds; the dealer read off the last card",
    "hoola-korean-sit-out-7": "seven seats; the dealer read off the last card",
    "rummy-standard-first-dealer-drawn": "three seats; the first dealer drawn",
    "rummy-standard": "four seats; the dealer read off the last card",
}
#: The Koi-Koi vector's client seed, and the server seeds tried for a redeal: sha256 of this and a
#: counter (the first that needs one is taken; about one in 230 does).
REDEAL_CLIENT_SEED = "deal vectors"
REDEAL_SEED_LABEL = b"croupier deal vectors: koikoi redeal "
REDEAL_SEARCH_LIMIT = 20_000
#: The GameEvent fields a copy keeps: a check of the deal reads no more (a complete copy's payload,
#: command and chain hashes would only make the file larger).
KEPT_FIELDS = ("version", "body", "redacted")


def _message(event: service_pb2.GameEvent) -> dict[str, Any]:
    """One event in protobuf's JSON mapping (the JSON names: what fromJson reads)."""
    kept = service_pb2.GameEvent(version=event.version, body=event.body, redacted=event.redacted)
    document = json_format.MessageToDict(kept)
    return {key: document[key] for key in KEPT_FIELDS if key in document}


def _read(binding: GameBinding, events: Iterable[service_pb2.GameEvent]) -> list[Any]:
    """The events a deal's check reads: the first, every deal, the revealed seed."""
    wanted = []
    for event in events:
        case = event.body.WhichOneof("body")
        if case == "seed_revealed":
            wanted.append(event)
            continue
        inner = getattr(event.body, binding.field).WhichOneof("event")
        if event.version == 1 or inner in ("round_dealt", "hand_dealt"):
            wanted.append(event)
    return wanted


def _copy(
    binding: GameBinding, events: list[service_pb2.GameEvent], seat: int | None
) -> list[dict[str, Any]]:
    """``seat``'s copy as sent during play (``None``: a spectator's): each event the engine
    redacts for it carries the redacted body and ``redacted``, as the service sends it."""
    copy = []
    for event in events:
        if event.body.WhichOneof("body") != binding.field:
            copy.append(_message(event))
            continue
        engine_event = binding.event_from_body(event.body)
        shown = binding.game.redact(engine_event, seat)
        if shown == engine_event:
            copy.append(_message(event))
        else:
            copy.append(
                _message(
                    service_pb2.GameEvent(
                        version=event.version, body=binding.event_to_body(shown), redacted=True
                    )
                )
            )
    return copy


def _vector(
    name: str, about: str, binding: GameBinding, seats: int, events: list[service_pb2.GameEvent]
) -> dict[str, Any]:
    read = _read(binding, events)
    copies = {"complete": [_message(e) for e in read], "spectator": _copy(binding, read, None)}
    for seat in range(seats):
        copies[f"seat {seat}"] = _copy(binding, read, seat)
    return {"name": name, "about": about, "kind": binding.field, "seats": seats, "copies": copies}


def _corpus_vector(name: str, about: str) -> dict[str, Any]:
    replay = load(CORPUS / f"{name}.replay")
    binding = BINDINGS[replay.header.kind]
    vector = _vector(name, about, binding, replay.header.seats, list(replay.events))
    return {**vector, "source": f"replays/corpus/log-format-2/{name}.replay"}


def _redealt_koikoi() -> dict[str, Any]:
    """A Koi-Koi match's start (the engine's, as CreateGame records it) whose first round was
    dealt again, and its seed revealed."""
    for counter in range(REDEAL_SEARCH_LIMIT):
        seed = hashlib.sha256(REDEAL_SEED_LABEL + str(counter).encode()).digest()
        seeds = Seeds(seed, (REDEAL_CLIENT_SEED,))
        if koikoi_deal.deal(seeds, 1, None).redeals:
            break
    else:  # pragma: no cover - one seed in 230 needs a redeal
        raise AssertionError("no Koi-Koi redeal found")
    started = KOIKOI.game.start(KoiKoiRules(), 2, seeds)
    events = [
        service_pb2.GameEvent(version=number, body=KOIKOI.event_to_body(event))
        for number, event in enumerate(started, start=1)
    ]
    events.append(
        service_pb2.GameEvent(
            version=len(events) + 1,
            body=service_pb2.EventBody(
                seed_revealed=service_pb2.SeedRevealed(server_seed=seed.hex())
            ),
        )
    )
    about = "a Koi-Koi match's first round dealt again (the engine's start, then the seed)"
    return _vector("koikoi-redealt", about, KOIKOI, 2, events)


def added_later_defaults() -> dict[str, dict[str, Any]]:
    """Each kind's options added later and what a record that leaves one out means: its
    default (records write such an option only when it is not its default)."""
    return {
        binding.field: {
            option.name: option.default
            for option in dataclasses.fields(binding.rules_cls)
            if option.metadata.get("added_later")
        }
        for binding in BINDINGS.values()
    }


def vectors() -> dict[str, Any]:
    """The whole file's content."""
    return {
        "added_later": added_later_defaults(),
        "games": [_corpus_vector(name, about) for name, about in GAMES.items()]
        + [_redealt_koikoi()],
    }


def dumps(content: dict[str, Any]) -> str:
    """The file's text: an event a line (compact), the rest indented."""

    def compact(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def copy_lines(name: str, copy: list[Any]) -> str:
        events = ",\n".join("    " + compact(event) for event in copy)
        return "   " + compact(name) + ": [\n" + events + "\n   ]"

    games = []
    for game in content["games"]:
        head = compact({key: value for key, value in game.items() if key != "copies"})
        copies = ",\n".join(copy_lines(name, copy) for name, copy in game["copies"].items())
        games.append("  {" + head[1:-1] + ',\n   "copies": {\n' + copies + "\n  }}")
    return (
        '{\n "added_later": '
        + compact(content["added_later"])
        + ',\n "games": [\n'
        + ",\n".join(games)
        + "\n ]\n}\n"
    )


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    Path(argv[1]).write_text(dumps(vectors()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
