// The lobby's quick pairing grid, as lichess has it: one click on a time
// control joins an open seek someone else posted with it (open table, same
// rated-ness) or, if there is none, posts one and waits; a click on a
// waiting tile takes it back. Signed-in players' quick games are rated.
//
// Two players who click the same tile at the same moment both post a seek;
// the one whose seek came second then takes it back and joins the first, so
// they meet in one game (each page sees the same two seeks, and only the
// later poster moves).
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { describeError, lobby } from "../api.js";
import { AcceptMode, ColorChoice, type Seek, type TimeControl } from "../gen/chess/common/v1/common_pb.js";
import { h, toast } from "../ui.js";
import { signedInOrAway, type TimeControlInit } from "./helpers.js";

interface Tile {
  /** "3+2", or "corr" for correspondence. */
  key: string;
  label: string;
  speed: string;
  tc: TimeControlInit;
}

const incremental = (minutes: number, increment: number, speed: string): Tile => ({
  key: `${minutes}+${increment}`,
  label: `${minutes}+${increment}`,
  speed,
  tc: { kind: { case: "incremental", value: { initialSeconds: minutes * 60, incrementSeconds: increment } } },
});

/** The grid: lichess's time controls, then correspondence (two days a move). */
export const TILES: Tile[] = [
  incremental(1, 0, "Bullet"),
  incremental(2, 1, "Bullet"),
  incremental(3, 0, "Blitz"),
  incremental(3, 2, "Blitz"),
  incremental(5, 0, "Blitz"),
  incremental(5, 3, "Blitz"),
  incremental(10, 0, "Rapid"),
  incremental(10, 5, "Rapid"),
  incremental(15, 10, "Rapid"),
  incremental(30, 0, "Classical"),
  incremental(30, 20, "Classical"),
  { key: "corr", label: "Daily", speed: "48 h a move", tc: { kind: { case: "daily", value: { turnHours: 48 } } } },
];

/** Whether `tc` is the tile's time control. */
function sameControl(tile: Tile, tc: TimeControl | undefined): boolean {
  const want = tile.tc.kind;
  const got = tc?.kind;
  if (!want || !got) return false;
  if (want.case === "incremental" && got.case === "incremental") {
    return want.value?.initialSeconds === got.value.initialSeconds && want.value?.incrementSeconds === got.value.incrementSeconds;
  }
  if (want.case === "daily" && got.case === "daily") return want.value?.turnHours === got.value.turnHours;
  return false;
}

/** A seek the grid would post for `tile`, or join. */
function quickSeek(tile: Tile, s: Seek): boolean {
  return (
    sameControl(tile, s.timeControl) &&
    s.rated &&
    s.acceptMode === AcceptMode.AUTOMATIC &&
    !s.allowHints
  );
}

/** My seek for `tile` as the grid posts it: open table, any colour, any rating. */
function myQuickSeek(tile: Tile, s: Seek): boolean {
  return !!s.posterId && quickSeek(tile, s) && s.color === ColorChoice.EITHER && !s.minRating && !s.maxRating;
}

function postedBefore(a: Seek, b: Seek): boolean {
  const ta = a.createdAt ? timestampMs(a.createdAt) : 0;
  const tb = b.createdAt ? timestampMs(b.createdAt) : 0;
  return ta !== tb ? ta < tb : a.seekId < b.seekId;
}

export interface QuickPairingHost {
  /** The open seeks as last listed, the player's own among them. */
  seeks(): Seek[];
  /** Lists the seeks again. */
  refresh(): Promise<void>;
  goToGame(id: string): void;
}

export class QuickPairing {
  readonly el: HTMLElement;
  private readonly buttons = new Map<string, HTMLButtonElement>();
  private busy = false;
  /** Seeks this page posted from the grid: the rest go when a game starts. */
  private readonly posted = new Set<string>();

  constructor(private readonly host: QuickPairingHost) {
    const grid = h("div", { class: "quick-grid" });
    for (const tile of TILES) {
      const b = h(
        "button",
        { type: "button", class: "quick-tile", "data-testid": "quick-pairing", "data-tc": tile.key },
        h("span", { class: "tc" }, tile.label),
        h("span", { class: "speed" }, tile.speed),
        h("span", { class: "wait" }, "Waiting… Cancel"),
      );
      b.addEventListener("click", () => void this.clicked(tile));
      this.buttons.set(tile.key, b);
      grid.append(b);
    }
    this.el = h(
      "section",
      { class: "card quick", "aria-label": "Quick pairing" },
      h("h2", {}, "Quick pairing"),
      grid,
      h("p", { class: "muted small" }, "One click joins a waiting player with that time control, or waits for one. Quick games are rated."),
    );
  }

  /** Shows the lists as they now stand; joins an earlier twin of a waiting seek. */
  update(): void {
    const seeks = this.host.seeks();
    for (const tile of TILES) {
      const b = this.buttons.get(tile.key);
      if (!b) continue;
      const waiting = seeks.some((s) => myQuickSeek(tile, s));
      b.classList.toggle("waiting", waiting);
      const name = tile.key === "corr" ? "correspondence, 48 hours a move" : `${tile.label} ${tile.speed}`;
      b.setAttribute("aria-label", waiting ? `${name}: waiting for an opponent; cancel` : `Play ${name}`);
      b.disabled = this.busy;
    }
    void this.joinEarlierTwin(seeks);
  }

  /** Takes back the grid's other seeks once a game starts. */
  gameStarted(): void {
    for (const seekId of this.posted) void lobby.cancelSeek({ seekId }).catch(() => undefined);
    this.posted.clear();
  }

  private async run(action: () => Promise<void>): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    this.update();
    try {
      await action();
    } catch (e) {
      toast(describeError(e));
    } finally {
      this.busy = false;
      await this.host.refresh().catch(() => undefined);
      this.update();
    }
  }

  private clicked(tile: Tile): Promise<void> {
    if (!signedInOrAway()) return Promise.resolve();
    return this.run(async () => {
      await this.host.refresh();
      const seeks = this.host.seeks();
      const mine = seeks.find((s) => myQuickSeek(tile, s));
      if (mine) {
        await lobby.cancelSeek({ seekId: mine.seekId });
        this.posted.delete(mine.seekId);
        return;
      }
      if (await this.join(seeks.filter((s) => !s.posterId && quickSeek(tile, s)))) return;
      await this.post(tile);
    });
  }

  private async post(tile: Tile): Promise<void> {
    const r = await lobby.createSeek({
        timeControl: tile.tc,
      color: ColorChoice.EITHER,
      rated: true,
      minRating: 0,
      maxRating: 0,
      showName: true,
      acceptMode: AcceptMode.AUTOMATIC,
      allowHints: false,
    });
    if (r.seek?.seekId) this.posted.add(r.seek.seekId);
  }

  /**
   * Plays the first of `candidates` that takes this player (one may refuse:
   * its rating range, or it went); true if a game started.
   */
  private async join(candidates: Seek[]): Promise<boolean> {
    const ordered = [...candidates].sort((a, b) => (postedBefore(a, b) ? -1 : 1));
    for (const s of ordered) {
      try {
        const r = await lobby.requestSeek({ seekId: s.seekId });
        if (r.request?.gameId) {
          this.host.goToGame(r.request.gameId);
          return true;
        }
        // Not an open table after all: the request waits for its poster.
        if (r.request?.requestId) await lobby.withdrawSeekRequest({ requestId: r.request.requestId });
      } catch {
        // Gone, or not for this player: the next one, or a seek of our own.
      }
    }
    return false;
  }

  private async joinEarlierTwin(seeks: Seek[]): Promise<void> {
    if (this.busy) return;
    for (const tile of TILES) {
      const mine = seeks.find((s) => myQuickSeek(tile, s));
      if (!mine) continue;
      const earlier = seeks.filter((s) => !s.posterId && quickSeek(tile, s) && postedBefore(s, mine));
      if (earlier.length === 0) continue;
      await this.run(async () => {
        await lobby.cancelSeek({ seekId: mine.seekId });
        this.posted.delete(mine.seekId);
        // The earlier one went meanwhile: wait again as before.
        if (!(await this.join(earlier))) await this.post(tile);
      });
      return;
    }
  }
}
