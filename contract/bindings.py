"""Each game kind's place in the contract: its messages and its records, side by side.

The application is game-agnostic: everything it knows of a kind is one :class:`GameBinding` here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

from croupier.contract import convert
from croupier.engine import registry
from croupier.engine.clock import (
    CameBack,
    ComeBack,
    EndGame,
    StudioEndedGame,
    TurnRestarted,
    TurnTimedOut,
)
from croupier.engine.game import Game, GameState
from croupier.engine.gin import events as gin_events
from croupier.engine.gin.game import GinView
from croupier.engine.gin.rules import GinRules
from croupier.engine.hoola import events as hoola_events
from croupier.engine.hoola.game import HoolaView
from croupier.engine.hoola.rules import HoolaRules
from croupier.engine.koikoi import events as koikoi_events
from croupier.engine.koikoi.game import KoiKoiView
from croupier.engine.koikoi.rules import KoiKoiRules
from croupier.engine.rummy import events as rummy_events
from croupier.engine.rummy.game import RummyView
from croupier.engine.rummy.rules import DEFAULT_SEATS as RUMMY_DEFAULT_SEATS
from croupier.engine.rummy.rules import RummyRules, unset_seats
from croupier.v1 import common_pb2, gin_pb2, hoola_pb2, koikoi_pb2, rummy_pb2, service_pb2


@dataclass(frozen=True)
class GameBinding:
    kind: common_pb2.GameKind.ValueType
    field: str  # the oneof field of Rules / Command / View / EventBody
    game: Game[Any, Any, Any, Any]
    rules_cls: type
    rules_msg: type[Message]
    command_msg: type[Message]
    event_msg: type[Message]
    view_msg: type[Message]
    view_cls: type
    commands: dict[str, type]
    events: dict[str, type]
    # The seats a request's unset ``seats`` (0) means; 0: none, the request must name them.
    default_seats: int = 0
    # Where the default depends on the rule set: the seats an unset ``seats`` means for a preset
    # and its overrides (Rummy: ``default_seats``, or the rule set's ``max_seats`` when fewer).
    unset_seats: Callable[[str, dict[str, Any]], int] | None = None

    # -- rules ---------------------------------------------------------------------------------
    def rules_to_proto(self, rules: Any) -> service_pb2.Rules:
        """The rule set with every option set (for clients; events write their own copy)."""
        msg = service_pb2.Rules()
        convert.fill(getattr(msg, self.field), rules, every_option=True)
        return msg

    def overrides(self, rules: service_pb2.Rules) -> dict[str, Any]:
        if rules.WhichOneof("game") not in (None, self.field):
            raise ValueError(f"overrides are for {rules.WhichOneof('game')}, not {self.field}")
        return convert.overrides_from_proto(getattr(rules, self.field), self.rules_cls)

    def recorded_overrides(self, rules: service_pb2.Rules) -> dict[str, Any]:
        """A recorded rule set as overrides of the default preset: an option added after the game
        was recorded (``engine.shared.ADDED_LATER``) and absent from it takes its own default,
        what the game was played with, not the preset's value."""
        found = self.overrides(rules)
        for option in dataclasses.fields(self.rules_cls):
            if option.metadata.get("added_later") and option.name not in found:
                found[option.name] = option.default
        return found

    # -- commands ------------------------------------------------------------------------------
    def command_from_proto(self, command: service_pb2.Command) -> Any:
        if command.WhichOneof("game") != self.field:
            raise ValueError(f"the command is not a {self.field} command")
        return convert.oneof_from_proto(getattr(command, self.field), "move", self.commands)

    def command_to_proto(self, command: Any) -> service_pb2.Command:
        return self.fill_command(service_pb2.Command(), command)

    def fill_command(self, msg: service_pb2.Command, command: Any) -> service_pb2.Command:
        """``command`` written into ``msg``, in place; returns ``msg``. Filled where it stays: a
        message built apart and copied in costs a copy per command (every legal move of every
        version is converted)."""
        convert.oneof_fill(getattr(msg, self.field), command)
        return msg

    # -- events --------------------------------------------------------------------------------
    def event_to_body(self, event: Any) -> service_pb2.EventBody:
        body = service_pb2.EventBody()
        convert.oneof_fill(getattr(body, self.field), event)
        return body

    def event_from_body(self, body: service_pb2.EventBody) -> Any:
        return convert.oneof_from_proto(getattr(body, self.field), "event", self.events)

    # -- views ---------------------------------------------------------------------------------
    def view_to_proto(self, view: Any) -> service_pb2.View:
        msg = service_pb2.View()
        convert.fill(getattr(msg, self.field), view)
        return msg


HOOLA = GameBinding(
    kind=common_pb2.GAME_KIND_HOOLA,
    field="hoola",
    game=registry.game("hoola"),
    rules_cls=HoolaRules,
    rules_msg=hoola_pb2.HoolaRules,
    command_msg=hoola_pb2.HoolaCommand,
    event_msg=hoola_pb2.HoolaEvent,
    view_msg=hoola_pb2.HoolaView,
    view_cls=HoolaView,
    commands=convert.classes_by_field(
        ComeBack,
        EndGame,
        hoola_events.Draw,
        hoola_events.ThankYou,
        hoola_events.Meld,
        hoola_events.LayOff,
        hoola_events.Discard,
        hoola_events.Stop,
        hoola_events.Declare,
        hoola_events.NextRound,
        hoola_events.CloseTable,
        hoola_events.BindSevens,
        hoola_events.Play,
        hoola_events.SitOut,
        hoola_events.LeaveTable,
    ),
    events=convert.classes_by_field(
        CameBack,
        TurnTimedOut,
        TurnRestarted,
        StudioEndedGame,
        hoola_events.GameStarted,
        hoola_events.RoundDealt,
        hoola_events.CardDrawn,
        hoola_events.DiscardTaken,
        hoola_events.MeldMade,
        hoola_events.CardsLaidOff,
        hoola_events.CardDiscarded,
        hoola_events.StockReshuffled,
        hoola_events.StopCalled,
        hoola_events.CombinationDeclared,
        hoola_events.RoundEnded,
        hoola_events.TableClosed,
        hoola_events.SevensBound,
        hoola_events.ClaimMade,
        hoola_events.PlayDeclared,
        hoola_events.SatOut,
        hoola_events.PlayBegan,
        hoola_events.SeatLeft,
        hoola_events.SeatForfeited,
    ),
)

KOIKOI = GameBinding(
    kind=common_pb2.GAME_KIND_KOIKOI,
    field="koikoi",
    game=registry.game("koikoi"),
    rules_cls=KoiKoiRules,
    rules_msg=koikoi_pb2.KoiKoiRules,
    command_msg=koikoi_pb2.KoiKoiCommand,
    event_msg=koikoi_pb2.KoiKoiEvent,
    view_msg=koikoi_pb2.KoiKoiView,
    view_cls=KoiKoiView,
    commands=convert.classes_by_field(
        ComeBack,
        EndGame,
        koikoi_events.PlayCard,
        koikoi_events.ChooseCapture,
        koikoi_events.KoiKoi,
        koikoi_events.Shobu,
        koikoi_events.NextRound,
    ),
    events=convert.classes_by_field(
        CameBack,
        TurnTimedOut,
        TurnRestarted,
        StudioEndedGame,
        koikoi_events.MatchStarted,
        koikoi_events.RoundDealt,
        koikoi_events.CardPlayed,
        koikoi_events.CardTurned,
        koikoi_events.CaptureChosen,
        koikoi_events.YakuFormed,
        koikoi_events.KoiKoiCalled,
        koikoi_events.ShobuCalled,
        koikoi_events.RoundEnded,
        koikoi_events.SeatForfeited,
        koikoi_events.MatchEnded,
    ),
)

GIN = GameBinding(
    kind=common_pb2.GAME_KIND_GIN,
    field="gin",
    game=registry.game("gin"),
    rules_cls=GinRules,
    rules_msg=gin_pb2.GinRules,
    command_msg=gin_pb2.GinCommand,
    event_msg=gin_pb2.GinEvent,
    view_msg=gin_pb2.GinView,
    view_cls=GinView,
    commands=convert.classes_by_field(
        ComeBack,
        EndGame,
        gin_events.DrawStock,
        gin_events.DrawDiscard,
        gin_events.Pass,
        gin_events.Discard,
        gin_events.Knock,
        gin_events.LayOff,
        gin_events.EndLayOffs,
        gin_events.NextHand,
    ),
    events=convert.classes_by_field(
        CameBack,
        TurnTimedOut,
        TurnRestarted,
        StudioEndedGame,
        gin_events.MatchStarted,
        gin_events.HandDealt,
        gin_events.UpcardPassed,
        gin_events.CardDrawn,
        gin_events.CardDiscarded,
        gin_events.Knocked,
        gin_events.CardLaidOff,
        gin_events.LayOffsEnded,
        gin_events.HandEnded,
        gin_events.SeatForfeited,
        gin_events.MatchEnded,
    ),
)

RUMMY = GameBinding(
    kind=common_pb2.GAME_KIND_RUMMY,
    field="rummy",
    game=registry.game("rummy"),
    rules_cls=RummyRules,
    rules_msg=rummy_pb2.RummyRules,
    command_msg=rummy_pb2.RummyCommand,
    event_msg=rummy_pb2.RummyEvent,
    view_msg=rummy_pb2.RummyView,
    view_cls=RummyView,
    default_seats=RUMMY_DEFAULT_SEATS,
    unset_seats=unset_seats,
    commands=convert.classes_by_field(
        rummy_events.DrawStock,
        rummy_events.TakeDiscard,
        rummy_events.LayDown,
        rummy_events.LayOff,
        rummy_events.SwapJoker,
        rummy_events.Discard,
        rummy_events.ComeBack,
        EndGame,
    ),
    events=convert.classes_by_field(
        TurnTimedOut,
        TurnRestarted,
        StudioEndedGame,
        rummy_events.GameStarted,
        rummy_events.RoundDealt,
        rummy_events.CardDrawn,
        rummy_events.DiscardTaken,
        rummy_events.MeldsLaidDown,
        rummy_events.CardsLaidOff,
        rummy_events.JokerSwapped,
        rummy_events.CardDiscarded,
        rummy_events.StockReshuffled,
        rummy_events.CameBack,
        rummy_events.SeatForfeited,
        rummy_events.RoundEnded,
    ),
)

BINDINGS: dict[common_pb2.GameKind.ValueType, GameBinding] = {
    b.kind: b for b in (HOOLA, KOIKOI, GIN, RUMMY)
}
BY_NAME: dict[str, GameBinding] = {b.game.kind: b for b in BINDINGS.values()}

if TYPE_CHECKING:
    from croupier.engine.gin.state import GinState
    from croupier.engine.hoola.state import HoolaState
    from croupier.engine.koikoi.state import KoiKoiState
    from croupier.engine.rummy.state import RummyState

    # Each game's state is what the core takes it for (its ``Folded.state``): mypy checks it
    # here, as the bindings' ``Game[Any, ...]`` does not.
    _STATES: tuple[type[GameState], ...] = (HoolaState, KoiKoiState, GinState, RummyState)


# -- records of a newer release -------------------------------------------------------------------


def holds_unknown(message: Message) -> bool:
    """Whether ``message``, or any message in it, holds a field this release's contract does not
    know."""
    if len(UnknownFieldSet(message)):
        return True
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is not None and any(
                holds_unknown(item) for item in value.values()
            ):
                return True
        elif field.is_repeated:
            if any(holds_unknown(item) for item in value):
                return True
        elif holds_unknown(value):
            return True
    return False


def from_newer_release(body: service_pb2.EventBody, whole: bool) -> bool:
    """Whether a stored event was written by a newer release of the contract than this one: a
    field, an event kind or a rule option this release does not know, which protobuf keeps
    aside and the conversions to the engine's records drop without a word. Played on by this
    release (a rolling upgrade, an old replica beside new ones), such a game's moves and
    time-outs follow this release's rules, not those it was made with, and its record no longer
    verifies. ``whole``: every message in it (a game's first event, which holds its rules);
    otherwise the body, the game's event and that event's own message (some 3 µs, against 20
    for the whole: this runs for every event read)."""
    if whole:
        return holds_unknown(body)
    if len(UnknownFieldSet(body)):
        return True
    kind = body.WhichOneof("body")
    if kind is None:
        return False
    game = getattr(body, kind)
    if len(UnknownFieldSet(game)):
        return True
    which = game.WhichOneof("event") if game.DESCRIPTOR.oneofs_by_name.get("event") else None
    return which is not None and len(UnknownFieldSet(getattr(game, which))) > 0
