"""The ``croupier`` command: ``serve``, ``demo``."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
import uuid
from pathlib import Path

import click
import grpc
import structlog

from croupier.service import config, logs

log = structlog.get_logger("croupier")


@click.group()
def main() -> None:
    """Croupier: deals, referees, records and settles turn-based card games over gRPC."""


@main.command()
@click.option(
    "--address",
    default=lambda: os.environ.get("CROUPIER_ADDRESS", config.DEFAULT_ADDRESS),
    show_default=config.DEFAULT_ADDRESS,
    help="HOST:PORT to listen on.",
)
@click.option(
    "--store",
    "store_url",
    default=lambda: os.environ.get("CROUPIER_STORE", config.DEFAULT_STORE),
    show_default=config.DEFAULT_STORE,
    help="sqlite:///PATH or postgresql://…",
)
@click.option(
    "--log-format",
    type=click.Choice(["json", "console"]),
    default=lambda: os.environ.get("CROUPIER_LOG_FORMAT", "console"),
    show_default="console",
)
def serve(address: str, store_url: str, log_format: str) -> None:
    """Serve the game service (with health checking and reflection)."""
    from croupier.app.tokens import TokenSigner
    from croupier.service.server import PortInUse, create_server
    from croupier.service.store import open_store

    logs.configure(log_format)
    secret = config.token_secret()
    if secret.generated:
        log.warning(
            "generated a development token secret; set CROUPIER_SECRET in production "
            "(seat tokens stop working when the server restarts)"
        )
    store = open_store(store_url)
    where = (
        store_url
        if not store_url.startswith("sqlite:///")
        else f"sqlite:///{Path(store_url.removeprefix('sqlite:///')).resolve()}"
    )
    host = address.rsplit(":", 1)[0]

    async def run() -> None:
        serving = await create_server(address, store, TokenSigner(secret.value))
        await serving.server.start()
        log.info("serving", address=f"{host}:{serving.port}", store=_safe(where))
        click.echo(f"Croupier listening on {host}:{serving.port}; data in {_safe(where)}", err=True)
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stopping.set)
        await stopping.wait()
        await serving.server.stop(grace=2)
        await serving.core.close()

    try:
        asyncio.run(run())
    except PortInUse as error:
        raise click.ClickException(f"{error} (is another server running there?)") from None
    finally:
        store.close()


def _safe(url: str) -> str:
    """A store URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}" if ":" in creds else url
    return url


@main.command()
@click.option(
    "--address", default=config.DEFAULT_ADDRESS, show_default=True, help="The server to play on."
)
@click.option(
    "--game",
    "kind",
    default="hoola",
    show_default=True,
    type=click.Choice(["hoola", "koikoi", "gin", "rummy"]),
    help="The game to play.",
)
@click.option(
    "--seats",
    default=None,
    type=click.IntRange(2, 7),
    help="Hoola: seats at the table (default 3; 6 or 7 play with sit-out, RULES.md "
    "§1.9). Rummy: 2 to 4 (default 4). Koi-Koi and Gin Rummy are for two.",
)
@click.option("--preset", default="", help="A preset of the game (default: the game's default).")
@click.option("--seed", default=None, type=int, help="Seed of the bots' choices.")
@click.option(
    "--rounds",
    default=None,
    type=click.IntRange(1, 50),
    help="Hoola: rounds at the table (default 1). Koi-Koi: 3, 6 or 12 (default: the preset's).",
)
@click.option(
    "--connect-timeout", default=10.0, show_default=True, help="Seconds to wait for the server."
)
def demo(
    address: str,
    kind: str,
    seats: int | None,
    preset: str,
    seed: int | None,
    rounds: int | None,
    connect_timeout: float,
) -> None:
    """Play a whole game between bots through a running server; print the result."""
    from croupier.service.bots import play_game
    from croupier.v1 import common_pb2, gin_pb2, hoola_pb2, koikoi_pb2, rummy_pb2, service_pb2

    if kind == "rummy":
        seats = seats or 4
        overrides = service_pb2.Rules(rummy=rummy_pb2.RummyRules())
        game_kind = common_pb2.GAME_KIND_RUMMY
    elif kind == "gin":
        seats = seats or 2
        overrides = service_pb2.Rules(gin=gin_pb2.GinRules())
        game_kind = common_pb2.GAME_KIND_GIN
    elif kind == "koikoi":
        seats = seats or 2
        overrides = service_pb2.Rules(
            koikoi=koikoi_pb2.KoiKoiRules(rounds=rounds) if rounds else koikoi_pb2.KoiKoiRules()
        )
        game_kind = common_pb2.GAME_KIND_KOIKOI
    else:
        seats = seats or 3
        overrides = service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=rounds or 1))
        if seats > 5:
            overrides.hoola.sit_out = True
            overrides.hoola.max_seats = seats
        game_kind = common_pb2.GAME_KIND_HOOLA
    with grpc.insecure_channel(address) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=connect_timeout)
        except grpc.FutureTimeoutError:
            raise click.ClickException(
                f"no Croupier server at {address} (start one: make run)"
            ) from None
        try:
            result = play_game(
                channel,
                seats=seats,
                preset=preset,
                overrides=overrides,
                kind=game_kind,
                rng=random.Random(seed),
                client_seed=uuid.uuid4().hex,
                on_move=lambda seat, label: click.echo(f"  seat {seat}: {label}"),
            )
        except grpc.RpcError as error:
            raise click.ClickException(f"{error.code().name}: {error.details()}") from None
    click.echo(result.describe())


@main.group()
def replay() -> None:
    """Replay files: export a finished game, verify one, convert between binary and JSON."""


@replay.command("export")
@click.argument("game_id")
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
@click.option(
    "--store",
    "store_url",
    default=lambda: os.environ.get("CROUPIER_STORE", config.DEFAULT_STORE),
    show_default=config.DEFAULT_STORE,
    help="The store the game is in.",
)
def replay_export(game_id: str, out: str, store_url: str) -> None:
    """Write the replay of finished game GAME_ID to OUT (JSON if OUT ends in .json)."""
    from croupier.log import GameNotFound
    from croupier.replays.format import ReplayFormatError, build, dump
    from croupier.service.store import open_store

    store = open_store(store_url)
    try:
        replay_file = build(store.game(game_id), store.read(game_id))
    except GameNotFound:
        raise click.ClickException(f"no game {game_id} in {_safe(store_url)}") from None
    except ReplayFormatError as error:
        raise click.ClickException(str(error)) from None
    finally:
        store.close()
    dump(replay_file, out)
    click.echo(f"wrote {out}: {len(replay_file.events)} events")


@replay.command("verify")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
def replay_verify(path: str) -> None:
    """Verify a replay file: chain, commitment, decks, every event and the settlement. Exits 1
    at the first divergence, naming it."""
    from croupier.replays.format import ReplayFormatError, load
    from croupier.replays.verify import verify

    try:
        report = verify(load(path))
    except ReplayFormatError as error:
        raise click.ClickException(str(error)) from None
    for line in report.lines():
        click.echo(line)
    if not report.ok:
        sys.exit(1)
    click.echo("verified")


@replay.command("show")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the timeline as one self-contained HTML file instead.",
)
def replay_show(path: str, html_out: str | None) -> None:
    """The game turn by turn: each move in words, the hands and the table after it, and every
    settlement with each factor explained."""
    from croupier.replays.format import ReplayFormatError, load
    from croupier.replays.timeline import render_html, render_text, timeline

    try:
        shown = timeline(load(path))
    except ReplayFormatError as error:
        raise click.ClickException(str(error)) from None
    if html_out:
        Path(html_out).write_text(render_html(shown), encoding="utf-8")
        click.echo(f"wrote {html_out}: {len(shown.steps)} turns")
    else:
        click.echo(render_text(shown), nl=False)


@replay.command("convert")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
def replay_convert(source: str, out: str) -> None:
    """Convert a replay between its binary and JSON forms (by OUT's extension)."""
    from croupier.replays.format import ReplayFormatError, dump, load

    try:
        dump(load(source), out)
    except ReplayFormatError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"wrote {out}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
