"""Engine records ↔ protobuf messages, by field name: one generic converter for every game.

The engine's frozen dataclasses and the contract's messages share field names, so converting is
mechanical: scalars copy, enums map by member name (``PaymentMode.RANK`` ↔ ``PAYMENT_MODE_RANK``),
tuples become repeated fields, nested records nested messages, a card code its game's card message
(``Card``, ``HanafudaCard``), and ``None`` an unset field. A wrapper message whose only field is
``repeated values`` stands for a tuple whose presence matters (an override to "none"). Union types
become ``oneof`` fields named after the record's class (``ThankYou`` ↔ ``thank_you``).

Why dataclasses in the engine rather than the generated messages: they are immutable and hashable
(states are cached and folded), and the engine stays free of generated code.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from croupier.engine import cards as card_codes
from croupier.engine.koikoi import cards as hanafuda
from croupier.v1 import common_pb2, koikoi_pb2

if TYPE_CHECKING:
    from typing import TypeAlias

    from google._upb import _message as upb

    # types-protobuf gives a message's DESCRIPTOR the classes of either implementation (pure
    # Python or upb), and with them the descriptors it leads to.
    AnyDescriptor: TypeAlias = Descriptor | upb.Descriptor
    AnyFieldDescriptor: TypeAlias = FieldDescriptor | upb.FieldDescriptor
    AnyEnumDescriptor: TypeAlias = EnumDescriptor | upb.EnumDescriptor

M = TypeVar("M", bound=Message)


@functools.cache
def snake(name: str) -> str:
    """``ThankYou`` → ``thank_you``. Remembered: every event and command converted asks for its
    class's oneof field, and the regular expression was a measurable part of a move (the names
    are the contract's classes and enums, a few hundred at most)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@functools.cache
def _enum_prefix(enum_type: AnyEnumDescriptor) -> str:
    return snake(enum_type.name).upper() + "_"


def _enum_type(fd: AnyFieldDescriptor) -> AnyEnumDescriptor:
    if fd.enum_type is None:
        raise TypeError(f"{fd.name} is not an enum field")
    return fd.enum_type


def _is_wrapper(descriptor: AnyDescriptor) -> bool:
    return [f.name for f in descriptor.fields] == ["values"] and descriptor.fields[0].is_repeated


def card_to_proto(code: str, msg: common_pb2.Card) -> None:
    msg.code = code
    msg.rank = card_codes.rank(code)
    msg.suit = card_codes.suit(code)
    msg.name = card_codes.name(code)
    if len(code) == 3 and not card_codes.is_joker(code):
        msg.copy = int(code[2])


def hanafuda_to_proto(code: str, msg: koikoi_pb2.HanafudaCard) -> None:
    msg.CopyFrom(_hanafuda_message(code))


@functools.cache
def _hanafuda_message(code: str) -> koikoi_pb2.HanafudaCard:
    """Each of the 48 cards' message, built once (cards are data; views name many of them)."""
    return fill(koikoi_pb2.HanafudaCard(), hanafuda.card(code))


# The messages a card code stands for (a card is its code in the engine), and how each is filled
# (each filler is given a message of the type its key describes).
CARDS: dict[Descriptor, Callable[[str, Any], None]] = {
    common_pb2.Card.DESCRIPTOR: card_to_proto,
    koikoi_pb2.HanafudaCard.DESCRIPTOR: hanafuda_to_proto,
}


@functools.cache
def _enum_numbers(enum_type: AnyEnumDescriptor) -> dict[str, int]:
    """The enum's numbers by member name without the prefix (``RANK`` for ``PAYMENT_MODE_RANK``)."""
    prefix = _enum_prefix(enum_type)
    return {
        value.name.removeprefix(prefix): value.number
        for value in enum_type.values
        if value.name.startswith(prefix)
    }


def _scalar_to_proto(fd: AnyFieldDescriptor, value: Any) -> Any:
    if isinstance(value, Enum):
        return _enum_numbers(_enum_type(fd)).get(value.name, 0)
    return value


# How a record's field is written, worked out once per (message type, record class).
_SCALAR, _REPEATED_MESSAGES, _REPEATED_SCALARS, _WRAPPER, _MESSAGE = range(5)


Step = tuple[str, "AnyFieldDescriptor", int, "AnyFieldDescriptor | None", Any]
#: Stands for "always written" where a step names the value it leaves out.
_ALWAYS = object()


def _added_later(field: dataclasses.Field[Any]) -> bool:
    """An option added after games were recorded (``engine.shared.ADDED_LATER``): written only
    when it differs from its default, read as its default when absent."""
    return bool(field.metadata.get("added_later"))


_PLANS: dict[tuple[Any, type], tuple[Step, ...]] = {}


def _plan(descriptor: AnyDescriptor, cls: type) -> tuple[Step, ...]:
    """How ``cls``'s fields are written into ``descriptor``'s message (worked out once)."""
    key = (descriptor, cls)
    plan = _PLANS.get(key)
    if plan is None:
        steps: list[Step] = []
        for field in dataclasses.fields(cls):
            fd = descriptor.fields_by_name[field.name]
            inner = None
            if fd.is_repeated:
                kind = _REPEATED_MESSAGES if fd.message_type is not None else _REPEATED_SCALARS
            elif fd.message_type is not None:
                kind = _WRAPPER if _is_wrapper(fd.message_type) else _MESSAGE
                inner = fd.message_type.fields[0] if kind == _WRAPPER else None
            else:
                kind = _SCALAR
            skip = field.default if _added_later(field) else _ALWAYS
            steps.append((field.name, fd, kind, inner, skip))
        plan = _PLANS[key] = tuple(steps)
    return plan


def fill(msg: M, record: Any, every_option: bool = False) -> M:
    """Copy a dataclass record into ``msg`` field by field; returns ``msg``. Options added later
    are left out at their defaults (as records made before them hold them), unless
    ``every_option``: a rule set shown to a client has every option set."""
    if isinstance(record, str) and msg.DESCRIPTOR in CARDS:
        CARDS[msg.DESCRIPTOR](record, msg)
        return msg
    msg.SetInParent()
    for name, fd, kind, inner, skip in _plan(msg.DESCRIPTOR, type(record)):
        value = getattr(record, name)
        if value is None or (skip is not _ALWAYS and value == skip and not every_option):
            continue
        if kind == _SCALAR:
            setattr(msg, name, _scalar_to_proto(fd, value))
        elif kind == _MESSAGE:
            fill(getattr(msg, name), value)
        elif kind == _REPEATED_MESSAGES:
            container = getattr(msg, name)
            for item in value:
                fill(container.add(), item)
        elif kind == _REPEATED_SCALARS:
            getattr(msg, name).extend(_scalar_to_proto(fd, item) for item in value)
        elif inner is not None:  # a wrapper: a tuple whose presence matters
            sub = getattr(msg, name)
            sub.SetInParent()
            for item in value:
                if inner.message_type is not None:
                    fill(sub.values.add(), item)
                else:
                    sub.values.append(_scalar_to_proto(inner, item))
    return msg


def to_proto(record: Any, message_cls: type[M]) -> M:
    return fill(message_cls(), record)


def oneof_fill(msg: M, record: Any) -> M:
    """A union member (``ThankYou(...)``) written into ``msg``'s oneof, in place; returns ``msg``.
    Filled where it stays: a message built apart and copied into another costs a copy."""
    fill(getattr(msg, snake(type(record).__name__)), record)
    return msg


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _optional_inner(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0], True
    return tp, False


# Reading a message into a record: each (message type, record class) pair is compiled once into
# a reader of closures, so that folding a log does no type introspection per event.

Reader = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _card_code(value: Any) -> Any:
    return value.code


class UnknownEnumValue(ValueError):
    """An enum field holds a number this contract does not name: a newer contract's value (proto3
    keeps it as a bare number), not a value this release's engine could mean."""


def _enum_reader(fd: AnyFieldDescriptor, tp: type[Enum]) -> Reader:
    enum_type = _enum_type(fd)
    prefix = _enum_prefix(enum_type)
    members: dict[int, Enum] = {}
    for number, value in enum_type.values_by_number.items():
        member = value.name.removeprefix(prefix)
        if member in tp.__members__:
            members[number] = tp[member]

    def read(value: Any) -> Any:
        member = members.get(value)
        if member is None:
            known = enum_type.values_by_number.get(value)
            if known is None:
                raise UnknownEnumValue(f"{fd.name}: {value} is not a valid value")
            raise ValueError(f"{fd.name}: {known.name or value} is not a valid value")
        return member

    return read


def _value_reader(fd: AnyFieldDescriptor, tp: Any) -> Reader:
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _enum_reader(fd, tp)
    if fd.message_type in CARDS:
        return _card_code
    if fd.message_type is not None and isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _record_reader(fd.message_type, tp)
    return _identity


@functools.cache
def _field_reader(fd: AnyFieldDescriptor, tp: Any) -> Reader:
    """Reads one field of a message as the Python type ``tp``."""
    tp, optional = _optional_inner(tp)
    name = fd.name
    read: Reader
    if typing.get_origin(tp) is tuple:
        item_type = typing.get_args(tp)[0]
        if fd.message_type is not None and _is_wrapper(fd.message_type):
            item = _value_reader(fd.message_type.fields[0], item_type)

            def read(msg: Any) -> Any:
                return tuple(item(v) for v in getattr(msg, name).values)

        else:
            item = _value_reader(fd, item_type)

            def read(msg: Any) -> Any:
                return tuple(item(v) for v in getattr(msg, name))

    else:
        value = _value_reader(fd, tp)

        def read(msg: Any) -> Any:
            return value(getattr(msg, name))

    if optional and fd.has_presence:
        present = read

        def read(msg: Any) -> Any:
            return present(msg) if msg.HasField(name) else None

    return read


def _or_default(name: str, read: Reader, default: Any) -> Reader:
    def read_or_default(msg: Any) -> Any:
        return read(msg) if msg.HasField(name) else default

    return read_or_default


@functools.cache
def _record_reader(descriptor: AnyDescriptor, cls: type) -> Reader:
    """Reads a whole message as the dataclass ``cls``."""
    hints = _hints(cls)
    fields = [
        (field.name, _field_reader(descriptor.fields_by_name[field.name], hints[field.name]))
        for field in dataclasses.fields(cls)
    ]
    for index, field in enumerate(dataclasses.fields(cls)):
        fd = descriptor.fields_by_name[field.name]
        if _added_later(field) and fd.has_presence:
            fields[index] = (field.name, _or_default(fd.name, fields[index][1], field.default))

    def read(msg: Any) -> Any:
        return cls(**{name: reader(msg) for name, reader in fields})

    return read


def field_from_proto(msg: Message, fd: AnyFieldDescriptor, tp: Any) -> Any:
    """One field of ``msg`` as the Python type ``tp``."""
    return _field_reader(fd, tp)(msg)


def from_proto(msg: Message, cls: type) -> Any:
    """The dataclass ``cls`` read from ``msg`` field by field."""
    return _record_reader(msg.DESCRIPTOR, cls)(msg)


def overrides_from_proto(msg: Message, cls: type) -> dict[str, Any]:
    """The fields set in ``msg`` (a partial rule set) as keyword overrides for ``cls``."""
    hints = _hints(cls)
    return {fd.name: field_from_proto(msg, fd, hints[fd.name]) for fd, _ in msg.ListFields()}


def oneof_from_proto(msg: Message, oneof: str, classes: dict[str, type]) -> Any:
    """The record held by ``msg``'s oneof, its class found by field name in ``classes``."""
    which = msg.WhichOneof(oneof)
    if which is None:
        raise ValueError(f"{msg.DESCRIPTOR.name}.{oneof} is not set")
    return from_proto(getattr(msg, which), classes[which])


def classes_by_field(*classes: type) -> dict[str, type]:
    return {snake(cls.__name__): cls for cls in classes}
