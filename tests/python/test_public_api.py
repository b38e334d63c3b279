"""End-to-end test of the public gRPC API from another language.

Stubs are generated from proto/ with grpcio-tools into a temporary directory
when the test starts, exactly as a frontend author would generate them. The
system must already be running; the test is told where by environment:

    CHESS_E2E_GATEWAY   host:port of the public gRPC API
    CHESS_E2E_MAIL_DIR  directory where the SMTP sink the gateway mails to
                        writes <n>.json (envelope) and <n>.eml (message)
    CHESS_E2E_PROTO     the proto/ directory (default: ../../proto from here)

`cargo test -p chess-e2e --test public_api_python` starts the system and the
SMTP sink and runs this file. Needs the packages of requirements.txt, which
`scripts/setup test` installs in .venv/ (first on PATH in scripts/test).
"""

import glob
import json
import os
import queue
import sys
import threading
import time
import unittest
import urllib.request
import uuid

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.environ.get("CHESS_E2E_PROTO", os.path.join(HERE, "..", "..", "proto"))
GATEWAY = os.environ.get("CHESS_E2E_GATEWAY", "127.0.0.1:50051")
MAIL_DIR = os.environ.get("CHESS_E2E_MAIL_DIR")
TIMEOUT = 15


sys.path.insert(0, HERE)
from stubs import generate  # noqa: E402

sys.path.insert(0, generate(PROTO))

from chess.common.v1 import common_pb2 as common  # noqa: E402
from chess.gateway.v1 import gateway_pb2 as gw  # noqa: E402
from chess.gateway.v1 import gateway_pb2_grpc as gw_grpc  # noqa: E402

CHANNEL = grpc.insecure_channel(GATEWAY)
ACCOUNTS = gw_grpc.AccountServiceStub(CHANNEL)
LOBBY = gw_grpc.LobbyServiceStub(CHANNEL)
PLAY = gw_grpc.PlayServiceStub(CHANNEL)
PASSWORD = "correct horse battery"


class User:
    """A registered, signed-in player."""

    def __init__(self, prefix):
        self.name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        self.email = f"{self.name}@example.org"
        ACCOUNTS.Register(gw.RegisterRequest(username=self.name, email=self.email, password=PASSWORD))
        login = ACCOUNTS.Login(gw.LoginRequest(login=self.name, password=PASSWORD))
        self.id = login.player_id
        self.metadata = [("authorization", f"Bearer {login.token}")]


class Events:
    """A player's StreamEvents stream, read on a thread into a queue."""

    def __init__(self, user):
        self.call = PLAY.StreamEvents(gw.StreamEventsRequest(), metadata=user.metadata)
        # The response headers mean the gateway has the stream open.
        self.call.initial_metadata()
        self.queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for response in self.call:
                self.queue.put(response)
        except grpc.RpcError:
            pass

    def next(self, what, timeout=TIMEOUT):
        """The next event for which `what(event)` holds, skipping others."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no matching event arrived")
            try:
                event = self.queue.get(timeout=left)
            except queue.Empty:
                raise AssertionError("no matching event arrived") from None
            if what(event):
                return event

    def close(self):
        self.call.cancel()


def lobby_kind(kind):
    return lambda e: e.WhichOneof("event") == "lobby" and e.lobby.WhichOneof("kind") == kind


def game_kind(kind, game_id):
    return lambda e: (
        e.WhichOneof("event") == "game" and e.game.game_id == game_id and e.game.WhichOneof("kind") == kind
    )


def blitz():
    return common.TimeControl(incremental=common.Incremental(initial_seconds=300, increment_seconds=0))


def wait_for(check, what, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def blitz_rating(name):
    profile = ACCOUNTS.GetProfile(gw.GetProfileRequest(username=name)).profile
    (rating,) = [r for r in profile.ratings if r.category == common.SPEED_CATEGORY_BLITZ]
    return rating


class PublicApi(unittest.TestCase):
    def test_seek_request_accept_and_play_to_checkmate(self):
        alice, bob = User("alice"), User("bob")
        alice_events, bob_events = Events(alice), Events(bob)
        try:
            seek = LOBBY.CreateSeek(
                gw.CreateSeekRequest(
                    time_control=blitz(),
                    color=common.COLOR_CHOICE_WHITE,
                    rated=True,
                    show_name=True,
                    accept_mode=common.ACCEPT_MODE_MANUAL,
                ),
                metadata=alice.metadata,
            ).seek
            listed = [s for s in LOBBY.ListSeeks(gw.ListSeeksRequest()).seeks if s.seek_id == seek.seek_id]
            self.assertEqual(len(listed), 1)
            self.assertEqual(listed[0].poster_username, alice.name)
            self.assertEqual(listed[0].poster_rating, 1200)
            self.assertEqual(listed[0].speed, common.SPEED_CATEGORY_BLITZ)
            self.assertEqual(listed[0].time_control.incremental.initial_seconds, 300)

            request = LOBBY.RequestSeek(gw.RequestSeekRequest(seek_id=seek.seek_id), metadata=bob.metadata).request
            self.assertEqual(request.status, common.SEEK_REQUEST_STATUS_PENDING)
            received = alice_events.next(lobby_kind("seek_request_received"))
            self.assertEqual(received.lobby.seek_request_received.requester_username, bob.name)

            accepted = LOBBY.AcceptSeekRequest(
                gw.AcceptSeekRequestRequest(request_id=request.request_id), metadata=alice.metadata
            ).request
            self.assertEqual(accepted.status, common.SEEK_REQUEST_STATUS_ACCEPTED)
            game_id = accepted.game_id
            for events in (alice_events, bob_events):
                events.next(game_kind("game_started", game_id))

            # A stranger cannot move in it.
            mallory = User("mallory")
            with self.assertRaises(grpc.RpcError) as refused:
                PLAY.MakeMove(gw.MakeMoveRequest(game_id=game_id, move="e4"), metadata=mallory.metadata)
            self.assertEqual(refused.exception.code(), grpc.StatusCode.PERMISSION_DENIED)

            # Scholar's mate, in SAN and UCI; alice plays white.
            moves = [(alice, "e4"), (bob, "e7e5"), (alice, "Bc4"), (bob, "Nc6"), (alice, "Qh5"), (bob, "g8f6"), (alice, "Qxf7#")]
            sans = ["e4", "e5", "Bc4", "Nc6", "Qh5", "Nf6", "Qxf7#"]
            for ply, (player, move) in enumerate(moves, start=1):
                made = PLAY.MakeMove(gw.MakeMoveRequest(game_id=game_id, move=move), metadata=player.metadata)
                self.assertEqual(made.ply, ply)
                self.assertEqual(made.move_made.move.san, sans[ply - 1])
                for events in (alice_events, bob_events):
                    seen = events.next(game_kind("move_made", game_id))
                    self.assertEqual(seen.game.ply, ply)
                    self.assertEqual(seen.game.move_made.move.san, sans[ply - 1])
            self.assertEqual(made.game_ended.termination, common.TERMINATION_CHECKMATE)
            self.assertEqual(made.game_ended.result, common.GAME_RESULT_WHITE_WINS)
            for events in (alice_events, bob_events):
                ended = events.next(game_kind("game_ended", game_id))
                self.assertEqual(ended.game.game_ended.termination, common.TERMINATION_CHECKMATE)

            # Club Elo (the default system): equal 1200s, a win is worth
            # K * (1 - 0.5) = 10 points.
            wait_for(lambda: blitz_rating(alice.name).games_played == 1, "alice's rating")
            self.assertEqual(blitz_rating(alice.name).rating, 1210)
            self.assertEqual(blitz_rating(bob.name).rating, 1190)
            board = ACCOUNTS.Leaderboard(gw.LeaderboardRequest(category=common.SPEED_CATEGORY_BLITZ, page_size=200))
            self.assertEqual(board.rating_system, common.RATING_SYSTEM_CLUB_ELO)
            ranked = {e.username: (e.rank, e.rating.rating) for e in board.entries}
            self.assertEqual(ranked[alice.name][1], 1210)
            self.assertEqual(ranked[bob.name][1], 1190)
            self.assertLess(ranked[alice.name][0], ranked[bob.name][0])
            history = ACCOUNTS.GetRatingHistory(gw.GetRatingHistoryRequest(username=bob.name)).entries
            self.assertEqual([(h.game_id, h.rating_after) for h in history], [(game_id, 1190)])
            pgn = PLAY.ExportPgn(gw.ExportPgnRequest(game_id=game_id)).pgn
            self.assertIn("Qxf7#", pgn)
        finally:
            alice_events.close()
            bob_events.close()

    def test_a_rejected_request(self):
        carol, dave = User("carol"), User("dave")
        carol_events, dave_events = Events(carol), Events(dave)
        try:
            seek = LOBBY.CreateSeek(
                gw.CreateSeekRequest(time_control=blitz(), color=common.COLOR_CHOICE_EITHER, accept_mode=common.ACCEPT_MODE_MANUAL),
                metadata=carol.metadata,
            ).seek
            # Carol chose not to show her name.
            listed = [s for s in LOBBY.ListSeeks(gw.ListSeeksRequest()).seeks if s.seek_id == seek.seek_id]
            self.assertEqual(listed[0].poster_username, "")
            request = LOBBY.RequestSeek(gw.RequestSeekRequest(seek_id=seek.seek_id), metadata=dave.metadata).request
            carol_events.next(lobby_kind("seek_request_received"))
            rejected = LOBBY.RejectSeekRequest(
                gw.RejectSeekRequestRequest(request_id=request.request_id), metadata=carol.metadata
            ).request
            self.assertEqual(rejected.status, common.SEEK_REQUEST_STATUS_REJECTED)
            heard = dave_events.next(lobby_kind("seek_request_rejected"))
            self.assertEqual(heard.lobby.seek_request_rejected.request_id, request.request_id)
            # The seek is still open, and no game was made.
            mine = LOBBY.ListSeekRequests(gw.ListSeekRequestsRequest(), metadata=carol.metadata)
            self.assertEqual([s.seek_id for s in mine.seeks], [seek.seek_id])
            self.assertEqual(len(mine.received), 0)
            games = PLAY.ListMyGames(gw.ListMyGamesRequest(), metadata=dave.metadata).games
            self.assertEqual(len(games), 0)
        finally:
            carol_events.close()
            dave_events.close()

    @unittest.skipUnless(MAIL_DIR, "CHESS_E2E_MAIL_DIR names the SMTP sink's directory")
    def test_a_daily_move_sends_an_email(self):
        erin, frank = User("erin"), User("frank")
        table = LOBBY.CreateSeek(
            gw.CreateSeekRequest(
                time_control=common.TimeControl(daily=common.Daily(turn_hours=72)),
                color=common.COLOR_CHOICE_WHITE,
                accept_mode=common.ACCEPT_MODE_AUTOMATIC,
            ),
            metadata=erin.metadata,
        ).seek
        joined = LOBBY.RequestSeek(gw.RequestSeekRequest(seek_id=table.seek_id), metadata=frank.metadata).request
        self.assertEqual(joined.status, common.SEEK_REQUEST_STATUS_ACCEPTED)
        PLAY.MakeMove(gw.MakeMoveRequest(game_id=joined.game_id, move="d4"), metadata=erin.metadata)

        def mail_to_frank():
            for envelope_path in glob.glob(os.path.join(MAIL_DIR, "*.json")):
                eml = envelope_path[: -len(".json")] + ".eml"
                if not os.path.exists(eml):
                    continue
                with open(envelope_path) as f:
                    envelope = json.load(f)
                if frank.email in envelope["rcpt_tos"]:
                    with open(eml) as f:
                        return f.read()
            return None

        message = wait_for(mail_to_frank, "the email to frank")
        self.assertIn(f"Subject: {erin.name} played 1. d4", message)
        self.assertIn(joined.game_id, message)
        self.assertIn("72 hours", message)
        # The link is the gateway's own address (no --public-url given), and
        # it opens the game over plain HTTP on the gRPC port.
        link = f"http://{GATEWAY}/games/{joined.game_id}"
        self.assertIn(f"Open the game: {link}", message)
        with urllib.request.urlopen(link, timeout=TIMEOUT) as page:
            self.assertEqual(page.status, 200)
            self.assertEqual(page.headers["Content-Type"], "text/html; charset=utf-8")
            html = page.read().decode()
        self.assertIn("<li>d4</li>", html)
        self.assertIn(f"White: <b>{erin.name}</b>", html)
        with urllib.request.urlopen(f"{link}.pgn", timeout=TIMEOUT) as pgn:
            self.assertTrue(pgn.headers["Content-Type"].startswith("application/x-chess-pgn"))
            self.assertIn("1. d4", pgn.read().decode())


if __name__ == "__main__":
    unittest.main(verbosity=2)
