"""The standalone verifier's schema table (``SCHEMA`` in replays/standalone_verify.py) is the
contract's: generated here from the descriptors of the messages a replay holds, and checked equal.

The verifier cannot import generated code (it runs with Python's standard library alone), so it
carries this compact table of field numbers, names and types. After a change to proto/, rewrite it:
``.venv/bin/python -m tests.replays.test_standalone_schema``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import textwrap
from pathlib import Path
from types import ModuleType

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from croupier.v1 import replay_pb2

STANDALONE = Path(__file__).resolve().parents[2] / "replays" / "standalone_verify.py"
PACKAGE = "croupier.v1."
#: The scalar types the verifier decodes; another one in a replay's messages fails generation,
#: so that the verifier learns it before it meets it.
SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_UINT64: "uint64",
}
WIDTH = 96
#: The table's place in the verifier's source: between these two lines.
TABLE = re.compile(r'(SCHEMA = """\\\n)(.*?)(""")', re.DOTALL)


def _short(full_name: str) -> str:
    assert full_name.startswith(PACKAGE), f"{full_name}: outside {PACKAGE}"
    return full_name.removeprefix(PACKAGE)


def _in_a_oneof(field: FieldDescriptor) -> bool:
    """A member of a real oneof; proto3's ``optional`` is a oneof of its own field (synthetic)."""
    oneof = field.containing_oneof
    return oneof is not None and not (len(oneof.fields) == 1 and oneof.name == f"_{field.name}")


def schema_text() -> str:
    """Every message reachable from ReplayRecord and every enum they use, sorted by name:
    ``message NAME`` then ``NUMBER NAME TYPE`` per field (TYPE ends in ``*`` when repeated, in
    ``|`` for a oneof's member, in ``?`` for another scalar with presence, proto3's ``optional``;
    a message field always has presence); ``enum NAME`` then
    ``NUMBER NAME`` per value. Wrapped lines go on with two spaces."""
    messages: dict[str, list[str]] = {}
    enums: dict[str, EnumDescriptor] = {}
    todo: list[Descriptor] = [replay_pb2.ReplayRecord.DESCRIPTOR]
    while todo:
        message = todo.pop()
        name = _short(message.full_name)
        if name in messages:
            continue
        tokens: list[str] = []
        for field in sorted(message.fields, key=lambda f: f.number):
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                kind = _short(field.message_type.full_name)
                todo.append(field.message_type)
            elif field.type == FieldDescriptor.TYPE_ENUM:
                kind = _short(field.enum_type.full_name)
                enums[kind] = field.enum_type
            else:
                kind = SCALARS[field.type]
            if field.is_repeated:
                kind += "*"
            elif _in_a_oneof(field):
                kind += "|"
            elif field.has_presence and field.type != FieldDescriptor.TYPE_MESSAGE:
                kind += "?"
            tokens += [str(field.number), field.name, kind]
        # The verifier takes every "|" field of a message for one oneof: it must be so.
        assert len({f.containing_oneof.name for f in message.fields if _in_a_oneof(f)}) <= 1, name
        messages[name] = tokens
    lines: list[str] = []
    declarations = [["message", name, *messages[name]] for name in sorted(messages)] + [
        ["enum", name, *(f"{v.number} {v.name}" for v in enums[name].values)]
        for name in sorted(enums)
    ]
    for words in declarations:
        lines += textwrap.wrap(
            " ".join(words),
            width=WIDTH,
            subsequent_indent="  ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    return "\n".join(lines) + "\n"


def _standalone() -> ModuleType:
    spec = importlib.util.spec_from_file_location("standalone_verify", STANDALONE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_is_the_contracts() -> None:
    assert schema_text() == _standalone().SCHEMA, (
        "replays/standalone_verify.py's SCHEMA is out of date: "
        "run .venv/bin/python -m tests.replays.test_standalone_schema"
    )


def test_the_table_reads_back_as_the_descriptors_say() -> None:
    """The verifier's own reading of the table: every field's number, name, type and flags."""
    schema = _standalone().Schema.parse(_standalone().SCHEMA)
    event = schema.messages["GameEvent"]
    assert (event[3].name, event[3].kind, event[3].presence) == ("seat", "uint32", True)
    assert (event[6].name, event[6].kind) == ("body", "EventBody")
    assert schema.enums["GameKind"][3] == "GAME_KIND_GIN"
    for name, fields in schema.messages.items():
        descriptor = replay_pb2.DESCRIPTOR.pool.FindMessageTypeByName(PACKAGE + name)
        assert sorted(fields) == sorted(f.number for f in descriptor.fields), name
        for field in descriptor.fields:
            assert fields[field.number].name == field.name
            assert fields[field.number].repeated == (field.is_repeated)


def test_the_options_added_later_are_the_engines() -> None:
    """``ADDED_LATER``: the rule options an event leaves out at their defaults (the engine's
    ``ADDED_LATER`` metadata), with those defaults, for every game."""
    from croupier.contract.bindings import BINDINGS

    engine = {
        binding.field: {
            f.name: f.default
            for f in dataclasses.fields(binding.rules_cls)
            if f.metadata.get("added_later")
        }
        for binding in BINDINGS.values()
    }
    assert engine == _standalone().ADDED_LATER


def main() -> None:
    """Rewrite the table in replays/standalone_verify.py from the descriptors."""
    source = STANDALONE.read_text()
    if not TABLE.search(source):
        raise SystemExit(f"{STANDALONE}: no SCHEMA table to rewrite")
    STANDALONE.write_text(
        TABLE.sub(lambda m: m.group(1) + schema_text() + m.group(3), source, count=1)
    )
    print(f"rewrote the schema table in {STANDALONE}")


if __name__ == "__main__":
    main()
