// "My games": every game the signed-in player is in — the active ones first,
// with whose turn it is and both clocks ticking from the server's last
// figures, then the finished ones, paged. Kept live from StreamEvents.
import { describeError, play, session } from "../api.js";
import { Color, type ClockState, GameResult, type GameState, GameStatus } from "../gen/chess/common/v1/common_pb.js";
import { GameFilter, type StreamEventsResponse } from "../gen/chess/gateway/v1/gateway_pb.js";
import { navigate, type View } from "../router.js";
import { keepStreaming } from "../stream.js";
import { clockText, colorName, dateText, fill, h, playerName, resultText, scoreText, timeControlText, toast } from "../ui.js";
import { myColor, other, signInPath } from "./helpers.js";

const FINISHED_PAGE = 20;

/** A clock as received, with the local instant it arrived (no clock skew). */
interface Clock {
  state: ClockState;
  at: number;
}

function remaining(c: Clock, side: Color): number {
  const s = side === Color.WHITE ? c.state.white : c.state.black;
  const ms = Number(s?.remainingMs ?? 0n);
  return c.state.running === side ? ms - (performance.now() - c.at) : ms;
}

export function myGamesView(): View {
  if (!session()) {
    // Sign in first, then come back here.
    queueMicrotask(() => navigate(signInPath(), true));
    return { el: h("p", {}, h("a", { href: signInPath() }, "Sign in"), " to see your games."), title: "My games" };
  }
  let disposed = false;
  const active = new Map<string, { game: GameState; clock?: Clock }>();
  let finished: GameState[] = [];
  const finishedTokens: string[] = [""];
  let finishedPage = 0;
  let finishedNext = "";

  const activeBody = h("tbody");
  const finishedBody = h("tbody");
  const activeEmpty = h("p", { class: "muted empty" }, "No game in progress. ", h("a", { href: "/" }, "Find an opponent in the lobby."));
  const finishedEmpty = h("p", { class: "muted empty" }, "No finished games yet.");
  const error = h("p", { class: "error line", role: "alert" });
  const prev = h("button", { type: "button", class: "secondary small" }, "Previous");
  const next = h("button", { type: "button", class: "secondary small" }, "Next");
  const pageInfo = h("span", { class: "muted" });
  const pager = h("div", { class: "pager", hidden: true }, prev, pageInfo, next);

  const open = (id: string) => navigate(`/games/${encodeURIComponent(id)}`);
  const rowAttrs = (g: GameState) => ({
    "data-testid": "my-game",
    "data-game-id": g.gameId,
    class: "clickable",
    tabindex: 0,
    onclick: () => open(g.gameId),
    onkeydown: (e: Event) => {
      if ((e as KeyboardEvent).key === "Enter") open(g.gameId);
    },
  });
  const opponentCell = (g: GameState, mine: Color) => {
    const opp = mine === Color.WHITE ? g.black : g.white;
    const name = playerName(opp);
    const link =
      opp?.kind.case === "registered"
        ? h("a", { href: `/players/${encodeURIComponent(name)}`, onclick: (e: Event) => e.stopPropagation() }, name)
        : h("span", {}, name);
    return h("td", {}, link, g.rated ? h("span", { class: "tag" }, "rated") : null);
  };

  function drawActive(): void {
    const games = [...active.values()].sort((a, b) => {
      // My move first, then the least time left.
      const am = a.game.turn === myColor(a.game) ? 0 : 1;
      const bm = b.game.turn === myColor(b.game) ? 0 : 1;
      return am - bm;
    });
    fill(
      activeBody,
      games.map(({ game: g, clock }) => {
        const mine = myColor(g);
        const myTurn = g.turn === mine;
        const clockCell = (side: Color) =>
          h(
            "td",
            { class: "num clock", "data-side": side === mine ? "me" : "opponent", "data-color": side },
            clock?.state.timed ? clockText(remaining(clock, side)) : "—",
          );
        return h(
          "tr",
          { ...rowAttrs(g), "data-my-turn": myTurn },
          opponentCell(g, mine),
          h("td", {}, h("span", { class: `swatch ${mine === Color.WHITE ? "white" : "black"}` }), colorName(mine)),
          h("td", { class: "tc" }, timeControlText(g.timeControl)),
          h("td", {}, myTurn ? h("strong", { class: "your-move" }, "Your move") : h("span", { class: "muted" }, "Their move")),
          clockCell(mine),
          clockCell(other(mine)),
          h("td", { class: "num muted wide" }, `move ${Math.floor(g.ply / 2) + 1}`),
        );
      }),
    );
    activeEmpty.hidden = games.length > 0;
  }

  function drawFinished(): void {
    fill(
      finishedBody,
      finished.map((g) => {
        const mine = myColor(g);
        const whiteWon = g.result === GameResult.WHITE_WINS;
        const blackWon = g.result === GameResult.BLACK_WINS;
        const won = (whiteWon && mine === Color.WHITE) || (blackWon && mine === Color.BLACK);
        const lost = (blackWon && mine === Color.WHITE) || (whiteWon && mine === Color.BLACK);
        return h(
          "tr",
          rowAttrs(g),
          opponentCell(g, mine),
          h("td", {}, h("span", { class: `swatch ${mine === Color.WHITE ? "white" : "black"}` }), colorName(mine)),
          h("td", { class: "tc" }, timeControlText(g.timeControl)),
          h("td", { class: won ? "win" : lost ? "loss" : "" }, h("strong", {}, scoreText(g.result)), " ", resultText(g.result, g.termination)),
          h("td", { class: "muted wide" }, dateText(g.finishedAt)),
        );
      }),
    );
    finishedEmpty.hidden = finished.length > 0;
    prev.disabled = finishedPage === 0;
    next.disabled = !finishedNext;
    pageInfo.textContent = finished.length ? `page ${finishedPage + 1}` : "";
    pager.hidden = finishedPage === 0 && !finishedNext;
  }

  async function loadActive(): Promise<void> {
    const games: GameState[] = [];
    let pageToken = "";
    for (let i = 0; i < 20; i++) {
      const r = await play.listMyGames({ filter: GameFilter.ACTIVE, pageSize: 100, pageToken });
      games.push(...r.games);
      if (!r.nextPageToken) break;
      pageToken = r.nextPageToken;
    }
    if (disposed) return;
    const now = performance.now();
    active.clear();
    for (const g of games) active.set(g.gameId, { game: g, clock: g.clock ? { state: g.clock, at: now } : undefined });
    drawActive();
  }

  async function loadFinished(): Promise<void> {
    const r = await play.listMyGames({ filter: GameFilter.FINISHED, pageSize: FINISHED_PAGE, pageToken: finishedTokens[finishedPage] });
    if (disposed) return;
    finished = r.games;
    finishedNext = r.nextPageToken;
    drawFinished();
  }

  async function load(): Promise<void> {
    try {
      await Promise.all([loadActive(), loadFinished()]);
      error.textContent = "";
    } catch (e) {
      if (!disposed) error.textContent = describeError(e);
    }
  }

  prev.addEventListener("click", () => {
    if (finishedPage === 0) return;
    finishedPage--;
    loadFinished().catch((e) => toast(describeError(e)));
  });
  next.addEventListener("click", () => {
    if (!finishedNext) return;
    finishedTokens[finishedPage + 1] = finishedNext;
    finishedPage++;
    loadFinished().catch((e) => toast(describeError(e)));
  });

  function onEvent(e: StreamEventsResponse): void {
    if (e.event.case !== "game") return;
    const ev = e.event.value;
    switch (ev.kind.case) {
      case "moveMade": {
        const entry = active.get(ev.gameId);
        if (!entry) return void load();
        entry.game.ply = ev.ply;
        entry.game.turn = other(ev.kind.value.color);
        entry.game.fen = ev.kind.value.fen;
        if (ev.clock) entry.clock = { state: ev.clock, at: performance.now() };
        drawActive();
        break;
      }
      case "gameStarted":
      case "gameEnded":
        void load();
        break;
      default:
        if (ev.clock && active.has(ev.gameId)) {
          active.get(ev.gameId)!.clock = { state: ev.clock, at: performance.now() };
          drawActive();
        }
    }
  }

  const stopStream = keepStreaming<StreamEventsResponse>({
    open: (signal, opened) => play.streamEvents({}, { signal, onHeader: opened }),
    onItem: onEvent,
    onState: (state) => {
      if (state === "live") void load();
    },
    onFatal: (message) => toast(message),
  });

  // Only the running clocks change between events.
  const ticker = setInterval(() => {
    for (const row of activeBody.querySelectorAll<HTMLElement>("tr[data-game-id]")) {
      const entry = active.get(row.dataset.gameId!);
      const c = entry?.clock;
      if (!entry || !c?.state.timed || entry.game.status !== GameStatus.ACTIVE) continue;
      for (const cell of row.querySelectorAll<HTMLElement>("td.clock")) {
        const side = Number(cell.dataset.color) as Color;
        cell.textContent = clockText(remaining(c, side));
        cell.classList.toggle("running", c.state.running === side);
      }
    }
  }, 200);

  const el = h(
    "div",
    { class: "my-games" },
    h("h1", {}, "My games"),
    error,
    gamesCard(
      "Games in progress",
      "In progress",
      [
        h("th", {}, "Opponent"),
        h("th", {}, "You play"),
        h("th", {}, "Time"),
        h("th", {}, "Turn"),
        h("th", { class: "num" }, "Your clock"),
        h("th", { class: "num" }, "Theirs"),
        h("th", { class: "num wide" }, ""),
      ],
      activeBody,
      activeEmpty,
    ),
    gamesCard(
      "Finished games",
      "Finished",
      [h("th", {}, "Opponent"), h("th", {}, "You played"), h("th", {}, "Time"), h("th", {}, "Result"), h("th", { class: "wide" }, "Ended")],
      finishedBody,
      finishedEmpty,
      pager,
    ),
  );
  activeEmpty.hidden = true;
  finishedEmpty.hidden = true;
  void load();
  return {
    el,
    title: "My games",
    dispose() {
      disposed = true;
      clearInterval(ticker);
      stopStream();
    },
  };
}

// A card holding a table of games: its heading, the table's column heads
// and body, and what follows the table.
function gamesCard(label: string, title: string, heads: HTMLElement[], body: HTMLElement, ...after: HTMLElement[]): HTMLElement {
  return h(
    "section",
    { class: "card", "aria-label": label },
    h("h2", {}, title),
    h("div", { class: "scroll" }, h("table", { class: "list games" }, h("thead", {}, h("tr", {}, ...heads)), body)),
    ...after,
  );
}
