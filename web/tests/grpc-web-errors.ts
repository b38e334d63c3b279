// Refusals as a gRPC-Web client sees them, through the page's own client
// code (src/api.ts): for each case, one JSON line with the status code, the
// `chess-reason` and the sentence `describeError` makes of it. Run against
// a live stack by tests/tests/web.rs (which checks the lines): bundled with
// esbuild for Node, with CHESS_WEB_URL set to the page's address.
import "./node-globals.js";
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { accounts, describeError, lobby, play, reasonOf, setSession } from "../src/api.js";
import { ColorChoice, TimeControlSchema } from "../src/gen/chess/common/v1/common_pb.js";

declare const process: { exitCode?: number };

/** A well-formed game id no game has. */
const UNKNOWN_GAME = "00000000-0000-4000-8000-000000000000";

interface Outcome {
  case: string;
  code?: number;
  reason?: string;
  message?: string;
  described?: string;
  error?: string;
}

/** Runs `call`, which must be refused, and prints what the client saw. */
async function refused(name: string, call: () => Promise<unknown>): Promise<void> {
  const outcome: Outcome = { case: name };
  try {
    await call();
    outcome.error = "the call succeeded";
  } catch (e) {
    if (e instanceof ConnectError) {
      outcome.code = e.code;
      outcome.reason = reasonOf(e);
      outcome.message = e.rawMessage;
    } else {
      outcome.error = `not a ConnectError: ${String(e)}`;
    }
    outcome.described = describeError(e);
  }
  console.log(JSON.stringify(outcome));
}

async function signIn(username: string, password: string): Promise<void> {
  const r = await accounts.login({ login: username, password });
  setSession({ token: r.token, playerId: r.playerId, username: r.username, expiresAt: Date.now() + 3_600_000 });
}

async function main(): Promise<void> {
  const password = "correct horse battery";
  const tag = Math.random().toString(36).slice(2, 10);
  const [white, black] = [`w${tag}`, `b${tag}`];
  for (const username of [white, black]) {
    await accounts.register({ username, email: `${username}@example.com`, password });
  }

  await refused("wrong-password", () => accounts.login({ login: white, password: "not the password" }));

  // A game between the two: white challenges, black accepts.
  await signIn(white, password);
  const untimed = create(TimeControlSchema, { kind: { case: "untimed", value: {} } });
  const { challenge } = await lobby.createChallenge({
    opponentUsername: black,
    timeControl: untimed,
    color: ColorChoice.WHITE,
  });
  await signIn(black, password);
  const accepted = await lobby.acceptChallenge({ challengeId: challenge!.challengeId });
  const gameId = accepted.challenge!.gameId;
  if (!gameId) throw new Error("the accepted challenge has no game");

  await refused("move-out-of-turn", () => play.makeMove({ gameId, move: "e7e5" }));
  await signIn(white, password);
  await refused("unknown-game", () => play.makeMove({ gameId: UNKNOWN_GAME, move: "e2e4" }));
  await refused("illegal-move", () => play.makeMove({ gameId, move: "e2e5" }));
  await refused("malformed-move", () => play.makeMove({ gameId, move: "pawn to e4" }));
  await refused("watch-unknown-game", async () => {
    for await (const _ of play.watchGame({ gameId: UNKNOWN_GAME })) {
      throw new Error("WatchGame of an unknown game sent an event");
    }
  });
}

main().catch((e) => {
  console.error(`grpc-web-errors: ${describeError(e)}`, e);
  process.exitCode = 1;
});
