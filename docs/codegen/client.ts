// A small client of the public API over gRPC, on the stubs that
// buf.gen.ts.yaml generates into gen/ts: registers a player, signs in, and
// reads the profile and the blitz leaderboard.
//
//   npx --prefix docs/codegen tsx docs/codegen/client.ts [host:port] [username]
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { RatingSystem, SpeedCategory } from "./gen/ts/chess/common/v1/common_pb.js";
import { AccountService } from "./gen/ts/chess/gateway/v1/gateway_pb.js";

const gateway = process.argv[2] ?? "127.0.0.1:50051";
const username = process.argv[3] ?? `ts_${Math.random().toString(36).slice(2, 10)}`;
const password = "correct horse battery";

// gRPC over HTTP/2 without TLS, as chess-stack serves it.
const transport = createGrpcTransport({ baseUrl: `http://${gateway}` });
const accounts = createClient(AccountService, transport);

const registered = await accounts.register({
  username,
  email: `${username}@example.org`,
  password,
});
console.log(`registered ${registered.profile?.username} (${registered.profile?.playerId})`);

const login = await accounts.login({ login: username, password });
// Calls marked "signed in" carry the session token.
const me = await accounts.me({}, { headers: { authorization: `Bearer ${login.token}` } });
console.log(`signed in as ${me.profile?.username} <${me.email}>`);

const { profile } = await accounts.getProfile({ username });
const blitz = profile?.ratings.find((r) => r.category === SpeedCategory.BLITZ);
console.log(`blitz rating ${blitz?.rating}${blitz?.provisional ? " (provisional)" : ""}`);

const board = await accounts.leaderboard({ category: SpeedCategory.BLITZ, pageSize: 10 });
console.log(`leaderboard ${RatingSystem[board.ratingSystem]}: ${board.entries.length} players`);
for (const entry of board.entries) {
  console.log(`  ${entry.rank}. ${entry.username} ${entry.rating?.rating}`);
}
