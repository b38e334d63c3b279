"""A small client of the public API over gRPC, on the stubs that
buf.gen.python.yaml generates into gen/python: registers a player, signs in,
and reads the profile and the blitz leaderboard.

    python3 docs/codegen/client.py [host:port] [username]

Needs grpcio and protobuf (pip install grpcio protobuf).
"""

import os
import sys
import uuid

GENERATED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen", "python")
sys.path.insert(0, GENERATED)
# protoc writes no __init__.py, so `chess` would be a namespace package, which
# any installed package of that name (python-chess) takes precedence over:
# made a regular package first on the path, the stubs are found.
for package in ["chess", "chess/common", "chess/common/v1", "chess/gateway", "chess/gateway/v1"]:
    init = os.path.join(GENERATED, package, "__init__.py")
    if not os.path.exists(init):
        open(init, "a").close()

import grpc  # noqa: E402
from chess.common.v1 import common_pb2 as common  # noqa: E402
from chess.gateway.v1 import gateway_pb2 as gateway  # noqa: E402
from chess.gateway.v1 import gateway_pb2_grpc as gateway_grpc  # noqa: E402

address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
username = sys.argv[2] if len(sys.argv) > 2 else f"py_{uuid.uuid4().hex[:8]}"
password = "correct horse battery"

# gRPC over HTTP/2 without TLS, as chess-stack serves it.
with grpc.insecure_channel(address) as channel:
    accounts = gateway_grpc.AccountServiceStub(channel)

    registered = accounts.Register(
        gateway.RegisterRequest(username=username, email=f"{username}@example.org", password=password)
    )
    print(f"registered {registered.profile.username} ({registered.profile.player_id})")

    login = accounts.Login(gateway.LoginRequest(login=username, password=password))
    # Calls marked "signed in" carry the session token.
    me = accounts.Me(gateway.MeRequest(), metadata=[("authorization", f"Bearer {login.token}")])
    print(f"signed in as {me.profile.username} <{me.email}>")

    profile = accounts.GetProfile(gateway.GetProfileRequest(username=username)).profile
    blitz = next(r for r in profile.ratings if r.category == common.SPEED_CATEGORY_BLITZ)
    print(f"blitz rating {blitz.rating:g}{' (provisional)' if blitz.provisional else ''}")

    board = accounts.Leaderboard(gateway.LeaderboardRequest(category=common.SPEED_CATEGORY_BLITZ, page_size=10))
    system = common.RatingSystem.Name(board.rating_system).removeprefix("RATING_SYSTEM_")
    print(f"leaderboard {system}: {len(board.entries)} players")
    for entry in board.entries:
        print(f"  {entry.rank}. {entry.username} {entry.rating.rating:g}")
