"""The gRPC server: the game service, health checking and reflection on one port."""

from __future__ import annotations

from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from croupier.service.api import GameService
from croupier.service.auth import TokenSigner
from croupier.service.store import EventStore
from croupier.v1 import service_pb2, service_pb2_grpc

SERVICE_NAME = service_pb2.DESCRIPTOR.services_by_name["GameService"].full_name


def create_server(address: str, store: EventStore, signer: TokenSigner,
                  max_workers: int = 64) -> tuple[grpc.Server, int, GameService]:
    """A started-ready server bound to ``address`` (port 0 picks a free one); returns the port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers,
                                                    thread_name_prefix="rpc"))
    servicer = GameService(store, signer)
    service_pb2_grpc.add_GameServiceServicer_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
         reflection.SERVICE_NAME), server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise RuntimeError(f"cannot listen on {address}")
    return server, port, servicer
