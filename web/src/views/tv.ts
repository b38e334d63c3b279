// The lobby's TV: the featured game (the highest-rated game in play) on a
// small view-only board, following its moves, and switching to the next one
// when it ends; with the lobby's line "N players online · M games in play".
// One stream, WatchLiveGames with `featured_only`, feeds both the board and
// the games count; the players count is read with ListPlayers whenever the
// lobby refreshes its lists.
import { accounts, play } from "../api.js";
import { Board } from "../game/board.js";
import type { LiveGame, WatchLiveGamesResponse } from "../gen/chess/gateway/v1/gateway_pb.js";
import { keepStreaming } from "../stream.js";
import { fill, h, speedName, timeControlText } from "../ui.js";
import { lastMoveSquares, livePlayer, moveNumber } from "./live-common.js";

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

export class Tv {
  /** The TV card. */
  readonly el: HTMLElement;
  /** The counts line, for the lobby to place. */
  readonly counts: HTMLElement;
  private readonly board = new Board(() => {});
  private readonly players = h("div", { class: "tv-players" });
  private readonly caption = h("p", { class: "muted tv-caption" });
  private readonly empty = h("p", { class: "muted tv-empty", "data-testid": "tv-empty" }, "No game in play");
  private readonly screen: HTMLElement;
  private readonly stop: () => void;
  private online: number | null = null;
  private inPlay: number | null = null;
  private asking = false;
  private disposed = false;

  constructor() {
    this.counts = h("p", { class: "muted live-counts", "data-testid": "live-counts" });
    this.screen = h("div", { class: "tv-screen", hidden: true }, this.board.el, this.players, this.caption);
    this.el = h(
      "section",
      { class: "card tv", "aria-label": "Featured game", "data-testid": "tv" },
      h("h2", {}, h("a", { href: "/live" }, "Live games")),
      this.screen,
      this.empty,
    );
    this.stop = keepStreaming<WatchLiveGamesResponse>({
      open: (signal, opened) => play.watchLiveGames({ featuredOnly: true }, { signal, onHeader: opened }),
      onItem: (r) => this.received(r),
    });
    this.drawCounts();
  }

  /** Reads the number of players online again (one ListPlayers of one row). */
  async countPlayers(): Promise<void> {
    if (this.asking || this.disposed) return;
    this.asking = true;
    try {
      const r = await accounts.listPlayers({ pageSize: 1 });
      this.online = r.playersOnline;
    } catch {
      // The count stays as last read; the seek lists say when the server is away.
    } finally {
      this.asking = false;
    }
    if (!this.disposed) this.drawCounts();
  }

  dispose(): void {
    this.disposed = true;
    this.stop();
    this.board.dispose();
  }

  private received(r: WatchLiveGamesResponse): void {
    const e = r.event;
    if (this.disposed) return;
    switch (e.case) {
      case "list":
        this.inPlay = e.value.inPlay;
        this.show(e.value.featured);
        break;
      case "featured":
        this.show(e.value.game);
        break;
      case "inPlay":
        this.inPlay = e.value;
        break;
      default:
        return;
    }
    this.drawCounts();
  }

  private show(g: LiveGame | undefined): void {
    this.screen.hidden = !g;
    this.empty.hidden = !!g;
    if (!g) {
      delete this.screen.dataset.gameId;
      return;
    }
    this.screen.dataset.gameId = g.gameId;
    this.board.show({
      fen: g.fen,
      orientation: "white",
      movable: undefined,
      lastMove: lastMoveSquares(g.lastMove),
      arrow: null,
      ply: g.ply,
    });
    fill(
      this.players,
      h("span", { class: "tv-side", "data-testid": "tv-white" }, "♔ ", livePlayer(g.white)),
      h("span", { class: "tv-side", "data-testid": "tv-black" }, "♚ ", livePlayer(g.black)),
    );
    fill(
      this.caption,
      `${timeControlText(g.timeControl)} · ${speedName(g.speed)} · ${g.rated ? "rated" : "casual"} · move ${moveNumber(g)} · `,
      h("a", { href: `/games/${encodeURIComponent(g.gameId)}`, "data-testid": "tv-watch" }, "Watch"),
    );
  }

  private drawCounts(): void {
    const online = this.online === null ? "… players online" : plural(this.online, "player", "players") + " online";
    const games = this.inPlay === null ? "… games in play" : plural(this.inPlay, "game", "games") + " in play";
    this.counts.textContent = `${online} · ${games}`;
  }
}
