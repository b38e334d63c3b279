// /live: every game in progress that anyone may watch, kept up to date by
// one WatchLiveGames stream (a list, then each game added, updated or
// removed), filtered by speed and rated, a page at a time; a row opens the
// game. A filter change opens the stream again with the new filter.
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { SpeedCategory } from "../gen/chess/common/v1/common_pb.js";
import type { LiveGame, WatchLiveGamesResponse } from "../gen/chess/gateway/v1/gateway_pb.js";
import { play } from "../api.js";
import { navigate, type View } from "../router.js";
import { keepStreaming } from "../stream.js";
import { fill, h, SPEEDS, speedName, timeControlText } from "../ui.js";
import { KeyedRows, labelled } from "./helpers.js";
import { livePlayerName, liveRatingText, moveNumber } from "./live-common.js";

const PAGE = 20;

/** Highest rated first, as the server orders them: the ratings added, then the higher one, then the oldest. */
function compare(a: LiveGame, b: LiveGame): number {
  const ra = [a.white?.rating ?? 0, a.black?.rating ?? 0];
  const rb = [b.white?.rating ?? 0, b.black?.rating ?? 0];
  const sum = rb[0]! + rb[1]! - (ra[0]! + ra[1]!);
  if (sum) return sum;
  const max = Math.max(...rb) - Math.max(...ra);
  if (max) return max;
  const age = (a.createdAt ? timestampMs(a.createdAt) : 0) - (b.createdAt ? timestampMs(b.createdAt) : 0);
  return age || a.gameId.localeCompare(b.gameId);
}

export function liveView(query: URLSearchParams): View {
  const games = new Map<string, LiveGame>();
  let inPlay: number | null = null;
  let page = 0;
  let loaded = false;
  let speed = SpeedCategory.UNSPECIFIED;
  const speedParam = query.get("speed");
  for (const [s, name] of [...SPEEDS, [SpeedCategory.UNTIMED, "Untimed"] as [SpeedCategory, string]]) {
    if (name.toLowerCase() === speedParam) speed = s;
  }
  const ratedParam = query.get("rated");
  let rated: boolean | undefined = ratedParam === "yes" ? true : ratedParam === "no" ? false : undefined;

  const speedSelect = h(
    "select",
    { name: "speed" },
    h("option", { value: String(SpeedCategory.UNSPECIFIED) }, "All speeds"),
    [...SPEEDS, [SpeedCategory.UNTIMED, "Untimed"] as [SpeedCategory, string]].map(([s, name]) =>
      h("option", { value: String(s) }, name),
    ),
  );
  speedSelect.value = String(speed);
  const ratedSelect = h(
    "select",
    { name: "rated" },
    h("option", { value: "" }, "Rated and casual"),
    h("option", { value: "yes" }, "Rated only"),
    h("option", { value: "no" }, "Casual only"),
  );
  ratedSelect.value = rated === undefined ? "" : rated ? "yes" : "no";
  const summary = h("p", { class: "muted", "data-testid": "live-summary" }, "Loading…");
  const body = h("tbody");
  const rows = new KeyedRows(body);
  const empty = h("p", { class: "muted empty", hidden: true, "data-testid": "live-empty" });
  const prev = h("button", { type: "button", class: "secondary small" }, "Previous");
  const next = h("button", { type: "button", class: "secondary small" }, "Next");
  const pageInfo = h("span", { class: "muted" });
  const pager = h("div", { class: "pager", hidden: true }, prev, pageInfo, next);
  prev.addEventListener("click", () => {
    page = Math.max(0, page - 1);
    draw();
  });
  next.addEventListener("click", () => {
    page += 1;
    draw();
  });

  function row(g: LiveGame): HTMLElement {
    const href = `/games/${encodeURIComponent(g.gameId)}`;
    const side = (p: LiveGame["white"]) =>
      h("td", {}, livePlayerName(p), liveRatingText(p) ? h("span", { class: "muted rating" }, ` ${liveRatingText(p)}`) : null);
    return h(
      "tr",
      {
        class: "live-row",
        "data-testid": "live-game",
        "data-game-id": g.gameId,
        onclick: ((e: MouseEvent) => {
          // A player's name is a link of its own.
          if ((e.target as Element | null)?.closest("a")) return;
          navigate(href);
        }) as EventListener,
      },
      side(g.white),
      side(g.black),
      h("td", {}, h("a", { href, "aria-label": "Watch the game" }, timeControlText(g.timeControl))),
      h("td", { class: "wide" }, speedName(g.speed)),
      h("td", { class: "wide" }, g.rated ? "Rated" : "Casual"),
      h("td", { class: "num" }, moveNumber(g)),
      h("td", { class: "num", "data-testid": "live-spectators", title: "Watching" }, g.spectators),
    );
  }

  function draw(): void {
    const list = [...games.values()].sort(compare);
    const pages = Math.max(1, Math.ceil(list.length / PAGE));
    page = Math.min(page, pages - 1);
    const shown = list.slice(page * PAGE, (page + 1) * PAGE);
    rows.update(
      shown.map((g) => ({
        key: g.gameId,
        sig: `${g.ply}|${g.spectators}|${liveRatingText(g.white)}|${liveRatingText(g.black)}`,
        render: () => row(g),
      })),
    );
    if (loaded) {
      const all = inPlay === null ? "" : ` · ${inPlay} in play in all`;
      summary.textContent = `${list.length} ${list.length === 1 ? "game" : "games"} shown${all}`;
    }
    empty.hidden = !loaded || list.length > 0;
    empty.textContent = inPlay ? "No game in play matches these filters." : "No game in play.";
    pager.hidden = pages === 1;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    pageInfo.textContent = `Page ${page + 1} of ${pages}`;
  }

  function received(r: WatchLiveGamesResponse): void {
    const e = r.event;
    switch (e.case) {
      case "list":
        games.clear();
        for (const g of e.value.games) games.set(g.gameId, g);
        inPlay = e.value.inPlay;
        loaded = true;
        break;
      case "added":
      case "updated":
        games.set(e.value.gameId, e.value);
        break;
      case "removed":
        games.delete(e.value);
        break;
      case "inPlay":
        inPlay = e.value;
        break;
      default:
        return;
    }
    draw();
  }

  let stop = () => {};
  function watch(): void {
    stop();
    const filter = { speed, rated };
    stop = keepStreaming<WatchLiveGamesResponse>({
      open: (signal, opened) => play.watchLiveGames({ filter }, { signal, onHeader: opened }),
      onItem: received,
      onFatal: (message) => {
        summary.textContent = message;
      },
    });
  }
  function filtersChanged(): void {
    speed = Number(speedSelect.value) as SpeedCategory;
    rated = ratedSelect.value === "" ? undefined : ratedSelect.value === "yes";
    const q = new URLSearchParams();
    if (speed !== SpeedCategory.UNSPECIFIED) q.set("speed", speedName(speed).toLowerCase());
    if (rated !== undefined) q.set("rated", rated ? "yes" : "no");
    history.replaceState(null, "", q.size ? `/live?${q}` : "/live");
    games.clear();
    loaded = false;
    page = 0;
    summary.textContent = "Loading…";
    draw();
    watch();
  }
  speedSelect.addEventListener("change", filtersChanged);
  ratedSelect.addEventListener("change", filtersChanged);
  watch();
  draw();

  const el = h(
    "div",
    { class: "live" },
    h("h1", {}, "Live games"),
    h(
      "section",
      { class: "card" },
      h("div", { class: "filters" }, labelled("Speed", speedSelect), labelled("Games", ratedSelect)),
      summary,
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          { class: "list live-games" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", {}, "White"),
              h("th", {}, "Black"),
              h("th", {}, "Time"),
              h("th", { class: "wide" }, "Speed"),
              h("th", { class: "wide" }, "Mode"),
              h("th", { class: "num" }, "Move"),
              h("th", { class: "num" }, "Watching"),
            ),
          ),
          body,
        ),
      ),
      empty,
      pager,
    ),
  );
  fill(summary, "Loading…");
  return { el, title: "Live games", dispose: () => stop() };
}
