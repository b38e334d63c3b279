// The move list: SAN in numbered pairs, the move waiting for the server's
// answer shown after them, the list scrolled to the latest move.
import { h } from "../ui.js";
import type { MoveRow } from "./model.js";

export class MoveList {
  readonly el: HTMLElement;
  private readonly list: HTMLOListElement;

  constructor() {
    this.list = h("ol", { class: "move-pairs" });
    this.el = h("div", { class: "moves", "data-testid": "moves", "aria-label": "Moves", tabindex: 0 }, this.list);
  }

  /**
   * `moves` of a game that started from `initialFen`; `pending` is the
   * player's move not yet answered.
   */
  show(moves: MoveRow[], initialFen: string, pending: string | null): void {
    const fields = initialFen.split(" ");
    const blackStarts = fields[1] === "b";
    const first = Number(fields[5]);
    const sans: { san: string; pending: boolean }[] = moves.map((m) => ({ san: m.san || m.uci, pending: false }));
    if (pending) sans.push({ san: pending, pending: true });
    const items: HTMLElement[] = [];
    let i = 0;
    let number = Number.isInteger(first) && first > 0 ? first : 1;
    if (blackStarts && sans.length > 0) {
      items.push(pair(number++, null, sans[0]!));
      i = 1;
    }
    for (; i < sans.length; i += 2) items.push(pair(number++, sans[i]!, sans[i + 1] ?? null));
    if (items.length === 0) items.push(h("li", { class: "empty muted" }, "No moves yet."));
    this.list.replaceChildren(...items);
    this.el.scrollTop = this.el.scrollHeight;
  }
}

function pair(
  number: number,
  white: { san: string; pending: boolean } | null,
  black: { san: string; pending: boolean } | null,
): HTMLElement {
  const cell = (m: { san: string; pending: boolean } | null) =>
    m ? h("span", { class: m.pending ? "san pending" : "san", title: m.pending ? "Sending…" : null }, m.san) : h("span", { class: "san" }, "…");
  return h("li", { value: number }, h("span", { class: "num" }, `${number}.`), cell(white), black ? cell(black) : null);
}
