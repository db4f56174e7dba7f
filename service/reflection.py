"""Server reflection v1 (``grpc.reflection.v1.ServerReflection``) beside v1alpha.

grpcio-reflection ships only v1alpha (grpc/grpc#38576), while newer tools (grpcurl, Postman,
grpc-java's and nice-grpc's clients) ask for v1 first. v1 is v1alpha under another package: the
same messages, field for field (grpc-go serves both from one implementation). So v1 is served by
grpcio-reflection's own servicer, under v1's name, with its descriptor derived from v1alpha's (the
package renamed) and added to the descriptor pool, so that v1 can describe itself too.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

V1ALPHA_PACKAGE = "grpc.reflection.v1alpha"
V1_PACKAGE = "grpc.reflection.v1"
V1_FILE = "grpc/reflection/v1/reflection.proto"
SERVICE = "ServerReflection"
METHOD = "ServerReflectionInfo"
#: ``grpc.reflection.v1.ServerReflection``.
V1_SERVICE_NAME = f"{V1_PACKAGE}.{SERVICE}"


def _renamed(name: str) -> str:
    """A type reference of v1alpha's file (``.grpc.reflection.v1alpha.X``) as v1's."""
    return name.replace(f".{V1ALPHA_PACKAGE}.", f".{V1_PACKAGE}.")


def v1_file() -> descriptor_pb2.FileDescriptorProto:
    """v1's file descriptor: v1alpha's, its package and every reference to it renamed."""
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = V1_FILE
    proto.package = V1_PACKAGE
    proto.ClearField("options")  # v1alpha's language packages, not v1's
    for message in proto.message_type:
        for field in message.field:
            if field.type_name:
                field.type_name = _renamed(field.type_name)
    for service in proto.service:
        for method in service.method:
            method.input_type = _renamed(method.input_type)
            method.output_type = _renamed(method.output_type)
    return proto


def _register(pool: descriptor_pool.DescriptorPool) -> None:
    """Add v1's descriptor to ``pool`` once (a second server in the process finds it there)."""
    try:
        pool.FindFileByName(V1_FILE)
    except KeyError:
        pool.Add(v1_file())


def enable_server_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Reflection v1alpha and v1 on ``server``, listing ``service_names`` and both reflection
    services."""
    names = (*service_names, reflection.SERVICE_NAME, V1_SERVICE_NAME)
    pool = descriptor_pool.Default()
    _register(pool)
    reflection.enable_server_reflection(names, server, pool=pool)
    # v1: the same servicer (the wire messages are the same), under v1's method path.
    servicer = reflection.aio.ReflectionServicer(names, pool=pool)
    handler = grpc.method_handlers_generic_handler(
        V1_SERVICE_NAME,
        {
            METHOD: grpc.stream_stream_rpc_method_handler(
                servicer.ServerReflectionInfo,
                request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
                response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))
