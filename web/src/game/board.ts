// The board: chessground showing a position, letting the player drop only
// the legal moves chessops computes for it (anything else snaps back and
// nothing is sent), asking which piece a pawn promotes to, drawing the hint
// arrow, and holding one premove: a move queued while the opponent is to
// move, played as soon as a position where it is legal is shown (dropped
// silently otherwise), cancelled by a click on the board.
import { Chessground } from "@lichess-org/chessground";
import type { Api } from "@lichess-org/chessground/api";
import type { DrawShape } from "@lichess-org/chessground/draw";
import type { Key } from "@lichess-org/chessground/types";
import { chessgroundDests } from "chessops/compat";
import type { NormalMove, Role, SquareName } from "chessops/types";
import { parseSquare } from "chessops/util";
import { h } from "../ui.js";
import { isPromotion, positionOf } from "./model.js";

export interface BoardShow {
  fen: string;
  orientation: "white" | "black";
  /** The colour that may move now, if any. */
  movable: "white" | "black" | undefined;
  /** The player's colour where they may queue a premove while the other side is to move. */
  premovable?: "white" | "black" | undefined;
  lastMove: SquareName[] | undefined;
  /** UCI of a move to draw as an arrow. */
  arrow: string | null;
  ply: number;
}

const PROMOTIONS: [Role, string, string, string][] = [
  ["queen", "Queen", "♕", "♛"],
  ["rook", "Rook", "♖", "♜"],
  ["bishop", "Bishop", "♗", "♝"],
  ["knight", "Knight", "♘", "♞"],
];

export class Board {
  /** The board itself (data-testid="board"), inside `el`. */
  readonly board: HTMLElement;
  readonly el: HTMLElement;
  private readonly cg: Api;
  private shown: BoardShow | null = null;
  private chooser: HTMLElement | null = null;

  /** `onMove` gets every legal move the player drops, promotion chosen. */
  constructor(private readonly onMove: (move: NormalMove) => void) {
    // data-orientation and data-ply appear with the first position shown, so
    // that "the board shows ply 0" never holds before the game has loaded.
    this.board = h("div", { class: "board", "data-testid": "board" });
    this.el = h("div", { class: "board-wrap" }, this.board);
    this.cg = Chessground(this.board, {
      coordinates: true,
      movable: {
        free: false,
        color: undefined,
        showDests: true,
        events: { after: (o, d, meta) => this.dropped(o, d, !!meta.premove) },
      },
      premovable: {
        enabled: false,
        showDests: true,
        castle: true,
        events: {
          set: (orig, dest) => (this.board.dataset.premove = `${orig}${dest}`),
          unset: () => delete this.board.dataset.premove,
        },
      },
      predroppable: { enabled: false },
      draggable: { showGhost: true },
      highlight: { lastMove: true, check: true },
      animation: { enabled: true, duration: 150 },
      drawable: { enabled: true, visible: true },
    });
  }

  /** Shows a position; the board's own state is always redrawn from this. */
  show(s: BoardShow): void {
    const before = this.shown;
    this.shown = s;
    if (this.chooser && before && before.fen === s.fen && before.movable === s.movable) {
      // The player is choosing a promotion: keep the pawn where it was dropped.
      this.cg.setAutoShapes(arrowShapes(s.arrow));
      this.board.dataset.ply = String(s.ply);
      return;
    }
    this.closeChooser();
    const pos = positionOf(s.fen);
    const turn = pos?.turn ?? "white";
    const movable = pos && s.movable === turn ? s.movable : undefined;
    const premovable = pos && !movable && s.premovable !== turn ? s.premovable : undefined;
    if (!s.premovable) this.cg.cancelPremove();
    this.cg.set({
      fen: s.fen,
      orientation: s.orientation,
      turnColor: turn,
      lastMove: s.lastMove as Key[] | undefined,
      check: pos?.isCheck() ? turn : false,
      movable: {
        color: movable ?? premovable,
        dests: movable && pos ? (chessgroundDests(pos) as Map<Key, Key[]>) : new Map(),
      },
      premovable: { enabled: !!s.premovable },
      drawable: { autoShapes: arrowShapes(s.arrow) },
    });
    this.board.dataset.orientation = s.orientation;
    this.board.dataset.ply = String(s.ply);
    // The queued move, now that it may be played: chessground plays it if
    // it is among the legal moves, else forgets it. After this call, as
    // playing it shows the next position.
    if (movable && this.cg.state.premovable.current) queueMicrotask(() => this.playPremove(s));
  }

  private playPremove(s: BoardShow): void {
    if (this.shown !== s || this.chooser) return;
    this.cg.playPremove();
  }

  dispose(): void {
    this.cg.destroy();
  }

  private dropped(orig: Key, dest: Key, premove = false): void {
    const s = this.shown;
    const pos = s && positionOf(s.fen);
    if (!s || !pos) return;
    const from = parseSquare(orig);
    const to = parseSquare(dest);
    if (from === undefined || to === undefined) return;
    if (isPromotion(pos, orig as SquareName, dest as SquareName)) {
      // A premove is played at once: a pawn premoved to the last rank queens.
      if (premove) return this.onMove({ from, to, promotion: "queen" });
      this.openChooser(pos.turn, (role) => this.onMove({ from, to, promotion: role }));
      return;
    }
    this.onMove({ from, to });
  }

  /** Asks which piece to promote to; closing it puts the pawn back. */
  private openChooser(color: "white" | "black", chosen: (role: Role) => void): void {
    this.closeChooser();
    const cancel = () => {
      this.closeChooser();
      if (this.shown) this.show(this.shown);
    };
    const chooser = h(
      "div",
      {
        class: "promotion",
        "data-testid": "promotion",
        role: "dialog",
        "aria-label": "Promote to",
        onkeydown: ((e: KeyboardEvent) => {
          if (e.key === "Escape") cancel();
        }) as EventListener,
      },
      h("p", {}, "Promote to"),
      h(
        "div",
        { class: "choices" },
        PROMOTIONS.map(([role, name, whiteGlyph, blackGlyph]) =>
          h(
            "button",
            {
              type: "button",
              "aria-label": name,
              title: name,
              onclick: () => {
                this.closeChooser();
                chosen(role);
              },
            },
            color === "white" ? whiteGlyph : blackGlyph,
          ),
        ),
      ),
      h("button", { type: "button", class: "secondary", onclick: cancel }, "Cancel"),
    );
    this.chooser = chooser;
    this.el.append(chooser);
    chooser.querySelector("button")?.focus();
  }

  private closeChooser(): void {
    this.chooser?.remove();
    this.chooser = null;
  }
}

function arrowShapes(uci: string | null): DrawShape[] {
  if (!uci || !/^[a-h][1-8][a-h][1-8]/.test(uci)) return [];
  return [{ orig: uci.slice(0, 2) as Key, dest: uci.slice(2, 4) as Key, brush: "green" }];
}
