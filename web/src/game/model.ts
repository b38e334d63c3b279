// A game as the page knows it: built from a snapshot, then moved on by the
// stream's events strictly in ply order (an event already applied is
// skipped, a gap is reported so the page can fetch the whole game again),
// and the chess the page computes itself (legal moves, SAN, FEN) with
// chessops.
import { Chess, type Position } from "chessops/chess";
import { castlingSide, normalizeMove } from "chessops/chess";
import { makeFen, parseFen } from "chessops/fen";
import { makeSan, parseSan } from "chessops/san";
import { isNormal, type NormalMove, type SquareName } from "chessops/types";
import { makeSquare, parseUci, squareRank } from "chessops/util";
import {
  type ClockState,
  Color,
  type GameEnded,
  type GameEvent,
  GameResult,
  type GameState,
  GameStatus,
  type MoveMade,
  type Player,
  RuleSet,
  type SpeedCategory,
  Termination,
  type TimeControl,
} from "../gen/chess/common/v1/common_pb.js";

export interface MoveRow {
  ply: number;
  uci: string;
  san: string;
}

export interface Game {
  id: string;
  white: Player | undefined;
  black: Player | undefined;
  timeControl: TimeControl | undefined;
  speed: SpeedCategory;
  rules: RuleSet;
  rated: boolean;
  hintsAllowed: boolean;
  initialFen: string;
  fen: string;
  moves: MoveRow[];
  ply: number;
  turn: Color;
  status: GameStatus;
  result: GameResult;
  termination: Termination;
  /** The side whose draw offer stands, if any. */
  drawOffer: Color;
  /** Half-moves since the last capture or pawn move. */
  halfmoveClock: number;
  /** Set while the engine owes a move it failed to produce. */
  engineFailed: string | null;
}

/** Raised when an event skips a ply: the page must load the whole game again. */
export class PlyGap extends Error {
  constructor(have: number, got: number) {
    super(`the stream skipped from ply ${have} to ${got}`);
  }
}

export function fromSnapshot(s: GameState): Game {
  return {
    id: s.gameId,
    white: s.white,
    black: s.black,
    timeControl: s.timeControl,
    speed: s.speed,
    rules: s.rules,
    rated: s.rated,
    hintsAllowed: s.hintsAllowed,
    initialFen: s.initialFen,
    fen: s.fen,
    moves: s.moves.map((m) => ({ ply: m.ply, uci: m.uci, san: m.san })),
    ply: s.ply,
    turn: s.turn,
    status: s.status,
    result: s.result,
    termination: s.termination,
    drawOffer: s.drawOffer,
    halfmoveClock: s.halfmoveClock,
    engineFailed: s.engineFailed ? "" : null,
  };
}

/**
 * Applies a move if it is the next ply: true if applied, false if the game
 * already has it; throws PlyGap if plies are missing before it.
 */
export function applyMove(g: Game, mm: MoveMade): boolean {
  const ply = mm.move?.ply ?? 0;
  if (ply <= g.ply) return false;
  if (ply !== g.ply + 1) throw new PlyGap(g.ply, ply);
  g.moves.push({ ply, uci: mm.move?.uci ?? "", san: mm.move?.san ?? "" });
  g.ply = ply;
  g.fen = mm.fen;
  g.turn = mm.color === Color.WHITE ? Color.BLACK : Color.WHITE;
  // Moving declines the opponent's offer; the mover's own offer stands.
  if (g.drawOffer !== Color.UNSPECIFIED && g.drawOffer !== mm.color) g.drawOffer = Color.UNSPECIFIED;
  g.halfmoveClock = halfmovesOf(mm.fen) ?? g.halfmoveClock;
  g.engineFailed = null;
  return true;
}

/** Applies one stream event; returns a notice for the page to show, if any. */
export function applyEvent(g: Game, e: GameEvent): { changed: boolean; notice?: string } {
  const k = e.kind;
  switch (k.case) {
    case "moveMade":
      return { changed: applyMove(g, k.value) };
    case "drawOffered":
      g.drawOffer = k.value.by;
      return { changed: true };
    case "drawDeclined":
      g.drawOffer = Color.UNSPECIFIED;
      return { changed: true, notice: `${k.value.by === Color.WHITE ? "White" : "Black"} declined the draw.` };
    case "fiftyMoveWarning":
      return { changed: true };
    case "gameEnded":
      applyEnding(g, k.value);
      return { changed: true };
    case "engineFailed":
      g.engineFailed = k.value.message;
      return { changed: true };
    case "takebackOffered":
      return { changed: true, notice: `${sideName(k.value.by)} asks to take back their last move.` };
    case "takebackDeclined":
      return { changed: true, notice: `${sideName(k.value.by)} declined the takeback.` };
    case "takebackCancelled":
      return { changed: true, notice: `${sideName(k.value.by)} withdrew the takeback request.` };
    case "takenBack":
      // The game went back: the event carries it whole, moves and all.
      if (k.value.game) Object.assign(g, fromSnapshot(k.value.game));
      return { changed: true, notice: `${sideName(k.value.by)}'s last move was taken back.` };
    default:
      return { changed: false };
  }
}

function sideName(c: Color): string {
  return c === Color.WHITE ? "White" : "Black";
}

export function isActive(g: Game): boolean {
  return g.status === GameStatus.ACTIVE;
}

/** Full moves left before the fifty-move rule draws the game, if ten or fewer. */
export function fiftyMovesLeft(g: Game): number | null {
  if (g.rules === RuleSet.UQCHESS || !isActive(g)) return null;
  const left = Math.ceil((100 - g.halfmoveClock) / 2);
  return left <= 10 ? Math.max(0, left) : null;
}

function halfmovesOf(fen: string): number | undefined {
  const n = Number(fen.split(" ")[4]);
  return Number.isInteger(n) ? n : undefined;
}

/**
 * How many times the position now on the board has stood in the game, this
 * time included, counted as the server counts for a threefold claim: the
 * same pieces, side to move, castling rights and en passant capture (only
 * if one is legal). 0 if the moves cannot be replayed.
 */
export function repetitions(g: Game): number {
  const pos = positionOf(g.initialFen);
  if (!pos) return 0;
  const key = () => makeFen(pos.toSetup(), { epd: true });
  const seen = [key()];
  for (const m of g.moves) {
    const move = parseUci(m.uci);
    if (!move) return 0;
    const normal = normalizeMove(pos, move);
    if (!pos.isLegal(normal)) return 0;
    pos.play(normal);
    seen.push(key());
  }
  const now = seen[seen.length - 1];
  return seen.filter((k) => k === now).length;
}

/** The position of a FEN, or null if chessops cannot read it. */
export function positionOf(fen: string): Chess | null {
  const setup = parseFen(fen);
  if (setup.isErr) return null;
  const pos = Chess.fromSetup(setup.value);
  return pos.isOk ? pos.value : null;
}

/**
 * The UCI the server expects: castling as the king's two-square step (chessops
 * and chessground also write it as the king taking its own rook).
 */
export function standardUci(pos: Position, move: NormalMove): string {
  let to = move.to;
  const side = castlingSide(pos, move);
  if (side) to = squareFileRank(side === "h" ? 6 : 2, squareRank(move.from));
  return makeSquare(move.from) + makeSquare(to) + (move.promotion ? roleLetter(move.promotion) : "");
}

function squareFileRank(file: number, rank: number): number {
  return rank * 8 + file;
}

function roleLetter(role: string): string {
  return role === "knight" ? "n" : role.charAt(0);
}

/**
 * `move` as chessops plays it (castling as the king taking its rook), if it
 * is legal in `pos`; null otherwise.
 */
export function legalMove(pos: Position, move: NormalMove): NormalMove | null {
  const m = normalizeMove(pos, move) as NormalMove;
  const normal: NormalMove = move.promotion ? { ...m, promotion: move.promotion } : m;
  return pos.isLegal(normal) ? normal : null;
}

/** A typed move (UCI or SAN) made legal in `pos`, or null. */
export function resolveMove(pos: Position, text: string): NormalMove | null {
  const t = text.trim();
  if (!t) return null;
  const uci = parseUci(t.toLowerCase());
  const legal = uci && isNormal(uci) ? legalMove(pos, uci) : null;
  if (legal) return legal;
  const san = parseSan(pos, t.replace(/[!?]+$/, ""));
  return san && isNormal(san) ? san : null;
}

/** Ends the game as `e` says. */
export function applyEnding(g: Game, e: GameEnded): void {
  g.status = GameStatus.FINISHED;
  g.result = e.result;
  g.termination = e.termination;
  g.drawOffer = Color.UNSPECIFIED;
  g.engineFailed = null;
}

export interface LocalMove {
  uci: string;
  san: string;
  fen: string;
  from: SquareName;
  to: SquareName;
}

/** Plays `move` on a copy of `pos`: the move in both notations and the FEN after it. */
export function playLocal(pos: Position, move: NormalMove): LocalMove {
  const uci = standardUci(pos, move);
  const san = makeSan(pos, move);
  const after = pos.clone();
  after.play(move);
  return {
    uci,
    san,
    fen: makeFen(after.toSetup()),
    from: uci.slice(0, 2) as SquareName,
    to: uci.slice(2, 4) as SquareName,
  };
}

/** Whether moving `from` to `to` in `pos` is a pawn reaching the last rank. */
export function isPromotion(pos: Position, from: SquareName, to: SquareName): boolean {
  const piece = pos.board.get(parseSquareName(from));
  const rank = squareRank(parseSquareName(to));
  return piece?.role === "pawn" && (rank === 7 || rank === 0);
}

function parseSquareName(s: SquareName): number {
  return (s.charCodeAt(1) - 49) * 8 + (s.charCodeAt(0) - 97);
}

/** The squares of a UCI move, for the last-move highlight. */
export function uciSquares(uci: string): SquareName[] | undefined {
  if (!/^[a-h][1-8][a-h][1-8]/.test(uci)) return undefined;
  return [uci.slice(0, 2) as SquareName, uci.slice(2, 4) as SquareName];
}

export function colorOf(c: Color): "white" | "black" | undefined {
  return c === Color.WHITE ? "white" : c === Color.BLACK ? "black" : undefined;
}

export function other(c: Color): Color {
  return c === Color.WHITE ? Color.BLACK : c === Color.BLACK ? Color.WHITE : Color.UNSPECIFIED;
}

/** A clock reading and the moment (page time) it arrived. */
export interface ClockFigure {
  state: ClockState;
  receivedAt: number;
  ply: number;
}

export function isAborted(g: Game): boolean {
  return g.termination === Termination.ABORTED;
}
