"""The standalone verifier: standard library only, both forms of a replay, and it catches what a
third party must catch — in the hashed bytes, in the decoded copies a person reads, in the header
and the footer, in every deck (deals, rebuilt stocks, Hoola's sit-out stock)."""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

from croupier.app.tokens import KeyRing, TokenSigner, mint_studio_token
from croupier.replays.format import Replay, build, from_json, load, to_binary, to_json
from croupier.service.bots import auth
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, hoola_pb2, rummy_pb2, service_pb2, service_pb2_grpc

from .conftest import GAMES, remake_chain

REPLAYS = Path(__file__).resolve().parents[2] / "replays"
STANDALONE = REPLAYS / "standalone_verify.py"
CORPUS = sorted((REPLAYS / "corpus").rglob("*.replay"))
#: The last line of a file that verifies, run without a key (as every test here runs it): consistent,
#: not authenticated (tests/replays/test_signing.py has the line with a key).
VERIFIED = (
    "verified, not authenticated: chain, seed, header, decoded copies, decks and footer "
    "settlements hold"
)
CHECK_FAILED, NOT_A_REPLAY = 1, 2


def run_file(path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    # A bare interpreter, isolated from site-packages and the environment: nothing of Croupier.
    return subprocess.run(
        [sys.executable, "-I", "-S", str(STANDALONE), *options, str(path)],
        capture_output=True,
        text=True,
        cwd=path.parent,
    )


def run(tmp_path: Path, replay: Replay | dict, form: str = "json") -> subprocess.CompletedProcess:
    """The verifier on ``replay`` written in ``form`` (a dict is written as the JSON it is)."""
    if isinstance(replay, dict):
        path = tmp_path / "game.json"
        path.write_text(json.dumps(replay))
    elif form == "json":
        path = tmp_path / "game.json"
        path.write_text(to_json(replay))
    else:
        path = tmp_path / "game.replay"
        path.write_bytes(to_binary(replay))
    return run_file(path)


def failed(result: subprocess.CompletedProcess, message: str) -> bool:
    """The verifier failed a check with one line that starts with ``message``."""
    lines = result.stdout.splitlines()
    assert result.returncode == CHECK_FAILED and not result.stderr, result.stdout + result.stderr
    assert len(lines) == 1 and lines[0].startswith("FAIL " + message), result.stdout
    return True


def copy(replay: Replay) -> Replay:
    return from_json(to_json(replay))


def forge_payload(
    replay: Replay, index: int, change: Callable[[service_pb2.EventBody], None]
) -> None:
    """Change event ``index``'s hashed payload (and its decoded copy to match), then re-hash the
    chain: everything a forger with the database and the seed could make consistent."""
    event = replay.events[index]
    body = service_pb2.EventBody.FromString(event.payload)
    change(body)
    event.payload = body.SerializeToString(deterministic=True)
    event.body.CopyFrom(body)
    remake_chain(replay)


def first(replay: Replay, event_type: str) -> int:
    return next(i for i, e in enumerate(replay.events) if e.type == event_type)


def swap_first_two(cards) -> None:  # a repeated Card field
    a, b = type(cards[0])(), type(cards[0])()
    a.CopyFrom(cards[0])
    b.CopyFrom(cards[1])
    cards[0].CopyFrom(b)
    cards[1].CopyFrom(a)


# --- what it is -----------------------------------------------------------------------------------


def test_it_imports_only_the_standard_library() -> None:
    tree = ast.parse(STANDALONE.read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    # cryptography, for Ed25519, only inside the signature's check, which --public-key asks for:
    # without it, the verifier runs on a bare interpreter all the same.
    assert imported <= set(sys.stdlib_module_names) | {"__future__", "cryptography"}, imported
    at_the_top = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else node.names[0].name
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
    }
    assert not any(name.startswith("cryptography") for name in at_the_top), at_the_top


def test_help(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-I", "-S", str(STANDALONE), "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout.startswith("usage: standalone_verify.py")
    assert "does not re-play the rules" in result.stdout and "Exit status" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (bytes(range(256)) * 80, "record 1"),  # 20 KB of binary garbage
        (b"\x09nonsense", "record 1 is cut off"),
        (b"", "a replay starts with its header"),
        (b"{not json", "not JSON"),
        (b'{"header": {}, "events": [], "footer": {}, "x": 1}', "not {"),
        (b'{"header": {"seats": "three"}, "events": [], "footer": {}}', "header.seats"),
        (b'{"header": {"format_version": 2}, "events": [], "footer": {}}', "header: format"),
        (b'{"header": ' + b"[" * 100_000, "not JSON"),
        ("é".encode("latin-1") * 500, "record 1"),
        (b'{"header": {"seats": 2, "seats": 3}, "events": [], "footer": {}}', "not JSON"),
        (b"[1, 2]", "not {"),
        (b"\x80", "record 1: its length: a varint is cut off"),
        (b"\x80\x00", "record 1: its length: a varint not in its shortest form"),
    ],
    ids=[
        "garbage",
        "cut-off",
        "empty",
        "bad-json",
        "extra-part",
        "wrong-type",
        "format-2",
        "deep",
        "latin-1",
        "a-name-twice",
        "an-array",
        "length-cut-off",
        "length-too-long",
    ],
)
def test_what_is_not_a_replay_gets_one_line_and_status_2(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "garbage.replay"
    path.write_bytes(content)
    result = run_file(path)
    assert result.returncode == NOT_A_REPLAY, result.stdout + result.stderr
    assert not result.stderr and len(result.stdout.splitlines()) == 1
    assert result.stdout.startswith(f"not a replay: {message}"), result.stdout
    assert len(result.stdout) < 400
    missing = run_file(tmp_path / "missing.replay")
    assert missing.returncode == NOT_A_REPLAY and "No such file" in missing.stdout


# --- what verifies --------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["json", "binary"])
@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_recorded_game_verifies(replays, tmp_path: Path, name: str, form: str) -> None:
    result = run(tmp_path, replays[name], form)
    assert result.returncode == 0, result.stdout + result.stderr
    assert VERIFIED in result.stdout
    assert f"({'JSON' if form == 'json' else 'binary'})" in result.stdout
    deals = int(result.stdout.split("decks: ")[1].split(" ")[0])
    assert deals >= 1


@pytest.mark.parametrize("name", sorted(GAMES))
def test_a_json_replay_with_protobuf_s_json_names_verifies(
    replays, tmp_path: Path, name: str
) -> None:
    """A JSON replay written with protobuf's default JSON names (``serverSeed``, as a studio's
    client in another language writes the messages it was given) reads as `croupier replay
    verify` reads it (the standalone verifier said "ReplayHeader has no field 'gameId'"), and a
    field given by both its names is not a replay."""
    replay = replays[name]
    camel = {
        "header": json_format.MessageToDict(replay.header),
        "events": [json_format.MessageToDict(e) for e in replay.events],
        "footer": json_format.MessageToDict(replay.footer),
    }
    assert "gameId" in camel["header"] and "serverSeed" in camel["footer"]
    result = run(tmp_path, camel)
    assert result.returncode == 0 and VERIFIED in result.stdout, result.stdout + result.stderr
    camel["footer"]["server_seed"] = camel["footer"]["serverSeed"]
    twice = run(tmp_path, camel)
    assert twice.returncode == NOT_A_REPLAY and "server_seed is given twice" in twice.stdout + (
        twice.stderr
    ), twice.stdout + twice.stderr


def test_a_json_replay_saved_with_a_byte_order_mark_verifies(replays, tmp_path: Path) -> None:
    """Editors on some systems write a UTF-8 text file with a byte order mark first."""
    path = tmp_path / "game.json"
    path.write_bytes(b"\xef\xbb\xbf" + to_json(replays["gin"]).encode())
    result = run_file(path)
    assert result.returncode == 0 and VERIFIED in result.stdout, result.stdout + result.stderr
    assert "(JSON)" in result.stdout


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(REPLAYS / "corpus")))
def test_every_corpus_file_verifies_in_both_forms(path: Path, tmp_path: Path) -> None:
    binary = run_file(path)
    assert binary.returncode == 0 and VERIFIED in binary.stdout, binary.stdout + binary.stderr
    as_json = tmp_path / f"{path.stem}.json"
    as_json.write_text(to_json(load(path)))
    result = run_file(as_json)
    assert result.returncode == 0 and VERIFIED in result.stdout, result.stdout + result.stderr
    # The same checks held, whichever the form.
    assert result.stdout.replace("(JSON)", "(binary)") == binary.stdout
    if "sit-out" in path.stem:
        assert "1 sit-out shuffle(s)" in binary.stdout


# --- the chain and the seed -----------------------------------------------------------------------


def test_a_tampered_event_or_seed_is_caught(replays, tmp_path: Path) -> None:
    document = json.loads(to_json(replays["koikoi"]))
    document["events"][3]["command_id"] = "forged"
    assert failed(run(tmp_path, document), "event 4: hash")
    document = json.loads(to_json(replays["koikoi"]))
    document["footer"]["server_seed"] = "00" * 32
    assert failed(run(tmp_path, document), "the revealed server seed does not open")
    assert run(tmp_path, {"nothing": 1}).returncode == NOT_A_REPLAY


def test_a_forged_string_cannot_forge_a_line_of_output(replays, tmp_path: Path) -> None:
    """A failure may quote the file's own strings: their line breaks are shown escaped, so a file
    cannot print a "verified" line of its own under the failure."""
    document = json.loads(to_json(replays["gin"]))
    document["events"][1]["prev_hash"] = "00\n" + VERIFIED
    result = run(tmp_path, document)
    assert failed(result, "event 2: prev_hash 00\\n" + VERIFIED)


def test_a_deck_dealt_from_another_seed_is_caught(replays, tmp_path: Path) -> None:
    """A server that dealt from another seed than it committed to, and forged the header and the
    footer to match, and re-hashed the chain with it, is caught: the game's first event (in the
    chain) holds the real commitment."""
    replay = copy(replays["gin"])
    other = bytes(range(32))
    replay.footer.server_seed = other.hex()
    replay.header.commitment = hashlib.sha256(other).hexdigest()
    remake_chain(replay)
    for form in ("json", "binary"):
        assert failed(run(tmp_path, replay, form), "header.commitment reads")


def test_a_footer_seed_other_than_the_revealed_one_is_caught(replays, tmp_path: Path) -> None:
    """The SeedRevealed event (in the chain) holds the seed: the footer must name the same."""
    replay = copy(replays["rummy"])
    forge_payload(replay, -1, lambda body: setattr(body.seed_revealed, "server_seed", "ab" * 32))
    assert failed(run(tmp_path, replay), "footer.server_seed reads")


# --- the decoded copies ---------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["json", "binary"])
def test_a_tampered_card_in_a_decoded_body_is_caught(replays, tmp_path: Path, form: str) -> None:
    """The chain covers ``payload``; a person reads ``body``. A rank changed in the body (and
    nothing else) is named, with what the hashed bytes hold."""
    replay = copy(replays["rummy"])
    deal = first(replay, "RoundDealt")
    cards = replay.events[deal].body.rummy.round_dealt.hands[0].cards
    # A joker's rank is 0, which the payload leaves out ("holds nothing"): a ranked card.
    at, card = next((i, c) for i, c in enumerate(cards) if c.rank)
    real = card.rank
    card.rank = real % 13 + 1
    result = run(tmp_path, replay, form)
    assert failed(
        result, f"event {deal + 1}: body.rummy.round_dealt.hands[0].cards[{at}].rank reads"
    )
    assert result.stdout.rstrip().endswith(f"but the hashed payload holds {real}")


def test_a_seed_changed_near_its_end_is_shown_where_it_differs(replays, tmp_path: Path) -> None:
    """A revealed seed (64 hex characters) changed in its 61st: both texts are shown from a
    little before the difference (before: both cut off at their 57th character, alike)."""
    replay = copy(replays["gin"])
    [at] = [i for i, e in enumerate(replay.events) if e.body.WhichOneof("body") == "seed_revealed"]
    seed = replay.events[at].body.seed_revealed.server_seed
    changed = seed[:60] + ("0" if seed[60] != "0" else "1") + seed[61:]
    replay.events[at].body.seed_revealed.server_seed = changed
    result = run(tmp_path, replay, "binary")
    assert failed(result, f"event {at + 1}: body.seed_revealed.server_seed reads")
    tail = f'"…{changed[40:]}", but the hashed payload holds "…{seed[40:]}"'
    assert result.stdout.rstrip().endswith(tail), result.stdout


def test_every_kind_of_edit_to_a_json_body_is_caught(replays, tmp_path: Path) -> None:
    """A field added, removed, changed in type or in value, a card dropped or added."""
    document = json.loads(to_json(replays["hoola"]))
    deal = next(i for i, e in enumerate(document["events"]) if e["type"] == "RoundDealt")
    dealt = document["events"][deal]["body"]["hoola"]["round_dealt"]
    at = f"event {deal + 1}: body.hoola.round_dealt"
    edits: list[tuple[Callable[[dict], object], str]] = [
        (lambda d: d["hands"][1]["cards"][2].update(code="ZZ"), f"{at}.hands[1].cards[2].code"),
        (lambda d: d["hands"][0]["cards"].pop(), f"{at}.hands[0].cards (its length)"),
        (lambda d: d["stock"].append(d["stock"][0]), f"{at}.stock (its length)"),
        (lambda d: d.pop("upcard"), f"{at}.upcard reads nothing"),
        (lambda d: d.update(dealer=d.get("dealer", 0) + 1), f"{at}.dealer"),
        (lambda d: d.update(table_multiplier=2), f"{at}.table_multiplier reads 2"),
    ]
    for edit, message in edits:
        forged = json.loads(json.dumps(document))
        edit(forged["events"][deal]["body"]["hoola"]["round_dealt"])
        assert failed(run(tmp_path, forged), message)
    assert dealt and run(tmp_path, document).returncode == 0  # unedited, it verifies


def test_an_event_type_other_than_its_payload_is_caught(replays, tmp_path: Path) -> None:
    """The type is in the chain, but a log that names a deal a draw is not one to trust."""
    replay = copy(replays["gin"])
    deal = first(replay, "HandDealt")
    replay.events[deal].type = "CardDrawn"
    remake_chain(replay)
    assert failed(
        run(tmp_path, replay, "binary"),
        f"event {deal + 1}: type reads 'CardDrawn', but the hashed payload is a HandDealt",
    )


def test_a_tampered_decoded_command_is_caught(replays, tmp_path: Path) -> None:
    document = json.loads(to_json(replays["gin"]))
    number, event = next(
        (n, e)
        for n, e in enumerate(document["events"], 1)
        if "discard" in e.get("command", {}).get("gin", {})
    )
    event["command"]["gin"]["discard"]["card"] = (
        "KS" if event["command"]["gin"]["discard"]["card"] != "KS" else "QS"
    )
    assert failed(run(tmp_path, document), f"event {number}: command.gin.discard.card reads")
    # A command shown where none was recorded.
    document = json.loads(to_json(replays["gin"]))
    document["events"][1]["command"] = {"gin": {"pass": {}}}
    assert failed(run(tmp_path, document), "event 2: command reads a message")


# --- the header and the footer --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("seats", 4, "header.seats reads 4"),
        ("kind", "GAME_KIND_GIN", "header.kind reads 3"),
        ("client_seeds", ["another seed"], "header.client_seeds[0]"),
        ("engine_version", "0-forged", "header.engine_version"),
        ("rules", {"hoola": {"jokers": 2}}, "header.rules.hoola"),
        ("rules", {"gin": {}}, "header.rules.hoola reads nothing"),
        ("log_format", 9, "header: unknown log format 9"),
    ],
)
def test_a_tampered_header_is_caught(
    replays, tmp_path: Path, field: str, value: object, message: str
) -> None:
    document = json.loads(to_json(replays["hoola"]))
    if field == "rules" and "hoola" in value:  # one option changed, the others kept
        document["header"]["rules"]["hoola"]["jokers"] = 2
    else:
        document["header"][field] = value
    assert failed(run(tmp_path, document), message)


def test_a_tampered_clock_option_in_the_header_is_caught(replays, tmp_path: Path) -> None:
    """The clock options were added later: a first event leaves them out at their defaults, the
    header shows them; a header that shows another value than the default is caught."""
    document = json.loads(to_json(replays["gin"]))
    assert document["header"]["rules"]["gin"]["max_timeouts"] == 3
    assert run(tmp_path, document).returncode == 0
    document["header"]["rules"]["gin"]["max_timeouts"] = 5
    assert failed(run(tmp_path, document), "header.rules.gin.max_timeouts reads 5, but")


def test_a_tampered_footer_settlement_is_caught(replays, tmp_path: Path) -> None:
    replay = copy(replays["koikoi"])
    replay.footer.rounds[0].net[0] += 1
    assert failed(run(tmp_path, replay, "binary"), "footer.rounds[0].net[0] reads")
    replay = copy(replays["koikoi"])
    replay.footer.settlement.outcome = "forged"
    assert failed(run(tmp_path, replay), "footer.settlement.outcome reads")
    replay = copy(replays["koikoi"])
    del replay.footer.rounds[-1]
    assert failed(run(tmp_path, replay), "footer.rounds (its length)")


# --- the decks ------------------------------------------------------------------------------------


def test_a_rigged_deal_is_caught(replays, tmp_path: Path) -> None:
    """Swap two cards inside a deal's hashed bytes and re-hash the chain (as a forger with the
    database could): the chain holds, the deck does not."""
    replay = copy(replays["rummy"])

    def rig(body: service_pb2.EventBody) -> None:
        hands = body.rummy.round_dealt.hands
        a, b = hands[0].cards[0].code, hands[1].cards[0].code
        hands[0].cards[0].code, hands[1].cards[0].code = b, a

    forge_payload(replay, 1, rig)
    assert failed(run(tmp_path, replay), "event 2: the deal shuffle (round 1) differs")


@pytest.mark.parametrize("kind", ["hoola", "rummy", "hoola-recorded-before"])
def test_a_first_dealer_other_than_the_seeds_is_caught(replays, tmp_path: Path, kind: str) -> None:
    """Another first dealer, with the hands moved round so that the deck still reads the same, is
    caught: in Hoola and Rummy the dealer is drawn from the first-dealer shuffle
    (``first_dealer_drawn``); in Hoola games recorded before it, it was the rank of the deck's
    last card modulo the seats."""
    if kind == "hoola-recorded-before":
        replay = load(REPLAYS / "corpus" / "log-format-2" / "hoola-korean-sit-out-7.replay")
        said = "seat "
    else:
        replay = copy(replays[kind])
        said = "the first dealer's draws"
    game = kind.split("-")[0]
    deal = first(replay, "RoundDealt")
    seats = replay.header.seats

    def move_the_deal(body: service_pb2.EventBody) -> None:
        dealt = body.hoola.round_dealt if game == "hoola" else body.rummy.round_dealt
        dealt.dealer = (dealt.dealer + 1) % seats
        for hand in dealt.hands:
            hand.seat = (hand.seat + 1) % seats

    forge_payload(replay, deal, move_the_deal)
    assert failed(run(tmp_path, replay, "binary"), f"event {deal + 1}: {said}")


def test_a_rigged_sit_out_stock_is_caught(tmp_path: Path) -> None:
    replay = load(REPLAYS / "corpus" / "log-format-2" / "hoola-korean-sit-out-7.replay")
    began = first(replay, "PlayBegan")
    forge_payload(replay, began, lambda body: swap_first_two(body.hoola.play_began.stock))
    assert failed(
        run(tmp_path, replay, "binary"),
        f"event {began + 1}: the sit-out shuffle (round 1) differs from the committed seeds' at "
        "card 1",
    )


STUDIO = b"standalone-tests-studio-secret-0123456789"
#: Moves that keep a round going: draw and throw, never meld, stop or go out.
SLOW_MOVES = ("next_round", "play", "draw", "draw_stock", "discard")


def play_until_the_stock_is_rebuilt(
    stub: service_pb2_grpc.GameServiceStub,
    kind: common_pb2.GameKind.ValueType,
    preset: str,
    overrides: service_pb2.Rules,
) -> str:
    """A two-seat game whose seats only draw and discard, so the stock runs out and is rebuilt
    from the discards until the rules' limit ends the round; its game id."""
    created = stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=kind, preset=preset, seats=2, overrides=overrides, client_seeds=["slow"]
        ),
        metadata=auth(mint_studio_token(STUDIO, int(time.time()) + 3600)),
    )
    tokens = [t.token for t in created.tokens]
    for _ in range(2000):
        asked = [
            (
                seat,
                stub.ListLegalMoves(
                    service_pb2.ListLegalMovesRequest(game_id=created.game_id),
                    metadata=auth(tokens[seat]),
                ),
            )
            for seat in range(2)
        ]
        acting = [(seat, legal) for seat, legal in asked if legal.moves]
        if not acting:
            return created.game_id
        seat, legal = acting[0]
        by_kind = {}
        for move in legal.moves:
            game = getattr(move.command, move.command.WhichOneof("game"))
            by_kind.setdefault(game.WhichOneof("move"), move)
        move = by_kind[next(k for k in SLOW_MOVES if k in by_kind)]
        stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=created.game_id,
                command_id=uuid.uuid4().hex,
                expected_version=legal.version,
                command=move.command,
            ),
            metadata=auth(tokens[seat]),
        )
    raise AssertionError("the game did not end")


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Replay]]:
    """A Hoola round whose stock is rebuilt three times, a Rummy round's once."""
    url = f"sqlite:///{tmp_path_factory.mktemp('rebuilt') / 'games.sqlite3'}"
    store = open_store(url)
    server = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(b"standalone-tests-secret-0123456789abcd"),
        studio_keys=KeyRing(STUDIO),
    )
    port = server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = service_pb2_grpc.GameServiceStub(channel)
            games = {
                "hoola": play_until_the_stock_is_rebuilt(
                    stub,
                    common_pb2.GAME_KIND_HOOLA,
                    "korean",
                    service_pb2.Rules(
                        hoola=hoola_pb2.HoolaRules(reshuffle_discards=True, rounds=1)
                    ),
                ),
                "rummy": play_until_the_stock_is_rebuilt(
                    stub,
                    common_pb2.GAME_KIND_RUMMY,
                    "standard",
                    service_pb2.Rules(rummy=rummy_pb2.RummyRules(max_reshuffles=1)),
                ),
            }
        yield {name: build(store.game(g), store.read(g)) for name, g in games.items()}
    finally:
        server.stop(grace=None)
        store.close()


@pytest.mark.parametrize(("name", "count"), [("hoola", 3), ("rummy", 1)])
def test_rebuilt_stocks_verify(rebuilt, tmp_path: Path, name: str, count: int) -> None:
    for form in ("json", "binary"):
        result = run(tmp_path, rebuilt[name], form)
        assert result.returncode == 0, result.stdout
        assert f"{count} reshuffle(s)" in result.stdout


@pytest.mark.parametrize("name", ["hoola", "rummy"])
def test_a_rigged_rebuilt_stock_is_caught(rebuilt, tmp_path: Path, name: str) -> None:
    replay = copy(rebuilt[name])
    at = first(replay, "StockReshuffled")
    forge_payload(
        replay, at, lambda body: swap_first_two(getattr(body, name).stock_reshuffled.stock)
    )
    round_no = 1
    assert failed(
        run(tmp_path, replay),
        f"event {at + 1}: the reshuffle-1 shuffle (round {round_no}) differs from the committed "
        "seeds' at card 1",
    )
    # A rebuilt stock numbered out of turn.
    replay = copy(rebuilt[name])
    forge_payload(
        replay, at, lambda body: setattr(getattr(body, name).stock_reshuffled, "reshuffle", 2)
    )
    assert failed(run(tmp_path, replay), f"event {at + 1}: reshuffle 2 follows reshuffle 0")


def test_a_forged_discard_breaks_the_rebuilt_stock(rebuilt, tmp_path: Path) -> None:
    """The rebuilt stocks are checked against the discard pile the events build: a forged
    discard breaks the pile, and the check says where."""
    replay = copy(rebuilt["rummy"])
    at = first(replay, "CardDiscarded")
    real = replay.events[at].body.rummy.card_discarded.card.code
    fake = "AS1" if real != "AS1" else "AS2"
    forge_payload(replay, at, lambda body: setattr(body.rummy.card_discarded.card, "code", fake))
    result = run(tmp_path, replay)
    assert result.returncode == CHECK_FAILED and "reshuffle-1 shuffle" in result.stdout


def test_fields_out_of_their_order_are_not_the_file_as_written(tmp_path: Path) -> None:
    """Deterministic serialization writes a message's fields in the order of their numbers, so
    a record whose fields come in another order is not the bytes the service wrote, even where
    it decodes to the same values (the full verifier refuses it; so must this one). The mutant
    hypothesis found: one bit of a header moves a rule option's explicit default (Rummy's
    ``forfeit_when_away``, field 9) to field 13 (``outage_grace_ms``, 0: a game recorded
    before it), among the fields after it."""
    path = REPLAYS / "corpus" / "log-format-2" / "rummy-standard-first-dealer-drawn.replay"
    data = bytearray(path.read_bytes())
    at = data.index(b"H\x00P\x01X\x01`\x01")  # forfeit_when_away false, then fields 10-12
    data[at] = ord("h")  # field 13, varint
    mutant = tmp_path / "mutant.replay"
    mutant.write_bytes(bytes(data))
    result = run_file(mutant)
    assert result.returncode == NOT_A_REPLAY, result.stdout
    assert "out of its place (after field 13)" in result.stdout
    assert run_file(path).returncode == 0
