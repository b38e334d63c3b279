// What the lobby, "my games", the leaderboard and the profile share: sending
// a signed-out player to sign in, a game seen from one player's side, keyed
// table rows that survive a refresh, and the time-control fields of the
// lobby's forms.
import { session } from "../api.js";
import { Color, type GameState, type TimeControl } from "../gen/chess/common/v1/common_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { TimeControlSchema } from "../gen/chess/common/v1/common_pb.js";
import { navigate } from "../router.js";
import { h } from "../ui.js";

/** The address of the sign-in page that comes back here afterwards. */
export function signInPath(): string {
  return `/login?next=${encodeURIComponent(location.pathname + location.search)}`;
}

/**
 * True if someone is signed in; otherwise sends the player to sign in (and
 * back here afterwards) and returns false.
 */
export function signedInOrAway(): boolean {
  if (session()) return true;
  navigate(signInPath());
  return false;
}

/** The colour the signed-in player has in `game`, if they play it. */
export function myColor(game: GameState): Color {
  const me = session()?.playerId;
  if (!me) return Color.UNSPECIFIED;
  const id = (p: GameState["white"]) => (p?.kind.case === "registered" ? p.kind.value.playerId : "");
  if (id(game.white) === me) return Color.WHITE;
  if (id(game.black) === me) return Color.BLACK;
  return Color.UNSPECIFIED;
}

export function other(c: Color): Color {
  return c === Color.WHITE ? Color.BLACK : c === Color.BLACK ? Color.WHITE : Color.UNSPECIFIED;
}

/**
 * Puts `rows` (each with a stable key and a signature of its content) in
 * `body`, reusing the element of every row whose signature did not change,
 * so a refresh neither flickers nor pulls a button from under the pointer.
 */
export class KeyedRows {
  private rows = new Map<string, { sig: string; el: HTMLElement }>();

  constructor(readonly body: HTMLElement) {}

  update(items: { key: string; sig: string; render: () => HTMLElement }[]): void {
    const next = new Map<string, { sig: string; el: HTMLElement }>();
    const els: HTMLElement[] = [];
    for (const item of items) {
      const old = this.rows.get(item.key);
      const el = old && old.sig === item.sig ? old.el : item.render();
      next.set(item.key, { sig: item.sig, el });
      els.push(el);
    }
    this.rows = next;
    const same = els.length === this.body.children.length && els.every((el, i) => this.body.children[i] === el);
    if (!same) this.body.replaceChildren(...els);
  }
}

export type TimeControlInit = MessageInitShape<typeof TimeControlSchema>;
export type TimeControlKind = "incremental" | "movesInPeriod" | "daily" | "untimed";

export interface TimeControlFields {
  el: HTMLElement;
  kind(): TimeControlKind;
  /** The time control the fields describe, or the sentence saying what is wrong. */
  value(): TimeControlInit | string;
  onChange(listener: () => void): void;
}

/**
 * The fields of a time control of every kind: Game in k minutes plus an
 * increment, n moves in k minutes, daily with a turn limit, untimed.
 */
export function timeControlFields(initial: TimeControlKind, kinds?: TimeControlKind[]): TimeControlFields {
  const labels: Record<TimeControlKind, string> = {
    incremental: "Minutes + increment",
    movesInPeriod: "Moves in a period (n/k)",
    daily: "Daily (correspondence)",
    untimed: "Untimed",
  };
  const offered = kinds ?? (Object.keys(labels) as TimeControlKind[]);
  const select = h(
    "select",
    { name: "tc-kind" },
    offered.map((k) => h("option", { value: k, selected: k === initial }, labels[k])),
  );
  const num = (name: string, value: number, min: number, max: number, step = 1) =>
    h("input", { name, type: "number", value, min, max, step, required: true, inputmode: "decimal" });
  const minutes = num("minutes", 5, 0.25, 600, 0.25);
  const increment = num("increment", 3, 0, 180);
  const moves = num("moves", 40, 1, 200);
  const period = num("period", 90, 1, 600);
  const hours = h(
    "select",
    { name: "turn-hours" },
    [24, 48, 72, 96, 120].map((n) => h("option", { value: n, selected: n === 48 }, `${n} hours`)),
  );
  const groups: Record<TimeControlKind, HTMLElement> = {
    incremental: h(
      "div",
      { class: "row" },
      labelled("Minutes", minutes),
      labelled("Increment (s)", increment, "Increment (seconds)"),
    ),
    movesInPeriod: h(
      "div",
      { class: "row" },
      labelled("Moves", moves),
      labelled("Period (minutes)", period, "Period"),
    ),
    daily: h("div", { class: "row" }, labelled("Time per move", hours)),
    untimed: h("div", { class: "row" }),
  };
  const listeners: (() => void)[] = [];
  const kind = () => select.value as TimeControlKind;
  const show = () => {
    for (const [k, g] of Object.entries(groups)) {
      g.hidden = k !== kind();
      for (const input of g.querySelectorAll("input, select")) (input as HTMLInputElement).disabled = k !== kind();
    }
  };
  select.addEventListener("change", () => {
    show();
    for (const l of listeners) l();
  });
  show();
  const el = h("fieldset", { class: "tc" }, labelled("Time control", select), ...Object.values(groups));
  const int = (input: HTMLInputElement, what: string, min: number, max: number): number | string => {
    const n = Number(input.value);
    if (input.value.trim() === "" || !Number.isFinite(n) || n < min || n > max) return `${what} must be between ${min} and ${max}.`;
    return n;
  };
  return {
    el,
    kind,
    onChange: (l) => listeners.push(l),
    value(): TimeControlInit | string {
      switch (kind()) {
        case "incremental": {
          const m = int(minutes, "Minutes", 0.25, 600);
          const i = int(increment, "The increment", 0, 180);
          if (typeof m === "string") return m;
          if (typeof i === "string") return i;
          return {
            kind: {
              case: "incremental",
              value: { initialSeconds: Math.round(m * 60), incrementSeconds: Math.round(i) },
            },
          };
        }
        case "movesInPeriod": {
          const n = int(moves, "Moves", 1, 200);
          const p = int(period, "Minutes", 1, 600);
          if (typeof n === "string") return n;
          if (typeof p === "string") return p;
          return { kind: { case: "movesInPeriod", value: { moves: Math.round(n), periodSeconds: Math.round(p * 60) } } };
        }
        case "daily":
          return { kind: { case: "daily", value: { turnHours: Number(hours.value) } } };
        default:
          return { kind: { case: "untimed", value: {} } };
      }
    },
  };
}

/**
 * A visible label around `control`, which is also the control's accessible
 * name (`name`, or the text): a select's chosen option or a unit never
 * becomes part of it.
 */
export function labelled(text: string, control: HTMLElement, name = text): HTMLLabelElement {
  control.setAttribute("aria-label", name);
  return h("label", {}, text, control);
}

/** Whether a time control is daily (a correspondence table). */
export function isDaily(tc: TimeControl | undefined): boolean {
  return tc?.kind.case === "daily";
}
