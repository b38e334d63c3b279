"""Every method of the public API, called with odd requests built at random.

Each request is a message of the method's own type, its fields filled or
left out at random: the ids of real challenges and games mixed with
unknown, empty, overlong and non-ASCII strings, numbers at their limits,
enum values the API does not define, and now and then bytes that are not a
message at all. Calls go out with a valid session, a forged one, or none.
Whatever the request, the answer must be an ordinary one: a response, or a
status that says what was wrong. A status of INTERNAL, UNKNOWN,
UNAVAILABLE, DATA_LOSS or UNIMPLEMENTED, an empty error message, or a
unary call left unanswered fails the test. Afterwards two players must
still be able to start a game and play it.

The system must already be running (see test_public_api.py for the
environment). `cargo test -p chess-e2e --test public_api_python` starts it
and runs this file. CHESS_E2E_SEED picks another sequence of requests,
CHESS_E2E_CALLS another number of them.
"""

import collections
import os
import random
import sys
import unittest

import grpc
from google.protobuf import descriptor, symbol_database

from test_public_api import ACCOUNTS, CHANNEL, LOBBY, PLAY, TIMEOUT, User, common, gw

SEED = int(os.environ.get("CHESS_E2E_SEED", "20261129"))
CALLS = int(os.environ.get("CHESS_E2E_CALLS", "3000"))
SERVICES = ["AccountService", "LobbyService", "PlayService", "NostrService"]
# Methods that end or change the session they are called with get a session
# of their own, so that the rest keep a valid one.
SESSION_ENDING = {"Logout", "LogoutEverywhere", "ChangePassword"}
NOT_ORDINARY = {
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DATA_LOSS,
    grpc.StatusCode.UNIMPLEMENTED,
}
F = descriptor.FieldDescriptor


def untimed():
    return common.TimeControl(untimed=common.Untimed())


class OddRequests:
    """The random requests, and the real objects their strings come from."""

    def __init__(self, rng, players, known):
        self.rng = rng
        self.players = players
        self.strings = known + [
            "",
            " ",
            "e2e4",
            "e7e5",
            "g1f3",
            "e1g1",
            "a7a8q",
            "e2e4e",
            "zzzz",
            "x" * 5000,
            "\u00e9\u4e2d\U0001f600",
            "\x00",
            "-1",
            "00000000-0000-0000-0000-000000000000",
            "../../etc/passwd",
            "'; DROP TABLE games; --",
            "npub1" + "q" * 58,
            "f" * 64,
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        ]

    def string(self):
        pick = self.rng.random()
        if pick < 0.7:
            return self.rng.choice(self.strings)
        if pick < 0.9:
            return "".join(chr(self.rng.randrange(32, 0x2FFF)) for _ in range(self.rng.randint(0, 30)))
        return self.rng.choice(self.strings) + self.rng.choice(self.strings)

    def scalar(self, field):
        rng = self.rng
        kind = field.type
        if kind == F.TYPE_STRING:
            return self.string()
        if kind == F.TYPE_BYTES:
            return bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
        if kind == F.TYPE_BOOL:
            return rng.random() < 0.5
        if kind == F.TYPE_ENUM:
            return rng.choice([0, 1, 2, 3, 4, 99, -1])
        if kind in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
            return rng.choice([0.0, -1.0, 3.5, 1e308, float("nan"), float("inf")])
        if kind in (F.TYPE_UINT32, F.TYPE_FIXED32):
            return rng.choice([0, 1, 2, 60, 100, 2**32 - 1, rng.randrange(2**32)])
        if kind in (F.TYPE_UINT64, F.TYPE_FIXED64):
            return rng.choice([0, 1, 2, 60, 100, 2**64 - 1, rng.randrange(2**64)])
        if kind in (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32):
            return rng.choice([0, 1, -1, 60, 300, 2**31 - 1, -(2**31)])
        return rng.choice([0, 1, -1, 60, 300, 2**63 - 1, -(2**63)])

    def fill(self, message, depth=0):
        """Sets a random subset of `message`'s fields, recursively."""
        for field in message.DESCRIPTOR.fields:
            if self.rng.random() < 0.4:
                continue
            repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == F.LABEL_REPEATED
            for _ in range(self.rng.randint(1, 3) if repeated else 1):
                if field.type == F.TYPE_MESSAGE:
                    if depth >= 3:
                        break
                    if repeated:
                        inner = getattr(message, field.name).add()
                    else:
                        inner = getattr(message, field.name)
                        inner.SetInParent()
                    self.fill(inner, depth + 1)
                    continue
                value = self.scalar(field)
                try:
                    if repeated:
                        getattr(message, field.name).append(value)
                    else:
                        setattr(message, field.name, value)
                except (TypeError, ValueError):
                    # A value the Python type refuses (an enum outside a
                    # closed enum): the field stays unset.
                    pass
        return message

    def body(self, request_type):
        if self.rng.random() < 0.15:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randint(0, 100)))
        return self.fill(request_type()).SerializeToString()

    def metadata(self, method):
        pick = self.rng.random()
        if pick < 0.8:
            player = self.players["spare"] if method in SESSION_ENDING else self.rng.choice(self.players["regular"])
            return player.metadata
        if pick < 0.95:
            token = self.players["regular"][0].metadata[0][1]
            forged = self.rng.choice(["Bearer x", "Basic YTpi", token[:-2] + "zz", token.lower(), "Bearer"])
            return [("authorization", forged)]
        return []


def methods():
    """(path, descriptor, request type, response type) of every public method."""
    symbols = symbol_database.Default()
    found = []
    for name in SERVICES:
        service = gw.DESCRIPTOR.services_by_name[name]
        for method in service.methods:
            found.append(
                (
                    f"/{service.full_name}/{method.name}",
                    method,
                    symbols.GetSymbol(method.input_type.full_name),
                    symbols.GetSymbol(method.output_type.full_name),
                )
            )
    return found


class OddRequestsTest(unittest.TestCase):
    def test_odd_requests_get_ordinary_answers_and_play_goes_on(self):
        alice, bob, spare = User("odd_a"), User("odd_b"), User("odd_c")
        # Signed up first: the random calls to Register use up the address's
        # allowance of new accounts.
        carol, dave = User("odd_d"), User("odd_e")
        known = [alice.name, bob.name, alice.id, bob.id]
        for _ in range(3):
            challenge = LOBBY.CreateChallenge(
                gw.CreateChallengeRequest(opponent_username=bob.name, time_control=untimed()),
                metadata=alice.metadata,
            ).challenge
            accepted = LOBBY.AcceptChallenge(
                gw.AcceptChallengeRequest(challenge_id=challenge.challenge_id), metadata=bob.metadata
            ).challenge
            known += [challenge.challenge_id, accepted.game_id]
        pending = LOBBY.CreateChallenge(
            gw.CreateChallengeRequest(opponent_username=alice.name, time_control=untimed()),
            metadata=bob.metadata,
        ).challenge
        known.append(pending.challenge_id)

        rng = random.Random(SEED)
        odd = OddRequests(rng, {"regular": [alice, bob], "spare": spare}, known)
        every = methods()
        answered, faults = collections.Counter(), []
        for _ in range(CALLS):
            path, method, request_type, response_type = rng.choice(every)
            body = odd.body(request_type)
            metadata = odd.metadata(method.name)
            try:
                if method.server_streaming:
                    call = CHANNEL.unary_stream(path, response_deserializer=response_type.FromString)(
                        body, metadata=metadata, timeout=0.3
                    )
                    for count, _ in enumerate(call):
                        if count >= 3:
                            call.cancel()
                            break
                else:
                    CHANNEL.unary_unary(path, response_deserializer=response_type.FromString)(
                        body, metadata=metadata, timeout=TIMEOUT
                    )
                code = grpc.StatusCode.OK
            except grpc.RpcError as error:
                code = error.code()
                streaming_end = method.server_streaming and code in (
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    grpc.StatusCode.CANCELLED,
                )
                if not streaming_end and (
                    code in NOT_ORDINARY or code == grpc.StatusCode.DEADLINE_EXCEEDED or not error.details()
                ):
                    faults.append(f"{method.name}: {code.name} {error.details()!r} for body {body[:60]!r}")
            answered[(method.name, code.name)] += 1

        summary = ", ".join(f"{m} {c} {n}" for (m, c), n in sorted(answered.items()))
        print(f"seed {SEED}, {CALLS} calls: {summary}", file=sys.stderr)
        self.assertEqual(faults, [], f"seed {SEED}: calls answered out of the ordinary")
        # Every method was called, and some calls were accepted.
        self.assertEqual({m for m, _ in answered}, {method.name for _, method, _, _ in every})
        self.assertTrue(any(c == "OK" for _, c in answered), "no call succeeded")

        # Nothing the calls did stops two players from playing.
        challenge = LOBBY.CreateChallenge(
            gw.CreateChallengeRequest(
                opponent_username=dave.name, time_control=untimed(), color=common.COLOR_CHOICE_WHITE
            ),
            metadata=carol.metadata,
        ).challenge
        game_id = LOBBY.AcceptChallenge(
            gw.AcceptChallengeRequest(challenge_id=challenge.challenge_id), metadata=dave.metadata
        ).challenge.game_id
        PLAY.MakeMove(gw.MakeMoveRequest(game_id=game_id, move="e2e4"), metadata=carol.metadata)
        PLAY.MakeMove(gw.MakeMoveRequest(game_id=game_id, move="e7e5"), metadata=dave.metadata)
        game = PLAY.GetGame(gw.GetGameRequest(game_id=game_id), metadata=carol.metadata).game
        self.assertEqual(game.ply, 2)
        self.assertEqual(game.fen, "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2")
        me = ACCOUNTS.Me(gw.MeRequest(), metadata=alice.metadata)
        self.assertEqual(me.profile.username, alice.name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
