// A player's games on their profile: the newest first, each with the
// opponent (and their rating then), the result from the player's side, how
// it ended, the time control, and the rating change of rated games; filters
// (rated or casual, speed, opponent), pages, and the whole history as one
// PGN file (ExportPlayerGames), saved as `<username>.pgn`.
import { Color, SpeedCategory } from "../gen/chess/common/v1/common_pb.js";
import { type PlayerGame, PlayerOutcome, RatedFilter } from "../gen/chess/gateway/v1/gateway_pb.js";
import { describeError, play } from "../api.js";
import { changeText } from "../game/rating-changes.js";
import { navigate } from "../router.js";
import { dateText, fill, h, playerName, rating, resultText, SPEEDS, speedName, timeControlText } from "../ui.js";

/** Games a page of the history shows. */
const PAGE = 10;

function outcomeText(o: PlayerOutcome): [string, string] {
  switch (o) {
    case PlayerOutcome.WON:
      return ["Won", "win"];
    case PlayerOutcome.LOST:
      return ["Lost", "loss"];
    case PlayerOutcome.DRAWN:
      return ["Drawn", "draw"];
    default:
      return ["—", ""];
  }
}

/** The games section of `username`'s profile. */
export function renderGameHistory(username: string): HTMLElement {
  const rated = h(
    "select",
    { "data-testid": "history-rated", "aria-label": "Rated or casual" },
    h("option", { value: String(RatedFilter.UNSPECIFIED) }, "Rated and casual"),
    h("option", { value: String(RatedFilter.RATED) }, "Rated only"),
    h("option", { value: String(RatedFilter.CASUAL) }, "Casual only"),
  );
  const speed = h(
    "select",
    { "data-testid": "history-speed", "aria-label": "Speed" },
    h("option", { value: String(SpeedCategory.UNSPECIFIED) }, "Every speed"),
    [...SPEEDS, [SpeedCategory.UNTIMED, "Untimed"] as [SpeedCategory, string]].map(([c, name]) =>
      h("option", { value: String(c) }, name),
    ),
  );
  const opponent = h("input", {
    type: "search",
    placeholder: "Against (username)",
    maxlength: 20,
    "data-testid": "history-opponent",
    "aria-label": "Against",
  });
  const body = h("tbody");
  const status = h("p", { class: "muted", "data-testid": "history-status" }, "Loading the games…");
  const prev = h("button", { type: "button", class: "secondary small" }, "Newer");
  const next = h("button", { type: "button", class: "secondary small", "data-testid": "history-next" }, "Older");
  const pageInfo = h("span", { class: "muted" });
  const pager = h("div", { class: "pager", hidden: true }, prev, pageInfo, next);
  const download = h("button", { type: "button", class: "secondary small", "data-testid": "download-pgn" }, "Download PGN");
  const table = h(
    "table",
    { class: "list history", hidden: true },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", {}, "Opponent"),
        h("th", {}, "Result"),
        h("th", { class: "num" }, "Rating"),
        h("th", { class: "tc" }, "Time"),
        h("th", { class: "wide" }, "Played"),
      ),
    ),
    body,
  );

  let tokens = [""];
  let page = 0;
  let nextToken = "";
  let generation = 0;

  const filter = () => ({
    rated: Number(rated.value) as RatedFilter,
    speed: Number(speed.value) as SpeedCategory,
    opponentUsername: opponent.value.trim(),
  });

  const row = (g: PlayerGame) => {
    const game = g.game!;
    const opp = g.color === Color.WHITE ? game.black : game.white;
    const name = playerName(opp);
    const oppRating = g.opponentRating ? ` (${rating(g.opponentRating.ratingBefore)})` : "";
    const [outcome, cls] = outcomeText(g.outcome);
    const open = () => navigate(`/games/${encodeURIComponent(game.gameId)}`);
    return h(
      "tr",
      {
        "data-testid": "history-game",
        "data-game-id": game.gameId,
        "data-outcome": cls,
        class: "clickable",
        tabindex: 0,
        onclick: open,
        onkeydown: (e: Event) => {
          if ((e as KeyboardEvent).key === "Enter") open();
        },
      },
      h(
        "td",
        {},
        h("span", { class: `swatch ${g.color === Color.WHITE ? "white" : "black"}`, title: `${username} had ${g.color === Color.WHITE ? "white" : "black"}` }),
        opp?.kind.case === "registered"
          ? h("a", { href: `/players/${encodeURIComponent(name)}`, onclick: (e: Event) => e.stopPropagation() }, name)
          : h("span", {}, name),
        oppRating,
      ),
      h(
        "td",
        { class: cls },
        h("a", { href: `/games/${encodeURIComponent(game.gameId)}`, onclick: (e: Event) => e.stopPropagation() }, h("strong", {}, outcome)),
        " ",
        h("span", { class: "muted small" }, resultText(game.result, game.termination)),
      ),
      h(
        "td",
        { class: "num", "data-testid": "history-rating-change" },
        g.rating
          ? h(
              "span",
              { class: Math.round(g.rating.ratingAfter) >= Math.round(g.rating.ratingBefore) ? "gain" : "drop" },
              `${rating(g.rating.ratingAfter)} ${changeText(g.rating)}`,
            )
          : h("span", { class: "muted" }, game.rated ? "rated" : "casual"),
      ),
      h("td", { class: "tc" }, `${timeControlText(game.timeControl)} · ${speedName(game.speed)}`),
      h("td", { class: "muted wide" }, dateText(game.finishedAt ?? game.createdAt)),
    );
  };

  async function load(): Promise<void> {
    const mine = ++generation;
    status.hidden = false;
    status.classList.remove("error");
    status.textContent = "Loading the games…";
    try {
      const r = await play.listPlayerGames({ username, filter: filter(), pageSize: PAGE, pageToken: tokens[page] ?? "" });
      if (mine !== generation) return;
      nextToken = r.nextPageToken;
      fill(body, r.games.filter((g) => g.game).map(row));
      table.hidden = r.games.length === 0;
      status.hidden = r.games.length > 0;
      status.textContent = page === 0 ? "No finished games match." : "No more games.";
    } catch (e) {
      if (mine !== generation) return;
      fill(body);
      table.hidden = true;
      status.classList.add("error");
      status.textContent = describeError(e);
      nextToken = "";
    }
    prev.disabled = page === 0;
    next.disabled = !nextToken;
    pageInfo.textContent = `page ${page + 1}`;
    pager.hidden = page === 0 && !nextToken;
  }

  const restart = () => {
    tokens = [""];
    page = 0;
    void load();
  };
  rated.addEventListener("change", restart);
  speed.addEventListener("change", restart);
  let typing: ReturnType<typeof setTimeout> | undefined;
  opponent.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(restart, 400);
  });
  prev.addEventListener("click", () => {
    if (page === 0) return;
    page -= 1;
    void load();
  });
  next.addEventListener("click", () => {
    if (!nextToken) return;
    tokens[page + 1] = nextToken;
    page += 1;
    void load();
  });
  download.addEventListener("click", async () => {
    download.disabled = true;
    const label = download.textContent;
    download.textContent = "Preparing…";
    try {
      const chunks: string[] = [];
      for await (const chunk of play.exportPlayerGames({ username, filter: filter() })) chunks.push(chunk.pgn);
      const url = URL.createObjectURL(new Blob(chunks, { type: "application/x-chess-pgn" }));
      const a = h("a", { href: url, download: `${username}.pgn`, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      status.hidden = false;
      status.classList.add("error");
      status.textContent = describeError(e);
    } finally {
      download.disabled = false;
      download.textContent = label;
    }
  });

  void load();
  return h(
    "section",
    { class: "card history", "data-testid": "game-history" },
    h("h2", {}, "Games"),
    h("div", { class: "filters" }, rated, speed, opponent, download),
    h("div", { class: "scroll" }, table),
    status,
    pager,
  );
}
