"""Calls every internal service over its Unix socket with grpcio.

gRPC's C core sends the socket's path as a request's `:authority`, which is
no URI authority; the services must still answer. For each socket named in
CHESS_E2E_SOCKETS (`name=path,…`): the health check several times on one
channel (the client then refers to the headers it sent before), the
reflection stream, and one of the service's own methods without a caller
assertion, which the service itself must refuse as unauthenticated.
"""

from __future__ import annotations

import os
import sys

import grpc

# One method of each service, called with an empty request.
METHODS = {
    "engine": "/chess.engine.v1.EngineService/BestMove",
    "game": "/chess.game.v1.GameService/CreateGame",
    "rating": "/chess.rating.v1.RatingService/Register",
    "matchmaking": "/chess.matchmaking.v1.MatchmakingService/JoinPairingQueue",
}

SERVING = b"\x08\x01"  # HealthCheckResponse { status: SERVING }
LIST_SERVICES = b"\x3a\x00"  # ServerReflectionRequest { list_services: "" }


def check(name: str, path: str) -> None:
    with grpc.insecure_channel(f"unix:{path}") as channel:
        health = channel.unary_unary("/grpc.health.v1.Health/Check")
        for _ in range(3):
            answer = health(b"", timeout=10)
            assert answer == SERVING, f"{name}: health answered {answer!r}"

        reflection = channel.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
        )
        answers = list(reflection(iter([LIST_SERVICES, LIST_SERVICES]), timeout=10))
        assert len(answers) == 2, f"{name}: {len(answers)} reflection answers"
        assert all(b"grpc.health.v1.Health" in a for a in answers), (
            f"{name}: reflection lists no health service: {answers[0]!r}"
        )

        method = METHODS[name.split("-")[0]]
        try:
            if method.endswith("JoinPairingQueue"):
                list(channel.unary_stream(method)(b"", timeout=10))
            else:
                channel.unary_unary(method)(b"", timeout=10)
        except grpc.RpcError as refused:
            assert refused.code() == grpc.StatusCode.UNAUTHENTICATED, (
                f"{name}: {method} without an assertion: {refused.code()} {refused.details()}"
            )
        else:
            raise AssertionError(f"{name}: {method} answered without an assertion")
    print(f"{name}: {path}: ok")


def main() -> int:
    sockets = [s.split("=", 1) for s in os.environ["CHESS_E2E_SOCKETS"].split(",")]
    assert {name.split("-")[0] for name, _ in sockets} == set(METHODS), sockets
    for name, path in sockets:
        check(name, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
