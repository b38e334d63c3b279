// A player's profile: when they registered, their rating in every speed
// category with games and results, and a chart of their rating over time
// per category, drawn here as SVG from the whole rating history.
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { accounts, describeError, session } from "../api.js";
import {
  type PlayerProfile,
  type Rating,
  type RatingHistoryEntry,
  RatingSystem,
  SpeedCategory,
} from "../gen/chess/common/v1/common_pb.js";
import type { PlayerPresence } from "../gen/chess/gateway/v1/gateway_pb.js";
import type { View } from "../router.js";
import { fill, fillSpeedTabs, h, rating, speedName, SPEEDS } from "../ui.js";
import { renderGameHistory } from "./history.js";
import { ratingSystemName } from "./leaderboard.js";

const SVG = "http://www.w3.org/2000/svg";

function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  ...children: (Node | string)[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

/** Round steps ("nice numbers") covering [lo, hi] with about `count` ticks. */
function ratingTicks(lo: number, hi: number, count = 5): number[] {
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((v) => v >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) ticks.push(Math.round(v));
  return ticks;
}

const DAY = 86_400_000;

/** How to name the date of a game on the axis, given the span of the history. */
function dateLabel(span: number): (t: number) => string {
  if (span < DAY) return (t) => new Date(t).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  if (span < 300 * DAY) return (t) => new Date(t).toLocaleDateString(undefined, { day: "numeric", month: "short" });
  return (t) => new Date(t).toLocaleDateString(undefined, { month: "short", year: "numeric" });
}

/** The chart of one category's history (oldest first). */
export function ratingChart(
  entries: RatingHistoryEntry[],
  category: SpeedCategory,
  withDeviation: boolean,
  width = 720,
): SVGSVGElement {
  // Drawn at the width it is shown at, so that its text stays legible on a phone.
  const W = Math.round(Math.min(720, Math.max(300, width)));
  const H = W < 500 ? 220 : 280;
  const m = { left: 52, right: 18, top: 14, bottom: 34 };
  const pts = entries.map((e) => ({
    t: e.recordedAt ? timestampMs(e.recordedAt) : 0,
    r: e.ratingAfter,
    before: e.ratingBefore,
    d: withDeviation ? e.deviationAfter : 0,
    e,
  }));
  const lows = pts.map((p) => p.r - 2 * p.d).concat(pts.length ? [pts[0]!.before] : []);
  const highs = pts.map((p) => p.r + 2 * p.d).concat(pts.length ? [pts[0]!.before] : []);
  let lo = Math.min(...lows);
  let hi = Math.max(...highs);
  const pad = Math.max(10, (hi - lo) * 0.08);
  lo = Math.floor(lo - pad);
  hi = Math.ceil(hi + pad);
  // One step along the axis per rated game, so that games played minutes
  // apart stay apart; the dates of some of them label the axis. Step 0 is
  // the rating before the first game.
  const n = pts.length;
  const x = (i: number) => m.left + 10 + (i / Math.max(1, n)) * (W - m.left - m.right - 20);
  const y = (r: number) => H - m.bottom - ((r - lo) / (hi - lo)) * (H - m.top - m.bottom);

  const svg = s("svg", {
    viewBox: `0 0 ${W} ${H}`,
    class: "rating-chart",
    "data-testid": "rating-chart",
    "data-category": speedName(category).toLowerCase(),
    role: "img",
    "aria-label": `${speedName(category)} rating history: ${pts.length} rated game${pts.length === 1 ? "" : "s"}, now ${rating(pts.at(-1)?.r ?? 0)}`,
  });
  svg.append(s("title", {}, `${speedName(category)} rating history`));

  const grid = s("g", { class: "grid" });
  for (const v of ratingTicks(lo, hi)) {
    grid.append(
      s("line", { x1: m.left, x2: W - m.right, y1: y(v), y2: y(v) }),
      s("text", { x: m.left - 8, y: y(v), "text-anchor": "end", "dominant-baseline": "middle" }, String(v)),
    );
  }
  const t0 = pts[0]?.t ?? 0;
  const label = dateLabel((pts.at(-1)?.t ?? 0) - t0);
  const every = Math.max(1, Math.ceil(n / (W < 500 ? 3 : 6)));
  let last = "";
  for (let i = 1; i <= n; i += every) {
    const text = label(pts[i - 1]!.t);
    if (text === last) continue;
    last = text;
    grid.append(
      s("line", { x1: x(i), x2: x(i), y1: m.top, y2: H - m.bottom, class: "vertical" }),
      s("text", { x: x(i), y: H - m.bottom + 18, "text-anchor": "middle" }, text),
    );
  }
  svg.append(grid);
  svg.append(s("line", { class: "axis", x1: m.left, x2: m.left, y1: m.top, y2: H - m.bottom }));
  svg.append(s("line", { class: "axis", x1: m.left, x2: W - m.right, y1: H - m.bottom, y2: H - m.bottom }));

  if (pts.some((p) => p.d > 0)) {
    const upper = pts.map((p, i) => `${x(i + 1)},${y(p.r + 2 * p.d)}`);
    const lower = pts.map((p, i) => `${x(i + 1)},${y(p.r - 2 * p.d)}`).reverse();
    svg.append(s("polygon", { class: "band", points: [...upper, ...lower].join(" ") }));
  }
  const line = [`${x(0)},${y(pts[0]?.before ?? 0)}`, ...pts.map((p, i) => `${x(i + 1)},${y(p.r)}`)];
  svg.append(s("polyline", { class: "line", points: line.join(" ") }));
  svg.append(
    s("circle", { cx: x(0), cy: y(pts[0]?.before ?? 0), r: 3, class: "start" }, s("title", {}, `${rating(pts[0]?.before ?? 0)} before the first rated game`)),
  );
  const dots = s("g", { class: "points" });
  pts.forEach((p, i) => {
    const change = Math.round(p.r) - Math.round(p.before);
    const outcome = p.e.score === 1 ? "win" : p.e.score === 0 ? "loss" : "draw";
    const when = new Date(p.t).toLocaleString();
    const link = s(
      "a",
      { href: `/games/${encodeURIComponent(p.e.gameId)}` },
      s(
        "circle",
        { cx: x(i + 1), cy: y(p.r), r: n > 60 ? 2.5 : 4, class: outcome },
        s("title", {}, `${rating(p.r)} (${change >= 0 ? "+" : ""}${change}) after a ${outcome}, ${when}`),
      ),
    );
    dots.append(link);
  });
  svg.append(dots);
  return svg;
}

async function wholeHistory(username: string): Promise<RatingHistoryEntry[]> {
  const out: RatingHistoryEntry[] = [];
  let pageToken = "";
  for (let i = 0; i < 100; i++) {
    const r = await accounts.getRatingHistory({ username, pageSize: 200, pageToken });
    out.push(...r.entries);
    if (!r.nextPageToken) break;
    pageToken = r.nextPageToken;
  }
  const at = (e: RatingHistoryEntry) => (e.recordedAt ? timestampMs(e.recordedAt) : 0);
  return out.sort((a, b) => at(a) - at(b));
}

function ratingsTable(profile: PlayerProfile): HTMLElement {
  const glicko = profile.ratingSystem === RatingSystem.GLICKO2;
  const byCategory = new Map<SpeedCategory, Rating>(profile.ratings.map((r) => [r.category, r]));
  return h(
    "table",
    { class: "list ratings" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", {}, "Category"),
        h("th", { class: "num" }, "Rating"),
        glicko && h("th", { class: "num wide" }, "Deviation"),
        h("th", { class: "num" }, "Games"),
        h("th", { class: "num" }, "W / L / D"),
      ),
    ),
    h(
      "tbody",
      {},
      SPEEDS.map(([cat, name]) => {
        const r = byCategory.get(cat);
        if (!r) return null;
        return h(
          "tr",
          { "data-category": name.toLowerCase(), class: r.gamesPlayed ? null : "unplayed" },
          h("th", { scope: "row" }, name),
          h(
            "td",
            { class: "num", "data-testid": "rating" },
            h("strong", {}, rating(r.rating)),
            r.provisional ? h("span", { class: "provisional", title: "Provisional: not yet established" }, "?") : null,
          ),
          glicko && h("td", { class: "num wide" }, `±${Math.round(r.deviation)}`),
          h("td", { class: "num" }, r.gamesPlayed),
          h("td", { class: "num", title: "won / lost / drawn" }, `${r.wins} / ${r.losses} / ${r.draws}`),
        );
      }),
    ),
  );
}

/** "online", "playing now" or "offline", as the server sees the player. */
function presenceText(p: PlayerPresence | undefined): HTMLElement {
  const [state, text] = p?.playing ? ["playing", "playing now"] : p?.online ? ["online", "online"] : ["offline", "offline"];
  return h("span", { class: `presence ${state}`, "data-testid": "presence", "data-presence": state }, text, " · ");
}

/** For a signed-in viewer of someone else's profile: mute or unmute their chat. */
function muteControl(username: string): HTMLElement | null {
  const me = session();
  if (!me || me.username.toLowerCase() === username.toLowerCase()) return null;
  let muted = false;
  const button = h("button", { type: "button", class: "secondary small", "data-testid": "mute", disabled: true }, "Mute");
  const note = h("span", { class: "muted small", "data-testid": "mute-status", role: "status" });
  const error = h("span", { class: "error", role: "alert" });
  const show = (names: string[], changed: boolean) => {
    muted = names.some((n) => n.toLowerCase() === username.toLowerCase());
    button.textContent = muted ? "Unmute" : "Mute";
    button.disabled = false;
    note.textContent = muted ? "Muted: you will not see their chat messages." : changed ? "Unmuted: their chat messages show again." : "";
  };
  void accounts.listMutedPlayers({}).then(
    (r) => show(r.mutedUsernames, false),
    (e) => (error.textContent = describeError(e)),
  );
  button.addEventListener("click", async () => {
    error.textContent = "";
    button.disabled = true;
    try {
      const r = muted ? await accounts.unmutePlayer({ username }) : await accounts.mutePlayer({ username });
      show(r.mutedUsernames, true);
    } catch (e) {
      error.textContent = describeError(e);
      button.disabled = false;
    }
  });
  return h("p", { class: "mute-control" }, button, " ", note, error);
}

export function profileView(username: string): View {
  let disposed = false;
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const el = h("div", { class: "profile" }, h("h1", {}, username), body);

  (async () => {
    let profile: PlayerProfile | undefined;
    let presence: PlayerPresence | undefined;
    try {
      ({ profile, presence } = await accounts.getProfile({ username }));
    } catch (e) {
      if (!disposed) fill(body, h("p", { class: "card error", role: "alert" }, describeError(e)));
      return;
    }
    if (disposed || !profile) return;
    const glicko = profile.ratingSystem === RatingSystem.GLICKO2;
    const chartBox = h("div", { class: "chart" }, h("p", { class: "muted" }, "Loading the rating history…"));
    const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Chart category" });
    fill(
      body,
      h(
        "p",
        { class: "muted" },
        presenceText(presence),
        profile.registeredAt ? `Registered ${new Date(timestampMs(profile.registeredAt)).toLocaleDateString(undefined, { dateStyle: "long" })}` : "",
        ratingSystemName(profile.ratingSystem) ? ` · ${ratingSystemName(profile.ratingSystem)}` : "",
      ),
      muteControl(profile.username),
      h("section", { class: "card" }, h("h2", {}, "Ratings"), h("div", { class: "scroll" }, ratingsTable(profile))),
      h("section", { class: "card" }, h("h2", {}, "Rating history"), tabs, chartBox),
      renderGameHistory(profile.username),
    );
    let history: RatingHistoryEntry[];
    try {
      history = await wholeHistory(profile.username);
    } catch (e) {
      if (!disposed) fill(chartBox, h("p", { class: "error", role: "alert" }, describeError(e)));
      return;
    }
    if (disposed) return;
    const byCategory = new Map<SpeedCategory, RatingHistoryEntry[]>();
    for (const e of history) byCategory.set(e.category, [...(byCategory.get(e.category) ?? []), e]);
    const categories = SPEEDS.filter(([c]) => byCategory.has(c));
    if (categories.length === 0) {
      fill(chartBox, h("p", { class: "muted empty" }, "No rated games yet."));
      return;
    }
    // The category with the most games first.
    let shown = categories.reduce((a, b) => (byCategory.get(b[0])!.length > byCategory.get(a[0])!.length ? b : a))[0];
    const draw = () => {
      fillSpeedTabs(
        tabs,
        categories,
        shown,
        (c, name) => `${name} (${byCategory.get(c)!.length})`,
        (chosen) => {
          shown = chosen;
          draw();
        },
      );
      const entries = byCategory.get(shown)!;
      const ratings = entries.map((e) => e.ratingAfter);
      fill(
        chartBox,
        ratingChart(entries, shown, glicko, chartBox.clientWidth || 720),
        h(
          "p",
          { class: "muted small legend" },
          `${entries.length} rated game${entries.length === 1 ? "" : "s"} · highest ${rating(Math.max(...ratings))} · lowest ${rating(Math.min(...ratings))}`,
          glicko ? " · the band spans two deviations either side" : "",
          " · points: ",
          h("span", { class: "dot win" }),
          " win ",
          h("span", { class: "dot draw" }),
          " draw ",
          h("span", { class: "dot loss" }),
          " loss",
        ),
      );
    };
    draw();
  })();

  return {
    el,
    title: username,
    dispose() {
      disposed = true;
    },
  };
}
