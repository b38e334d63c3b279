// The leaderboard: every player with a rated game in a speed category, best
// first, a page at a time, under the name of the deployment's rating system.
import { accounts, describeError } from "../api.js";
import { type LeaderboardEntry, RatingSystem, SpeedCategory } from "../gen/chess/common/v1/common_pb.js";
import type { View } from "../router.js";
import { fill, fillSpeedTabs, h, rating, SPEEDS } from "../ui.js";

const PAGE_SIZE = 25;

export function ratingSystemName(s: RatingSystem): string {
  switch (s) {
    case RatingSystem.CLUB_ELO:
      return "Club Elo (start 1200, K = 20)";
    case RatingSystem.LOGISTIC_ELO:
      return "Elo (start 1000, K 30/20/15)";
    case RatingSystem.GLICKO2:
      return "Glicko-2";
    default:
      return "";
  }
}

/** The URL's name of a category: "blitz". */
export function speedSlug(s: SpeedCategory): string {
  return (SPEEDS.find(([v]) => v === s)?.[1] ?? "").toLowerCase();
}

export function leaderboardView(query: URLSearchParams): View {
  let category = SPEEDS.find(([, name]) => name.toLowerCase() === query.get("speed"))?.[0] ?? SpeedCategory.BLITZ;
  let tokens: string[] = [""];
  let page = 0;
  let nextToken = "";
  let disposed = false;
  let generation = 0;

  const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Speed category" });
  const system = h("p", { class: "muted system" });
  const body = h("tbody");
  const empty = h("p", { class: "muted empty", hidden: true }, "Nobody has played a rated game in this category yet.");
  const error = h("p", { class: "error line", role: "alert" });
  const prev = h("button", { type: "button", class: "secondary small" }, "Previous");
  const next = h("button", { type: "button", class: "secondary small" }, "Next");
  const pageInfo = h("span", { class: "muted" });
  const pager = h("div", { class: "pager", hidden: true }, prev, pageInfo, next);

  function drawTabs(): void {
    fillSpeedTabs(
      tabs,
      SPEEDS,
      category,
      (_, name) => name,
      (chosen) => {
        category = chosen;
        tokens = [""];
        page = 0;
        history.replaceState(null, "", `/leaderboard?speed=${speedSlug(chosen)}`);
        drawTabs();
        void load();
      },
    );
  }

  function row(e: LeaderboardEntry): HTMLElement {
    const r = e.rating;
    return h(
      "tr",
      { "data-testid": "leaderboard-row", "data-username": e.username },
      h("td", { class: "num rank" }, e.rank),
      h("td", {}, h("a", { href: `/players/${encodeURIComponent(e.username)}` }, e.username)),
      h(
        "td",
        { class: "num", "data-testid": "rating" },
        r ? rating(r.rating) : "—",
        r?.provisional ? h("span", { class: "provisional", title: "Provisional rating" }, "?") : null,
      ),
      h("td", { class: "num wide deviation" }, r && r.deviation > 0 ? `±${Math.round(r.deviation)}` : ""),
      h("td", { class: "num" }, r?.gamesPlayed ?? 0),
      h("td", { class: "num wide" }, r ? `${r.wins} / ${r.losses} / ${r.draws}` : ""),
    );
  }

  async function load(): Promise<void> {
    const mine = ++generation;
    error.textContent = "";
    prev.disabled = next.disabled = true;
    try {
      const r = await accounts.leaderboard({ category, pageSize: PAGE_SIZE, pageToken: tokens[page] });
      if (disposed || mine !== generation) return;
      system.textContent = ratingSystemName(r.ratingSystem) ? `Rating system: ${ratingSystemName(r.ratingSystem)}` : "";
      fill(body, r.entries.map(row));
      // Only Glicko-2 has a rating deviation to show.
      body.closest("table")?.classList.toggle("no-deviation", r.ratingSystem !== RatingSystem.GLICKO2);
      empty.hidden = r.entries.length > 0;
      nextToken = r.nextPageToken;
      prev.disabled = page === 0;
      next.disabled = !nextToken;
      pageInfo.textContent = r.entries.length || page > 0 ? `page ${page + 1}` : "";
      pager.hidden = page === 0 && !nextToken;
    } catch (e) {
      if (disposed || mine !== generation) return;
      error.textContent = describeError(e);
      prev.disabled = page === 0;
    }
  }

  prev.addEventListener("click", () => {
    if (page === 0) return;
    page--;
    void load();
  });
  next.addEventListener("click", () => {
    if (!nextToken) return;
    tokens[page + 1] = nextToken;
    page++;
    void load();
  });

  drawTabs();
  void load();
  const el = h(
    "div",
    { class: "leaderboard" },
    h("h1", {}, "Leaderboard"),
    tabs,
    h(
      "section",
      { class: "card" },
      system,
      error,
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          { class: "list ranking" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { class: "num" }, "#"),
              h("th", {}, "Player"),
              h("th", { class: "num" }, "Rating"),
              h("th", { class: "num wide deviation" }, "Deviation"),
              h("th", { class: "num" }, "Games"),
              h("th", { class: "num wide" }, "W / L / D"),
            ),
          ),
          body,
        ),
      ),
      empty,
      pager,
    ),
  );
  return {
    el,
    title: "Leaderboard",
    dispose() {
      disposed = true;
    },
  };
}
