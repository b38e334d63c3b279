// Both clocks: the server's figures (time left, the running side, moves to
// the next control), ticking here for the running side from the moment each
// figure arrived, so the reading never depends on this computer's wall clock
// agreeing with the server's.
import { Color, type ClockState, type SideClock } from "../gen/chess/common/v1/common_pb.js";
import { clockText, h } from "../ui.js";

export class Clocks {
  readonly white: HTMLElement;
  readonly black: HTMLElement;
  readonly whiteControl: HTMLElement;
  readonly blackControl: HTMLElement;
  private state: ClockState | null = null;
  private receivedAt = 0;
  private ply = -1;
  private daily = false;
  private timer: number | undefined;

  constructor() {
    this.white = h("span", { class: "clock", "data-testid": "clock-white", role: "timer", "aria-label": "White's clock" });
    this.black = h("span", { class: "clock", "data-testid": "clock-black", role: "timer", "aria-label": "Black's clock" });
    this.whiteControl = h("span", { class: "control muted" });
    this.blackControl = h("span", { class: "control muted" });
  }

  /** Daily games read in days and hours: the time left for the turn. */
  setDaily(daily: boolean): void {
    this.daily = daily;
  }

  /**
   * Takes the figures an event of ply `ply` carried, unless a later ply's
   * figures are already here.
   */
  update(state: ClockState | undefined, ply: number, force = false): void {
    if (!state || (!force && ply < this.ply)) return;
    this.state = state;
    this.receivedAt = performance.now();
    this.ply = ply;
    this.render();
    clearInterval(this.timer);
    this.timer = undefined;
    if (state.timed && state.running !== Color.UNSPECIFIED) {
      this.timer = window.setInterval(() => this.render(), this.daily ? 1000 : 100);
    }
  }

  dispose(): void {
    clearInterval(this.timer);
  }

  get timed(): boolean {
    return this.state?.timed ?? false;
  }

  private render(): void {
    const s = this.state;
    const elapsed = performance.now() - this.receivedAt;
    for (const [color, el, control, side] of [
      [Color.WHITE, this.white, this.whiteControl, s?.white],
      [Color.BLACK, this.black, this.blackControl, s?.black],
    ] as [Color, HTMLElement, HTMLElement, SideClock | undefined][]) {
      const timed = !!s?.timed;
      el.hidden = !timed;
      control.hidden = !timed || !side?.movesToControl;
      if (!timed || !side) continue;
      const running = s.running === color;
      const ms = Number(side.remainingMs) - (running ? elapsed : 0);
      const text = this.daily ? dailyText(ms) : clockText(ms);
      if (el.textContent !== text) el.textContent = text;
      el.toggleAttribute("data-running", running);
      el.classList.toggle("low", !this.daily && ms < 20_000);
      const n = side.movesToControl;
      control.textContent = n ? `${n} move${n === 1 ? "" : "s"} to the next control` : "";
    }
  }
}

/** Time left for a daily turn: "2 d 3 h", "5 h 12 min", "42:05". */
export function dailyText(ms: number): string {
  const t = Math.max(0, ms);
  const days = Math.floor(t / 86_400_000);
  const hours = Math.floor((t % 86_400_000) / 3_600_000);
  const minutes = Math.floor((t % 3_600_000) / 60_000);
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${minutes} min`;
  return clockText(t);
}
