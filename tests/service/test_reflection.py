"""Server reflection, v1 and v1alpha (service/reflection.py), through a real client call on each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection_pb2

from croupier.service.reflection import V1_FILE, v1_file
from croupier.service.store import open_store

from .conftest import server_thread

SERVICES = {
    "croupier.v1.GameService",
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
}


@pytest.fixture(scope="module")
def channel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[grpc.Channel]:
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('reflection') / 'r.sqlite3'}")
    thread = server_thread(store)
    port = thread.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as opened:
        yield opened
    thread.stop(grace=None)
    store.close()


def v1_messages() -> tuple[type, type]:
    """v1's request and response classes, from v1's own descriptor (not v1alpha's classes)."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(v1_file())
    return (
        message_factory.GetMessageClass(
            pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionRequest")
        ),
        message_factory.GetMessageClass(
            pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionResponse")
        ),
    )


def ask(channel: grpc.Channel, version: str, requests: list[dict[str, str]]) -> list[object]:
    if version == "v1":
        request_type, response_type = v1_messages()
    else:
        request_type = reflection_pb2.ServerReflectionRequest
        response_type = reflection_pb2.ServerReflectionResponse
    call = channel.stream_stream(
        f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_type.FromString,
    )
    return list(call(iter([request_type(**r) for r in requests]), timeout=30))


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_reflection_lists_and_describes_every_service(channel: grpc.Channel, version: str) -> None:
    listed, game, itself = ask(
        channel,
        version,
        [
            {"list_services": ""},
            {"file_containing_symbol": "croupier.v1.GameService"},
            {"file_containing_symbol": "grpc.reflection.v1.ServerReflection"},
        ],
    )
    assert {s.name for s in listed.list_services_response.service} == SERVICES  # type: ignore[attr-defined]
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in game.file_descriptor_response.file_descriptor_proto  # type: ignore[attr-defined]
    ]
    service = next(f for f in files if f.name == "croupier/v1/service.proto")
    assert "CreateGame" in {m.name for m in service.service[0].method}
    (own,) = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in itself.file_descriptor_response.file_descriptor_proto  # type: ignore[attr-defined]
    ]
    assert (own.name, own.package) == (V1_FILE, "grpc.reflection.v1")


def test_v1_is_v1alpha_renamed() -> None:
    """Field for field the same messages, so one servicer answers both."""
    v1 = v1_file()
    alpha = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(alpha)
    assert [m.name for m in v1.message_type] == [m.name for m in alpha.message_type]
    for ours, theirs in zip(v1.message_type, alpha.message_type, strict=True):
        assert [(f.name, f.number, f.type) for f in ours.field] == [
            (f.name, f.number, f.type) for f in theirs.field
        ]
    assert not any("v1alpha" in f.type_name for m in v1.message_type for f in m.field)
    assert Path(V1_FILE).parts[:3] == ("grpc", "reflection", "v1")
