// Small DOM helpers and the wording the views share.
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  Color,
  GameResult,
  type Player,
  SpeedCategory,
  Termination,
  type TimeControl,
} from "./gen/chess/common/v1/common_pb.js";

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | null | undefined>;

/** An element `tag` with `attrs` (on… keys are listeners) and `children`. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, ...children);
  return el;
}

export function append(el: Node, ...children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the children of `el`. */
export function fill(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  append(el, ...children);
}

/** A message the player reads until it goes away on its own or is closed. */
export function toast(message: string, kind: "error" | "info" = "error"): void {
  let box = document.getElementById("toasts");
  if (!box) {
    box = h("div", { id: "toasts", role: "status", "aria-live": "polite" });
    document.body.append(box);
  }
  const item = h("div", { class: `toast ${kind}` }, message);
  item.addEventListener("click", () => item.remove());
  box.append(item);
  setTimeout(() => item.remove(), kind === "error" ? 8000 : 4000);
}

/** Removes the messages of `kind` still showing. */
export function clearToasts(kind: "error" | "info"): void {
  for (const item of document.querySelectorAll(`#toasts .toast.${kind}`)) item.remove();
}

export const SPEEDS: [SpeedCategory, string][] = [
  [SpeedCategory.BULLET, "Bullet"],
  [SpeedCategory.BLITZ, "Blitz"],
  [SpeedCategory.RAPID, "Rapid"],
  [SpeedCategory.CLASSICAL, "Classical"],
  [SpeedCategory.CORRESPONDENCE, "Correspondence"],
];

/** Fills the tablist `tabs` with a tab for each of `categories`, `selected`
 * marked; choosing another calls `choose` with it. `label` names a tab. */
export function fillSpeedTabs(
  tabs: HTMLElement,
  categories: [SpeedCategory, string][],
  selected: SpeedCategory,
  label: (category: SpeedCategory, name: string) => string,
  choose: (category: SpeedCategory) => void,
): void {
  fill(
    tabs,
    categories.map(([category, name]) =>
      h(
        "button",
        {
          type: "button",
          role: "tab",
          class: "tab",
          "aria-selected": category === selected ? "true" : "false",
          onclick: () => {
            if (category !== selected) choose(category);
          },
        },
        label(category, name),
      ),
    ),
  );
}

export function speedName(s: SpeedCategory): string {
  if (s === SpeedCategory.UNTIMED) return "Untimed";
  return SPEEDS.find(([v]) => v === s)?.[1] ?? "—";
}

/** "5+3", "40 moves in 90 min", "daily, 48 h a move", "untimed". */
export function timeControlText(tc: TimeControl | undefined): string {
  const k = tc?.kind;
  switch (k?.case) {
    case "incremental": {
      const { initialSeconds: i, incrementSeconds: inc } = k.value;
      return `${minutesText(i)}+${inc}`;
    }
    case "movesInPeriod": {
      const { moves, periodSeconds } = k.value;
      return `${moves} moves in ${durationText(periodSeconds)}`;
    }
    case "daily":
      return `daily, ${k.value.turnHours} h a move`;
    default:
      return "untimed";
  }
}

/** Initial time in minutes as players write it: "3", "½", "1½", else "75 s". */
function minutesText(seconds: number): string {
  const whole = Math.floor(seconds / 60);
  const fraction = { 0: "", 15: "¼", 30: "½", 45: "¾" }[seconds % 60];
  if (fraction === undefined) return `${seconds} s`;
  if (fraction === "") return `${whole}`;
  return whole === 0 ? fraction : `${whole}${fraction}`;
}

function durationText(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** The name of a game's player. */
export function playerName(p: Player | undefined): string {
  switch (p?.kind.case) {
    case "registered":
      return p.kind.value.username;
    case "guest":
      return p.kind.value.displayName || "Guest";
    case "engine":
      return p.kind.value.level === 0 ? "Stockfish" : `Stockfish level ${p.kind.value.level}`;
    default:
      return "?";
  }
}

export function colorName(c: Color): string {
  return c === Color.WHITE ? "White" : c === Color.BLACK ? "Black" : "—";
}

const TERMINATIONS: Record<Termination, string> = {
  [Termination.UNSPECIFIED]: "",
  [Termination.CHECKMATE]: "checkmate",
  [Termination.STALEMATE]: "stalemate",
  [Termination.RESIGNATION]: "resignation",
  [Termination.TIMEOUT]: "time",
  [Termination.TIMEOUT_VS_INSUFFICIENT_MATERIAL]: "time against insufficient material",
  [Termination.DRAW_AGREEMENT]: "agreement",
  [Termination.THREEFOLD_REPETITION]: "threefold repetition",
  [Termination.FIFTY_MOVE_RULE]: "the fifty-move rule",
  [Termination.INSUFFICIENT_MATERIAL]: "insufficient material",
  [Termination.ABORTED]: "",
};

/** "1-0", "½-½" … */
export function scoreText(r: GameResult): string {
  return r === GameResult.WHITE_WINS ? "1-0" : r === GameResult.BLACK_WINS ? "0-1" : r === GameResult.DRAW ? "½-½" : "*";
}

/** "White wins by checkmate", "Draw by stalemate", "Game aborted". */
export function resultText(r: GameResult, t: Termination): string {
  if (t === Termination.ABORTED) return "Game aborted";
  const how = TERMINATIONS[t] ? ` by ${TERMINATIONS[t]}` : "";
  if (r === GameResult.WHITE_WINS) return `White wins${how}`;
  if (r === GameResult.BLACK_WINS) return `Black wins${how}`;
  if (r === GameResult.DRAW) return `Draw${how}`;
  return "Game over";
}

/** A clock reading: "4:59", "0:09.3" under ten seconds, "1:02:03", "2 d 3 h". */
export function clockText(ms: number): string {
  const t = Math.max(0, ms);
  if (t >= 2 * 86_400_000) return `${Math.floor(t / 86_400_000)} d ${Math.floor((t % 86_400_000) / 3_600_000)} h`;
  const s = Math.floor(t / 1000);
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = s % 60;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (hh > 0) return `${hh}:${pad(mm)}:${pad(ss)}`;
  if (t < 10_000) return `${mm}:${pad(ss)}.${Math.floor((t % 1000) / 100)}`;
  return `${mm}:${pad(ss)}`;
}

export function dateText(ts: Timestamp | undefined): string {
  return ts ? new Date(timestampMs(ts)).toLocaleString() : "";
}

export function rating(r: number): string {
  return String(Math.round(r));
}
