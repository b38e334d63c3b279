// What the live games view and the lobby's TV share: a live game's players
// written with their ratings, and its last move as board squares.
import type { SquareName } from "chessops/types";
import type { LiveGame, LivePlayer } from "../gen/chess/gateway/v1/gateway_pb.js";
import { h, playerName } from "../ui.js";

/** A side's name, linked to the profile of a registered player. */
export function livePlayerName(p: LivePlayer | undefined): HTMLElement {
  const name = playerName(p?.player);
  if (p?.player?.kind.case === "registered") {
    return h("a", { href: `/players/${encodeURIComponent(name)}`, class: "player-name" }, name);
  }
  return h("span", { class: "player-name" }, name);
}

/** " 1500", " 1500?" for a provisional rating, "" without a rating. */
export function liveRatingText(p: LivePlayer | undefined): string {
  if (!p || p.rating <= 0) return "";
  return `${p.rating}${p.provisional ? "?" : ""}`;
}

/** A side as "name (rating)". */
export function livePlayer(p: LivePlayer | undefined): HTMLElement {
  const r = liveRatingText(p);
  return h("span", { class: "live-player" }, livePlayerName(p), r ? h("span", { class: "muted rating" }, ` ${r}`) : null);
}

/** The last move's two squares, for the board's highlight. */
export function lastMoveSquares(uci: string): SquareName[] | undefined {
  return /^[a-h][1-8][a-h][1-8]/.test(uci) ? [uci.slice(0, 2) as SquareName, uci.slice(2, 4) as SquareName] : undefined;
}

/** "move 12" */
export function moveNumber(g: LiveGame): number {
  return Math.floor(g.ply / 2) + 1;
}
