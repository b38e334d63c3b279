"""End-to-end tests of chess over Nostr (docs/nostr.md, kinds 20300-20304).

Real processes only: two Nostr relays, each in its own process (relay.py:
nostr-sdk's LocalRelay, which the players use, and one that forwards events
without checking them, to put bad events in front of the server), the whole
system started by `chess-stack --nostr-relay <one> --nostr-relay <other>`,
and players that are independent Nostr clients with their own keys
(player.py). The players never use the bridge's code: they sign and send
events, and assert on what the server publishes back to them.

The test is told what to run by environment:

    CHESS_E2E_STACK   the chess-stack binary (default: target/debug/chess-stack)
    CHESS_E2E_PROTO   the proto/ directory (default: ../../proto from here)

`cargo nextest run -p chess-e2e --test nostr` sets both and runs this file.
It can also be run by hand, after `cargo build --workspace --bins`:

    .venv/bin/python tests/nostr/test_nostr.py -v [Test1Nostr.test_01_checkmate ...]

The cases share the relays and the stack and run in order, but each plays
with fresh players. The relays and the stack die with this process (even
killed: PR_SET_PDEATHSIG). Needs the packages of
tests/python/requirements.txt.
"""

import ctypes
import glob
import io
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

import chess
import chess.pgn
import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from stubs import generate  # noqa: E402
from player import (  # noqa: E402
    KIND_ERROR,
    KIND_MOVE,
    KIND_REPLY,
    KIND_REQUEST,
    KIND_STATE,
    TIMEOUT,
    Player,
    RawSocket,
)

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PROTO = os.environ.get("CHESS_E2E_PROTO", os.path.join(ROOT, "proto"))
STACK_BINARY = os.environ.get("CHESS_E2E_STACK", os.path.join(ROOT, "target", "debug", "chess-stack"))
# How long to watch for an answer that must not come.
QUIET = 5
PASSWORD = "correct horse battery"
START_FEN = chess.STARTING_FEN


def generate_stubs():
    """Generates the Python stubs of the public API and imports them."""
    out = generate(PROTO)
    # The stubs' top-level package is `chess`, like python-chess's: they are
    # imported with python-chess out of the way, which is put back after
    # (the stubs keep the references to each other they took).
    python_chess = {k: v for k, v in sys.modules.items() if k == "chess" or k.startswith("chess.")}
    for k in python_chess:
        del sys.modules[k]
    sys.path.insert(0, out)
    try:
        import chess.common.v1.common_pb2 as common_pb2  # noqa: F401
        import chess.gateway.v1.gateway_pb2 as gateway_pb2
        import chess.gateway.v1.gateway_pb2_grpc as gateway_pb2_grpc

        modules = (common_pb2, gateway_pb2, gateway_pb2_grpc)
    finally:
        sys.path.remove(out)
        for k in [k for k in sys.modules if k == "chess" or k.startswith("chess.")]:
            del sys.modules[k]
        sys.modules.update(python_chess)
    return modules


common, gw, gw_grpc = generate_stubs()


def wait_for(check, what, timeout=TIMEOUT * 3, interval=0.2):
    """Polls `check()` until it returns something true; gRPC errors count as
    not yet (a service may be restarting)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = check()
            if value:
                return value
            last = value
        except grpc.RpcError as error:
            last = f"{error.code()}: {error.details()}"
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last})")
        time.sleep(interval)


# --- The processes --------------------------------------------------------


def relay_port():
    """A free loopback port below the kernel's ephemeral range, for a relay
    that is killed and started again on the same port: a port inside that
    range may meanwhile become the source port of some outgoing connection
    (the bridge reconnecting, a gRPC channel), and the relay could not bind
    it again."""
    import random
    import socket

    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(1000):
        port = random.randrange(10_000, max(low, 10_001))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


def dies_with_us(sig):
    """A `preexec_fn` that has the child sent `sig` when this process dies,
    so that nothing outlives a test that was killed."""
    libc = ctypes.CDLL(None, use_errno=True)

    def set_death_signal():
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

    return set_death_signal


class RelayProcess:
    """relay.py in its own process, restartable on the same port."""

    def __init__(self, port=0, extra=()):
        self.port = port or relay_port()
        self.extra = list(extra)
        self.process = None
        self.start()

    def start(self):
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "relay.py"), "--port", str(self.port), *self.extra],
            stdout=subprocess.PIPE,
            text=True,
            # No `preexec_fn` here: the relay is started again mid-test, when
            # gRPC's threads run in this process, and a fork that runs Python
            # code in the child then can fail before the exec. relay.py
            # watches for this process's death itself.
        )
        lines = queue.Queue()
        # The events it refused (relay.py --no-verify, after a SIGUSR1), as
        # it prints them: (id, kind, game or "-").
        self.refused = []
        process = self.process

        def read():
            lines.put(process.stdout.readline())
            for line in process.stdout:
                if line.startswith("refused "):
                    self.refused.append(tuple(line.split()[1:]))

        threading.Thread(target=read, daemon=True).start()
        try:
            line = lines.get(timeout=45).strip()
        except queue.Empty:
            raise AssertionError("the relay did not start within 45 s") from None
        if not line.startswith("ws://"):
            raise AssertionError(f"the relay did not start (exit status {process.poll()}; its error is above)")
        self.url = line

    def rate_limit(self):
        """Has the relay refuse the next three events the server sends it
        (relay.py --no-verify only)."""
        self.process.send_signal(signal.SIGUSR1)

    def kill(self):
        self.process.kill()
        self.process.wait()
        self.process.stdout.close()


class Stack:
    """`chess-stack` with the Nostr bridge on the given relays."""

    def __init__(self, relays):
        self.data = tempfile.TemporaryDirectory(prefix="chess-nostr-")
        args = [STACK_BINARY, "--data-dir", self.data.name, "--log-filter", "warn"]
        # Every listener on a free port.
        for side in ["grpc", "uqchess", "matchmaking", "game", "rating", "engine"]:
            args += [f"--{side}-listen", "127.0.0.1:0"]
        for url in relays:
            args += ["--nostr-relay", url]
        env = dict(os.environ)
        env["CHESS_GATEWAY_REGISTRATIONS_PER_ADDRESS"] = "0"
        env["CHESS_GATEWAY_LOGIN_FAILURES_PER_ADDRESS"] = "0"
        # SIGTERM: chess-stack then stops the services it started.
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=dies_with_us(signal.SIGTERM),
        )
        lines = queue.Queue()

        def read():
            for line in self.process.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        self.gateway = None
        deadline = time.monotonic() + 120
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise AssertionError("chess-stack was not ready within 120 s") from None
            if line is None:
                raise AssertionError(f"chess-stack exited before it was ready: {self.process.wait()}")
            sys.stderr.write(f"[chess-stack] {line}")
            words = line.split()
            if words[:3] == ["public", "gRPC", "API"]:
                self.gateway = words[3]
            if words and words[0] == "Ctrl-C":
                break
        # Keep passing its output on, so that chess-stack never blocks on it.
        def forward():
            while (line := lines.get()) is not None:
                sys.stderr.write(f"[chess-stack] {line}")

        threading.Thread(target=forward, daemon=True).start()
        self.channel = grpc.insecure_channel(self.gateway)
        self.accounts = gw_grpc.AccountServiceStub(self.channel)
        self.play = gw_grpc.PlayServiceStub(self.channel)
        self.nostr = gw_grpc.NostrServiceStub(self.channel)

    def children(self):
        pids = []
        for path in glob.glob(f"/proc/{self.process.pid}/task/*/children"):
            try:
                with open(path) as f:
                    pids += [int(p) for p in f.read().split()]
            except OSError:
                pass
        return pids

    def gateway_pid(self):
        for pid in self.children():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "chess-gateway":
                        return pid
            except OSError:
                pass
        return None

    def info(self):
        return self.nostr.GetNostrInfo(gw.GetNostrInfoRequest(), timeout=5)

    def wait_subscribed(self, timeout=TIMEOUT * 3):
        """Waits until the bridge is subscribed on every relay."""

        def check():
            info = self.info()
            return info if info.relays and all(r.connected and r.subscribed for r in info.relays) else None

        return wait_for(check, "the bridge subscribed on every relay", timeout)

    def wait_relay_down(self, url, timeout=TIMEOUT * 3):
        def check():
            return any(r.url.rstrip("/") == url.rstrip("/") and not r.subscribed for r in self.info().relays)

        return wait_for(check, f"the bridge to notice {url} is down", timeout)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.data.cleanup()


# The relay the players use: nostr-sdk's LocalRelay.
RELAY = None
# A second relay of the server's, which forwards events without checking them
# (relay.py --no-verify): the way to put a bad event in front of the server.
OPEN = None
STACK = None
SERVER = None  # the server's public key, hex


def setUpModule():
    global RELAY, OPEN, STACK, SERVER
    if not os.path.isfile(STACK_BINARY):
        raise RuntimeError(f"{STACK_BINARY} is missing: build it with `cargo build --workspace --bins`")
    RELAY = RelayProcess()
    OPEN = RelayProcess(extra=["--no-verify"])
    try:
        STACK = Stack([RELAY.url, OPEN.url])
        info = STACK.wait_subscribed()
    except BaseException:
        tearDownModule()
        raise
    SERVER = info.public_key


def tearDownModule():
    if STACK is not None:
        STACK.stop()
    for relay in (RELAY, OPEN):
        if relay is not None:
            relay.kill()


# --- Games ----------------------------------------------------------------


def fens(board):
    """The FENs of a position: with the en passant square only when a capture
    is legal (the usual), or after every double step (as FEN defines it)."""
    return {board.fen(en_passant="legal"), board.fen(en_passant="fen"), board.fen(en_passant="xfen")}


class Game:
    """A game between two Nostr players, followed with python-chess."""

    def __init__(self, test, white, black, game_id):
        self.test = test
        self.white = white
        self.black = black
        self.id = game_id
        self.board = chess.Board()
        # Every move event, by UCI, in order, so a test can send one again.
        self.events = []

    @property
    def players(self):
        return [self.white, self.black]

    def mover(self):
        return self.white if self.board.turn == chess.WHITE else self.black

    def move_tags(self):
        return [["d", self.id], ["p", SERVER], ["p", self.white.pubkey], ["p", self.black.pubkey]]

    def sign_move(self, player, uci):
        return player.sign(KIND_MOVE, uci, self.move_tags())

    def is_state(self, event):
        return event.kind == KIND_STATE and event.values("d") == [self.id]

    def check_state(self, event):
        """Asserts the tags of a 20302 of this game."""
        self.test.assertEqual(event.json["pubkey"], SERVER, f"20302 not from the server: {event}")
        self.test.assertEqual(event.tag("d"), ["d", self.id], event)
        self.test.assertEqual(
            event.values("p")[:2], [self.white.pubkey, self.black.pubkey], f"p tags of {event}"
        )

    def expect_position(self, player, what):
        """The next 20302 of this game `player` gets, checked against the board."""
        event = player.expect_kind(KIND_STATE, f"20302 {what}", self.is_state)
        self.check_state(event)
        self.test.assertIsNone(event.tag("result"), f"a result before the game ended: {event}")
        self.test.assertIn(event.content, fens(self.board), f"{what}: FEN of {event}, want {self.board.fen()}")
        return event

    def play(self, uci, player=None):
        """The player to move plays `uci`; both must get the new position."""
        player = player or self.mover()
        event = self.sign_move(player, uci)
        self.events.append((uci, json.loads(event.as_json())))
        player.publish(event)
        self.board.push_uci(uci)
        for p in self.players:
            self.expect_position(p, f"after {uci} ({p.name})")
        return event

    def expect_result(self, result, termination):
        """Both players get the final 20302 with the result tag."""
        for p in self.players:
            event = p.expect_kind(KIND_STATE, f"the final 20302 with the result ({p.name})", self.is_state)
            self.check_state(event)
            self.test.assertEqual(event.tag("result"), ["result", result, termination], event)
            self.test.assertIn(event.content, fens(self.board), event)

    def expect_error(self, sent, players=None, what="20304"):
        """Everyone in the game gets a 20304 about the event `sent` (a JSON
        object): e tag first, then d, p white, p black."""
        for p in players or self.players:
            event = p.expect_kind(
                KIND_ERROR, f"{what} ({p.name})", lambda e: e.values("e") == [sent["id"]]
            )
            self.test.assertEqual(event.json["pubkey"], SERVER, event)
            self.test.assertEqual(
                event.tags[:4],
                [["e", sent["id"]], ["d", self.id], ["p", self.white.pubkey], ["p", self.black.pubkey]],
                f"tags of {event}",
            )
            self.test.assertTrue(event.content, f"a 20304 without a message: {event}")

    def state(self):
        return STACK.play.GetGame(gw.GetGameRequest(game_id=self.id), timeout=10).game

    def expect_refused(self, moves):
        """Each `(player, content, why)` move is answered with a 20304, and
        the game is left as it was."""
        for player, content, why in moves:
            sent = player.send(KIND_MOVE, content, self.move_tags())
            self.expect_error(sent, what=f"20304 for {why} {content!r}")
        self.assert_unchanged()

    def assert_unchanged(self):
        game = self.state()
        self.test.assertEqual(game.ply, len(self.board.move_stack), f"GetGame: {game}")
        self.test.assertEqual([m.uci for m in game.moves], [m.uci() for m in self.board.move_stack])
        self.test.assertIn(game.fen, fens(self.board))

    def expect_quiet(self, seconds=QUIET):
        """Neither player gets a 20302 of this game nor a 20304 in `seconds`."""
        deadline = time.monotonic() + seconds
        for p in self.players:
            p.expect_nothing(
                max(0.5, deadline - time.monotonic()),
                lambda e: self.is_state(e) or e.kind == KIND_ERROR,
                "20302/20304",
            )


class NostrTestCase(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.players = []

    def tearDown(self):
        for p in self.players:
            p.close()

    def run(self, result=None):
        result = result or self.defaultTestResult()
        failed = len(result.failures) + len(result.errors)
        outcome = super().run(result)
        if len(result.failures) + len(result.errors) > failed:
            sweep()
        return outcome

    def player(self, name, relays=None):
        p = Player(relays or [RELAY.url], name)
        p.wait_subscribed()
        self.players.append(p)
        return p

    def pair(self, first, second):
        """`first` asks to play, then `second`: a game with `first` white."""
        request = first.request_game(SERVER)
        reply = first.expect_kind(KIND_REPLY, "20301 queued")
        self.assertEqual(reply.content, "queued", f"the first request's answer: {reply} (to {request})")
        self.assertEqual(reply.json["pubkey"], SERVER, reply)
        self.assertEqual(reply.tags, [["p", first.pubkey]], reply)
        second.request_game(SERVER)
        started = {}
        for p, opponent, colour in [(first, second, "w"), (second, first, "b")]:
            reply = p.expect_kind(KIND_REPLY, f"20301 started ({p.name})")
            self.assertEqual(reply.tags, [["p", p.pubkey]], reply)
            parts = reply.content.split(":")
            self.assertEqual(len(parts), 4, reply)
            self.assertEqual(parts[0], "started", reply)
            self.assertEqual(parts[2:], [opponent.pubkey, colour], reply)
            started[p.name] = parts[1]
        self.assertEqual(started[first.name], started[second.name], "both were told the same game")
        game = Game(self, first, second, started[first.name])
        for p in game.players:
            game.expect_position(p, f"at the start ({p.name})")
        return game


def sweep():
    """Empties the server's queue of Nostr players, which a failed test may
    have left someone waiting in (the next test's pairing would meet them):
    a fresh key asks to play; if it waits, another one joins it."""
    players = []
    try:
        for name in ("sweeper-1", "sweeper-2"):
            p = Player([RELAY.url], name)
            players.append(p)
            p.wait_subscribed()
            p.request_game(SERVER)
            if p.expect_kind(KIND_REPLY, "20301").content != "queued":
                return
    except AssertionError as error:
        sys.stderr.write(f"could not empty the queue of Nostr players: {error}\n")
    finally:
        for p in players:
            p.close()


# --- The cases ------------------------------------------------------------


FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]
SCHOLARS_MATE = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]


class Test1Nostr(NostrTestCase):
    def test_00_info(self):
        """GetNostrInfo: the server's key and the relay, subscribed."""
        info = STACK.info()
        self.assertTrue(info.enabled, info)
        self.assertRegex(info.public_key, r"^[0-9a-f]{64}$")
        self.assertTrue(info.npub.startswith("npub1"), info)
        from nostr_sdk import PublicKey

        self.assertEqual(PublicKey.parse(info.npub).to_hex(), info.public_key, "npub and hex differ")
        self.assertEqual(sorted(r.url.rstrip("/") for r in info.relays), sorted([RELAY.url, OPEN.url]), info)
        self.assertTrue(all(r.connected and r.subscribed for r in info.relays), info)

    def test_01_checkmate(self):
        """Two players pair and play fool's mate; each move gives the right
        FEN; the end gives the result tag."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        for uci in FOOLS_MATE:
            game.play(uci)
        self.assertTrue(game.board.is_checkmate())
        game.expect_result("0-1", "checkmate")
        state = game.state()
        self.assertEqual(state.status, common.GAME_STATUS_FINISHED, state)
        self.assertEqual(state.result, common.GAME_RESULT_BLACK_WINS, state)
        self.assertEqual(state.termination, common.TERMINATION_CHECKMATE, state)
        self.assertEqual(state.white.guest.guest_id, f"nostr-{white.pubkey}", state.white)
        self.assertEqual(state.black.guest.guest_id, f"nostr-{black.pubkey}", state.black)
        self.assertFalse(state.rated, state)
        self.assertEqual(state.time_control.incremental.initial_seconds, 15 * 60, state.time_control)
        self.assertEqual(state.time_control.incremental.increment_seconds, 10, state.time_control)

    def test_01b_promotion_and_resignation(self):
        """A promotion, sent in upper case as the protocol allows (`b7a8Q`),
        then `quit`."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        for uci in ["e2e4", "d7d5", "e4d5", "c7c6", "d5c6", "g8f6", "c6b7", "b8d7"]:
            game.play(uci)
        event = game.sign_move(white, "b7a8Q")
        white.publish(event)
        game.board.push_uci("b7a8q")
        for p in game.players:
            game.expect_position(p, f"after b7a8Q ({p.name})")
        self.assertEqual(game.state().moves[-1].uci, "b7a8q")
        black.send(KIND_MOVE, "quit", game.move_tags())
        game.expect_result("1-0", "resignation")

    def test_01c_asking_twice_while_waiting(self):
        """A key asking again while it waits keeps its place: `queued` again,
        and one game when an opponent comes."""
        first, second = self.player("first"), self.player("second")
        first.request_game(SERVER)
        self.assertEqual(first.expect_kind(KIND_REPLY, "20301 queued").content, "queued")
        # In the next second: the same request in the same second would be
        # the same event (same id), which the server rightly handles once.
        time.sleep(1.1)
        first.request_game(SERVER)
        self.assertEqual(first.expect_kind(KIND_REPLY, "20301 queued again").content, "queued")
        second.request_game(SERVER)
        started = first.expect_kind(KIND_REPLY, "20301 started")
        self.assertEqual(started.content.split(":")[2:], [second.pubkey, "w"], started)
        game_id = started.content.split(":")[1]
        started = second.expect_kind(KIND_REPLY, "20301 started")
        self.assertEqual(started.content.split(":")[1:], [game_id, first.pubkey, "b"], started)
        game = Game(self, first, second, game_id)
        for p in game.players:
            game.expect_position(p, f"at the start ({p.name})")
        first.expect_nothing(QUIET, lambda e: e.kind == KIND_REPLY, "second 20301")
        game.play("e2e4")
        second.send(KIND_MOVE, "quit", game.move_tags())
        game.expect_result("1-0", "resignation")

    def test_02_move_by_a_third_player(self):
        """A move in someone else's game gets a 20304 and changes nothing."""
        white, black, intruder = self.player("white"), self.player("black"), self.player("intruder")
        game = self.pair(white, black)
        game.play("e2e4")
        sent = intruder.send(KIND_MOVE, "e7e5", game.move_tags())
        game.expect_error(sent, what="20304 for the intruder's move")
        # The intruder hears of it too: docs/nostr.md adds their p tag.
        event = intruder.expect_kind(
            KIND_ERROR, "20304 for the intruder's own move", lambda e: e.values("e") == [sent["id"]]
        )
        self.assertEqual(
            event.tags,
            [
                ["e", sent["id"]],
                ["d", game.id],
                ["p", white.pubkey],
                ["p", black.pubkey],
                ["p", intruder.pubkey],
            ],
            event,
        )
        game.assert_unchanged()
        game.expect_quiet()
        # Also while it is white's turn, with white's move.
        game.play("e7e5")
        sent = intruder.send(KIND_MOVE, "g1f3", game.move_tags())
        game.expect_error(sent, what="20304 for the intruder's move")
        game.assert_unchanged()
        game.play("g1f3")

    def test_03_illegal_and_out_of_turn_moves(self):
        """Illegal moves, moves out of turn and nonsense get a 20304 each and
        change nothing; the game goes on."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        game.expect_refused([
            (white, "e2e5", "illegal"),
            (white, "e1e2", "illegal (own piece there)"),
            (black, "e7e5", "out of turn"),
            (white, "castle", "not a move"),
            (white, "Nf3", "SAN (long algebraic only)"),
            (white, "", "empty"),
        ])
        game.play("e2e4")
        game.expect_refused([
            (white, "d2d4", "out of turn"),
            (black, "e5e4", "illegal"),
            (black, "e7e4", "illegal"),
        ])
        game.expect_quiet()
        game.play("e7e5")
        game.play("g1f3")

    def test_03d_events_out_of_date(self):
        """Moves dated more than an hour ago or more than 15 minutes ahead are
        ignored (sent through both relays, in case one refuses them)."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        now = int(time.time())
        for created_at, why in [(now - 2 * 3600, "two hours old"), (now + 3600, "an hour ahead")]:
            event = white.sign(KIND_MOVE, "e2e4", game.move_tags(), created_at=created_at)
            for relay in (RELAY, OPEN):
                with RawSocket(relay.url) as raw:
                    answer = relay_answer(raw, json.loads(event.as_json()))
                sys.stderr.write(f"{relay.url} answered {answer} to a move {why}\n")
            game.expect_quiet()
            game.assert_unchanged()
        game.play("e2e4")

    def test_03b_move_for_an_unknown_game(self):
        """A move for a game that does not exist: 20304 with the e tag and the
        author's p tag."""
        lost = self.player("lost")
        unknown = str(uuid.uuid4())
        tags = [["d", unknown], ["p", SERVER], ["p", lost.pubkey], ["p", lost.pubkey]]
        sent = lost.send(KIND_MOVE, "e2e4", tags)
        event = lost.expect_kind(
            KIND_ERROR, "20304 for an unknown game", lambda e: e.values("e") == [sent["id"]]
        )
        self.assertEqual(event.tags[0], ["e", sent["id"]], event)
        self.assertIn(["p", lost.pubkey], event.tags, event)

    def test_03c_not_addressed_to_the_server(self):
        """Events without the server's p tag are not for it: no answer."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        white.send(KIND_MOVE, "e2e4", [["d", game.id], ["p", white.pubkey], ["p", black.pubkey]])
        game.expect_quiet()
        game.assert_unchanged()
        loner = self.player("loner")
        loner.send(KIND_REQUEST, "", [["p", loner.pubkey]])
        loner.expect_nothing(QUIET, what="answer to a request not addressed to the server")
        game.play("e2e4")

    def test_04_duplicate_event(self):
        """The same signed event sent again (on the same client and on a
        second connection) has one effect only."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        event = game.play("e2e4")
        sent = json.loads(event.as_json())
        # Again, on a second connection, twice, and on the player's client.
        with RawSocket(RELAY.url) as raw:
            for _ in range(2):
                ok = raw.publish(sent)
                self.assertTrue(ok[2], f"the relay refused the duplicate: {ok}")
        white.publish(event)
        game.expect_quiet()
        game.assert_unchanged()
        # Sent twice at once, both before any answer: still one move.
        reply = game.sign_move(black, "e7e5")
        reply_json = json.loads(reply.as_json())
        with RawSocket(RELAY.url) as raw:
            raw.send(["EVENT", reply_json])
            black.publish(reply)
        game.board.push_uci("e7e5")
        for p in game.players:
            game.expect_position(p, f"after e7e5 ({p.name})")
        game.expect_quiet()
        game.assert_unchanged()
        game.play("g1f3")

    def test_04b_two_relays(self):
        """A player on both of the server's relays: the server gets each of
        its events twice, and acts once."""
        white = self.player("white", [RELAY.url, OPEN.url])
        black = self.player("black")
        game = self.pair(white, black)
        for uci in FOOLS_MATE:
            game.play(uci)
        game.expect_result("0-1", "checkmate")
        game.expect_quiet()
        game.assert_unchanged()
        # White heard everything from both relays, once per event id.
        states = [e for e in white.history if game.is_state(e)]
        self.assertEqual(len(states), len(FOOLS_MATE) + 2, states)
        self.assertTrue(all(white.deliveries[e.id] == 2 for e in states), white.deliveries)

    def test_05_bad_signature(self):
        """An event whose id or signature does not verify is ignored: no
        answer at all, the game unchanged."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        for tamper, why in [
            (lambda e: dict(e, sig=flip(e["sig"])), "a tampered signature"),
            (lambda e: dict(e, content="d2d4"), "content changed after signing"),
            (lambda e: dict(e, sig="00" * 64), "a zero signature"),
            (lambda e: dict(e, id=flip(e["id"])), "a wrong id"),
            (lambda e: {k: v for k, v in e.items() if k != "sig"}, "no signature"),
        ]:
            good = json.loads(game.sign_move(white, "e2e4").as_json())
            bad = tamper(good)
            # nostr-sdk's LocalRelay checks events itself and refuses these;
            # the open relay forwards them to the server as they are.
            for relay, refused in [(RELAY, True), (OPEN, False)]:
                with RawSocket(relay.url) as raw:
                    ok = relay_answer(raw, bad)
                sys.stderr.write(f"{relay.url} answered {ok} to an event with {why}\n")
                if ok is not None and ok[0] == "OK":
                    self.assertEqual(ok[2], not refused, f"{relay.url} answered {ok} to an event with {why}")
            game.expect_quiet()
            game.assert_unchanged()
        # The same path with a good event works: the open relay does reach
        # the server.
        event = game.sign_move(white, "e2e4")
        with RawSocket(OPEN.url) as raw:
            self.assertTrue(raw.publish(json.loads(event.as_json()))[2])
        game.board.push_uci("e2e4")
        for p in game.players:
            game.expect_position(p, f"after e2e4 through the open relay ({p.name})")
        game.play("e7e5")

    def test_06_relay_restart(self):
        """The relay dies mid-game (the bridge sees it go) and comes back on
        the same port: once the bridge is subscribed again, the game goes on
        to the end."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        for uci in SCHOLARS_MATE[:3]:
            game.play(uci)
        eose = {p.name: p.eose for p in game.players}
        RELAY.kill()
        STACK.wait_relay_down(RELAY.url)
        RELAY.start()
        STACK.wait_subscribed()
        for p in game.players:
            p.wait_subscribed(after=eose[p.name], count=1)
        for uci in SCHOLARS_MATE[3:]:
            game.play(uci)
        self.assertTrue(game.board.is_checkmate())
        game.expect_result("1-0", "checkmate")

    def test_06b_relay_refuses_events(self):
        """A relay that answers `OK false` (rate-limited) gets the same event
        again until it takes it: players on that relay alone still hear every
        position, none lost, none out of order."""
        white = self.player("white", [OPEN.url])
        black = self.player("black", [OPEN.url])
        game = self.pair(white, black)
        for uci in ["e2e4", "e7e5"]:
            refused_before = len(OPEN.refused)
            OPEN.rate_limit()
            game.play(uci)
            # The position after the move was refused, then sent again until
            # taken (the relay may have refused other events meanwhile).
            wait_for(lambda: len(OPEN.refused) >= refused_before + 3, "the open relay to refuse three events")
            position = [e for e in white.history if game.is_state(e)][-1]
            refused = [r for r in OPEN.refused[refused_before:] if r[2] == game.id]
            self.assertIn((position.id, str(KIND_STATE), game.id), refused, f"refused {OPEN.refused}")
        game.play("g1f3")
        self.assertEqual(len([e for e in black.history if game.is_state(e)]), 4)
        white.send(KIND_MOVE, "quit", game.move_tags())
        game.expect_result("0-1", "resignation")

    def test_07_gateway_restart(self):
        """The gateway is killed mid-game and restarted by chess-stack: once
        subscribed again, the next move works, and an event handled before
        the kill is still not handled twice."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        game.play("e2e4")
        (_, first_move) = game.events[0]
        old = STACK.gateway_pid()
        self.assertIsNotNone(old, f"no chess-gateway among chess-stack's children {STACK.children()}")
        os.kill(old, signal.SIGKILL)
        wait_for(lambda: (STACK.gateway_pid() or old) != old, "chess-stack to start a new gateway")
        STACK.wait_subscribed()
        # The move before the kill, again: the new gateway knows it.
        with RawSocket(RELAY.url) as raw:
            raw.publish(first_move)
        game.expect_quiet()
        game.assert_unchanged()
        game.play("e7e5")
        game.play("f1c4")
        # And again, now that the game went on: still nothing.
        with RawSocket(RELAY.url) as raw:
            raw.publish(first_move)
        game.expect_quiet()
        game.assert_unchanged()
        for uci in ["b8c6", "d1h5", "g8f6", "h5f7"]:
            game.play(uci)
        game.expect_result("1-0", "checkmate")

    def test_08_finished_game_refuses_moves(self):
        """After the end (checkmate, or resignation with `quit`), a move gets a
        20304."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        for uci in FOOLS_MATE:
            game.play(uci)
        game.expect_result("0-1", "checkmate")
        sent = white.send(KIND_MOVE, "a2a3", game.move_tags())
        game.expect_error(sent, what="20304 for a move after checkmate")
        game.assert_unchanged()

        white, black = self.player("white2"), self.player("black2")
        game = self.pair(white, black)
        game.play("e2e4")
        black.send(KIND_MOVE, "quit", game.move_tags())
        game.expect_result("1-0", "resignation")
        state = game.state()
        self.assertEqual(state.status, common.GAME_STATUS_FINISHED, state)
        self.assertEqual(state.termination, common.TERMINATION_RESIGNATION, state)
        for player, content in [(black, "e7e5"), (white, "d2d4"), (white, "quit")]:
            sent = player.send(KIND_MOVE, content, game.move_tags())
            game.expect_error(sent, what=f"20304 for {content} after resigning")
        game.assert_unchanged()

    def test_09_visible_over_grpc(self):
        """A Nostr game is an ordinary game: GetGame and ExportPgn show it."""
        white, black = self.player("white"), self.player("black")
        game = self.pair(white, black)
        state = game.state()
        self.assertEqual(state.status, common.GAME_STATUS_ACTIVE, state)
        self.assertEqual(state.fen, START_FEN, state)
        for uci in SCHOLARS_MATE:
            game.play(uci)
        game.expect_result("1-0", "checkmate")
        state = game.state()
        self.assertEqual([m.uci for m in state.moves], SCHOLARS_MATE)
        self.assertEqual(state.ply, len(SCHOLARS_MATE))
        self.assertIn(state.fen, fens(game.board))
        self.assertEqual(state.result, common.GAME_RESULT_WHITE_WINS, state)
        self.assertEqual(state.termination, common.TERMINATION_CHECKMATE, state)
        self.assertEqual(state.white.guest.guest_id, f"nostr-{white.pubkey}", state.white)
        self.assertEqual(state.black.guest.guest_id, f"nostr-{black.pubkey}", state.black)
        pgn = STACK.play.ExportPgn(gw.ExportPgnRequest(game_id=game.id), timeout=10).pgn
        parsed = chess.pgn.read_game(io.StringIO(pgn))
        self.assertIsNotNone(parsed, pgn)
        self.assertEqual([m.uci() for m in parsed.mainline_moves()], SCHOLARS_MATE, pgn)
        self.assertEqual(parsed.headers.get("Result"), "1-0", pgn)
        self.assertEqual(parsed.errors, [], pgn)


def relay_answer(raw, event, timeout=5):
    """Sends an event and returns the relay's first answer (OK or NOTICE),
    or None if none comes within `timeout` seconds (a relay may not answer
    an event it cannot parse)."""
    raw.send(["EVENT", event])
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            message = raw.recv(timeout=left)
        except OSError:
            return None
        if message and message[0] in ("OK", "NOTICE"):
            return message


def flip(hex_string):
    """The hex string with its first digit changed."""
    return ("1" if hex_string[0] == "0" else "0") + hex_string[1:]


# --- Nostr and gRPC players together ----------------------------------------


class Account:
    """A registered account, signed in over gRPC."""

    def __init__(self, prefix):
        self.name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        STACK.accounts.Register(
            gw.RegisterRequest(username=self.name, email=f"{self.name}@example.org", password=PASSWORD),
            timeout=10,
        )
        login = STACK.accounts.Login(gw.LoginRequest(login=self.name, password=PASSWORD), timeout=10)
        self.id = login.player_id
        self.metadata = [("authorization", f"Bearer {login.token}")]

    def link_proof(self, player, challenge=None, tags=None, kind=22242, created_at=None):
        tags = tags if tags is not None else [["p", SERVER], ["challenge", challenge or f"link:{self.name}"]]
        event = player.sign(kind, "", tags, created_at=created_at)
        return event.as_json()

    def link(self, event_json):
        return STACK.nostr.LinkNostrKey(
            gw.LinkNostrKeyRequest(event=event_json), metadata=self.metadata, timeout=10
        )

    def move(self, game_id, uci):
        return STACK.play.MakeMove(
            gw.MakeMoveRequest(game_id=game_id, move=uci), metadata=self.metadata, timeout=10
        )


class Watch:
    """PlayService.WatchGame read on a thread: every move it tells of, by ply.

    The call starts when the thread first reads it, so moves made before
    then come in its first message, the snapshot, rather than as MoveMade
    events: both count."""

    def __init__(self, game_id):
        self.call = STACK.play.WatchGame(gw.WatchGameRequest(game_id=game_id))
        self.queue = queue.Queue()
        self.seen = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for response in self.call:
                self.queue.put(response.event)
        except grpc.RpcError:
            pass

    def move(self, ply, timeout=TIMEOUT):
        """The UCI of the move of ply `ply`."""
        deadline = time.monotonic() + timeout
        while ply not in self.seen:
            try:
                event = self.queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"WatchGame: no move of ply {ply} within {timeout} s") from None
            kind = event.WhichOneof("kind")
            if kind == "snapshot":
                for m in event.snapshot.moves:
                    self.seen[m.ply] = m.uci
            elif kind == "move_made":
                self.seen[event.ply] = event.move_made.move.uci
        return self.seen[ply]

    def close(self):
        self.call.cancel()


class Test2Linked(NostrTestCase):
    def assert_refused(self, call, what):
        with self.assertRaises(grpc.RpcError, msg=what) as refused:
            call()
        self.assertIn(
            refused.exception.code(),
            (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED),
            f"{what}: {refused.exception.code()} {refused.exception.details()}",
        )
        return refused.exception

    def test_10a_bad_link_proofs(self):
        """LinkNostrKey refuses a proof with the wrong challenge, kind, server,
        signature or age, and an unsigned-in call."""
        account = Account("linker")
        key = self.player("key")
        other = Account("other")
        good = json.loads(account.link_proof(key))
        cases = [
            (account.link_proof(key, challenge=f"link:{other.name}"), "another user's challenge"),
            (account.link_proof(key, challenge="link:"), "an empty challenge"),
            (account.link_proof(key, tags=[["p", SERVER]]), "no challenge"),
            (
                account.link_proof(key, tags=[["p", key.pubkey], ["challenge", f"link:{account.name}"]]),
                "another server",
            ),
            (account.link_proof(key, kind=1), "the wrong kind"),
            (json.dumps(dict(good, sig=flip(good["sig"]))), "a tampered signature"),
            (json.dumps(dict(good, content="x")), "content changed after signing"),
            (json.dumps(dict(good, id=flip(good["id"]))), "a wrong id"),
            (account.link_proof(key, created_at=int(time.time()) - 3600), "an hour old"),
            ("not json", "not JSON"),
        ]
        for proof, what in cases:
            self.assert_refused(lambda: account.link(proof), f"a link proof with {what}")
        with self.assertRaises(grpc.RpcError) as refused:
            STACK.nostr.LinkNostrKey(gw.LinkNostrKeyRequest(event=json.dumps(good)), timeout=10)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.UNAUTHENTICATED, refused.exception.details())
        # The good one works, once: another account cannot take the key.
        account.link(json.dumps(good))
        with self.assertRaises(grpc.RpcError) as refused:
            other.link(other.link_proof(key))
        self.assertEqual(refused.exception.code(), grpc.StatusCode.ALREADY_EXISTS, refused.exception.details())

    def linked_game(self, linked_white):
        account = Account("linked")
        key = self.player("linked-key")
        account.link(account.link_proof(key))
        guest = self.player("guest")
        if linked_white:
            game = self.pair(key, guest)
        else:
            game = self.pair(guest, key)
        state = game.state()
        linked_side, guest_side = (state.white, state.black) if linked_white else (state.black, state.white)
        self.assertEqual(linked_side.registered.player_id, account.id, state)
        self.assertEqual(linked_side.registered.username, account.name, state)
        self.assertEqual(guest_side.guest.guest_id, f"nostr-{guest.pubkey}", state)
        watch = Watch(game.id)
        try:
            for ply, uci in enumerate(SCHOLARS_MATE if linked_white else FOOLS_MATE, start=1):
                if game.mover() is key:
                    # The account plays over gRPC; the Nostr opponent sees it.
                    account.move(game.id, uci)
                    game.board.push_uci(uci)
                    for p in game.players:
                        game.expect_position(p, f"after the account's {uci} ({p.name})")
                else:
                    # The guest plays over Nostr; the account sees it over gRPC.
                    game.play(uci)
                self.assertEqual(watch.move(ply), uci)
                self.assertEqual(game.state().ply, ply)
        finally:
            watch.close()
        game.expect_result("1-0" if linked_white else "0-1", "checkmate")
        # The account's games list has it.
        games = STACK.play.ListMyGames(
            gw.ListMyGamesRequest(filter=gw.GAME_FILTER_ALL), metadata=account.metadata, timeout=10
        )
        self.assertIn(game.id, [g.game_id for g in games.games], games)
        return account, key, game

    def test_10d_unlinked_key_plays_as_a_guest(self):
        """After UnlinkNostrKey the key is a guest again."""
        account = Account("unlinker")
        key = self.player("key")
        account.link(account.link_proof(key))
        STACK.nostr.UnlinkNostrKey(gw.UnlinkNostrKeyRequest(), metadata=account.metadata, timeout=10)
        guest = self.player("guest")
        game = self.pair(key, guest)
        state = game.state()
        self.assertEqual(state.white.guest.guest_id, f"nostr-{key.pubkey}", state.white)
        game.play("e2e4")
        key.send(KIND_MOVE, "quit", game.move_tags())
        game.expect_result("0-1", "resignation")

    def test_10b_linked_account_plays_white_over_grpc(self):
        self.linked_game(linked_white=True)

    def test_10c_linked_account_plays_black_over_grpc(self):
        self.linked_game(linked_white=False)


if __name__ == "__main__":
    unittest.main(verbosity=2)
