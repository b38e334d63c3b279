// The page's entry point: the header with the navigation, the connection
// banner, and the routes. Every view talks to the public API only.
import { onSessionChange, session, signOut } from "./api.js";
import { interceptLinks, navigate, render, route } from "./router.js";
import { fill, h } from "./ui.js";
import { accountView, loginView, registerView } from "./views/auth.js";
import { gameView } from "./views/game.js";
import { leaderboardView } from "./views/leaderboard.js";
import { liveView } from "./views/live.js";
import { lobbyView } from "./views/lobby.js";
import { myGamesView } from "./views/my-games.js";
import { playersView } from "./views/players.js";
import { profileView } from "./views/profile.js";

route("/login", (_, q) => loginView(q));
route("/register", (_, q) => registerView(q));
route("/account", () => accountView());
route("/", () => lobbyView());
route("/my-games", () => myGamesView());
route("/leaderboard", (_, q) => leaderboardView(q));
route("/players", (_, q) => playersView(q));
route("/players/:name", (p) => profileView(p.name!));
route("/games/:id", (p) => gameView(p.id!));
route("/live", (_, q) => liveView(q));

function header(): HTMLElement {
  const nav = h("nav", { "aria-label": "Main" });
  const draw = () => {
    const s = session();
    fill(
      nav,
      h("a", { href: "/", class: "brand" }, "♞ Rookery"),
      h("a", { href: "/", "data-nav": true }, "Lobby"),
      s && h("a", { href: "/my-games", "data-nav": true }, "My games"),
      h("a", { href: "/live", "data-nav": true }, "Watch"),
      h("a", { href: "/leaderboard", "data-nav": true }, "Leaderboard"),
      h("a", { href: "/players", "data-nav": true }, "Players"),
      h("span", { class: "spacer" }),
      s
        ? [
            h("a", { href: `/players/${encodeURIComponent(s.username)}`, "data-nav": true, id: "me" }, s.username),
            h("a", { href: "/account", "data-nav": true }, "Account"),
            h(
              "button",
              {
                type: "button",
                class: "link",
                onclick: async () => {
                  await signOut();
                  navigate("/");
                },
              },
              "Sign out",
            ),
          ]
        : [
            h("a", { href: "/login", "data-nav": true }, "Sign in"),
            h("a", { href: "/register", "data-nav": true }, "Register"),
          ],
    );
  };
  draw();
  onSessionChange(() => {
    draw();
    render();
  });
  return h("header", {}, nav);
}

function boot(): void {
  // Pages the server renders (a game, "not found") carry a style of their
  // own for readers without scripts; the views bring theirs.
  document.getElementById("static-style")?.remove();
  const main = document.querySelector("main") ?? h("main");
  const banner = h(
    "div",
    { id: "connection", role: "status", hidden: true },
    "Reconnecting…",
  );
  document.body.replaceChildren(header(), banner, main);
  document.body.append(
    h(
      "footer",
      {},
      h("a", { href: "/licences" }, "Licences"),
      " · ",
      h("a", { href: "https://www.gnu.org/licenses/agpl-3.0.html" }, "AGPL-3.0-or-later"),
    ),
  );
  interceptLinks();
  render();
}

boot();
