// The players directory: every registered player, found by the start of
// their username as one types, sorted by name, rating or games in a
// category either way, a page at a time, with their ratings in every
// category (provisional ones marked "?") and who is online or playing now.
import { accounts, describeError } from "../api.js";
import { type Rating, SpeedCategory } from "../gen/chess/common/v1/common_pb.js";
import { type DirectoryPlayer, PlayerSort } from "../gen/chess/gateway/v1/gateway_pb.js";
import type { View } from "../router.js";
import { fill, h, rating, SPEEDS } from "../ui.js";
import { speedSlug } from "./leaderboard.js";

const PAGE_SIZES = [10, 25, 50, 100];
const PAGE_SIZE = 25;
/** How long typing pauses before the directory is asked. */
const DEBOUNCE_MS = 250;
/** What the server accepts as a prefix (ListPlayersRequest.username_prefix). */
const PREFIX = /^[A-Za-z0-9_-]{0,20}$/;

const SORTS: [PlayerSort, string, string][] = [
  [PlayerSort.NAME, "name", "Name"],
  [PlayerSort.RATING, "rating", "Rating"],
  [PlayerSort.GAMES, "games", "Games"],
];

/** A rating as shown in the directory: "1500", or "1200?" while provisional. */
function ratingCell(r: Rating | undefined, chosen: boolean): HTMLElement {
  const td = h("td", { class: chosen ? "num chosen" : "num wide", "data-testid": "rating" });
  if (!r) {
    td.textContent = "—";
    return td;
  }
  td.append(chosen ? h("strong", {}, rating(r.rating)) : rating(r.rating));
  if (r.provisional) td.append(h("span", { class: "provisional", title: "Provisional: not yet established" }, "?"));
  return td;
}

function presenceBadge(p: DirectoryPlayer): HTMLElement | null {
  if (p.presence?.playing) return h("span", { class: "badge playing", "data-testid": "presence", "data-presence": "playing" }, "playing");
  if (p.presence?.online) {
    return h("span", { class: "online-dot", "data-testid": "presence", "data-presence": "online", title: "Online", "aria-label": "online" });
  }
  return null;
}

export function playersView(query: URLSearchParams): View {
  let prefix = PREFIX.test(query.get("q") ?? "") ? (query.get("q") ?? "") : "";
  let sort = SORTS.find(([, slug]) => slug === query.get("sort"))?.[0] ?? PlayerSort.NAME;
  let category = SPEEDS.find(([c]) => speedSlug(c) === query.get("speed"))?.[0] ?? SpeedCategory.BLITZ;
  let descending = query.get("order") === "desc";
  const askedSize = Number(query.get("per"));
  let pageSize = PAGE_SIZES.includes(askedSize) ? askedSize : PAGE_SIZE;
  let tokens: string[] = [""];
  let page = 0;
  let nextToken = "";
  let disposed = false;
  let generation = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const search = h("input", {
    type: "search",
    value: prefix,
    maxlength: 20,
    placeholder: "Username starts with…",
    autocomplete: "off",
    "data-testid": "players-search",
    "aria-label": "Search by username",
  });
  const sortSelect = h(
    "select",
    { "data-testid": "players-sort", "aria-label": "Sort by" },
    SORTS.map(([v, , label]) => h("option", { value: String(v), selected: v === sort }, label)),
  );
  const categorySelect = h(
    "select",
    { "data-testid": "players-category", "aria-label": "Category" },
    SPEEDS.map(([v, name]) => h("option", { value: String(v), selected: v === category }, name)),
  );
  const orderSelect = h(
    "select",
    { "data-testid": "players-order", "aria-label": "Order" },
    h("option", { value: "asc", selected: !descending }, "Ascending"),
    h("option", { value: "desc", selected: descending }, "Descending"),
  );
  const sizeSelect = h(
    "select",
    { "data-testid": "players-per-page", "aria-label": "Players per page" },
    PAGE_SIZES.map((n) => h("option", { value: String(n), selected: n === pageSize }, `${n} per page`)),
  );
  const online = h("p", { class: "muted online-count", "data-testid": "players-online", role: "status" });
  const head = h("tr");
  const body = h("tbody");
  const empty = h("p", { class: "muted empty", hidden: true, "data-testid": "players-empty" });
  const error = h("p", { class: "error line", role: "alert" });
  const prev = h("button", { type: "button", class: "secondary small" }, "Previous");
  const next = h("button", { type: "button", class: "secondary small" }, "Next");
  const pageInfo = h("span", { class: "muted", "data-testid": "players-page" });
  const pager = h("div", { class: "pager", hidden: true }, prev, pageInfo, next);

  function drawHead(): void {
    fill(
      head,
      h("th", {}, "Player"),
      SPEEDS.map(([c, name]) => h("th", { class: c === category ? "num chosen" : "num wide" }, name)),
      h("th", { class: "num" }, "Games"),
    );
  }

  function row(p: DirectoryPlayer): HTMLElement | null {
    const profile = p.profile;
    if (!profile) return null;
    const byCategory = new Map<SpeedCategory, Rating>(profile.ratings.map((r) => [r.category, r]));
    return h(
      "tr",
      { "data-testid": "player-row", "data-username": profile.username },
      h(
        "td",
        { class: "who" },
        h("a", { href: `/players/${encodeURIComponent(profile.username)}` }, profile.username),
        " ",
        presenceBadge(p),
      ),
      SPEEDS.map(([c]) => ratingCell(byCategory.get(c), c === category)),
      h("td", { class: "num", "data-testid": "games" }, p.gamesPlayed),
    );
  }

  /** Keeps the choices in the address, so that a reload or a shared link shows the same list. */
  function remember(): void {
    const q = new URLSearchParams();
    if (prefix) q.set("q", prefix);
    if (sort !== PlayerSort.NAME) q.set("sort", SORTS.find(([v]) => v === sort)![1]);
    if (category !== SpeedCategory.BLITZ) q.set("speed", speedSlug(category));
    if (descending) q.set("order", "desc");
    if (pageSize !== PAGE_SIZE) q.set("per", String(pageSize));
    const s = q.toString();
    history.replaceState(null, "", s ? `/players?${s}` : "/players");
  }

  function restart(): void {
    tokens = [""];
    page = 0;
    remember();
    void load();
  }

  async function load(): Promise<void> {
    const mine = ++generation;
    error.textContent = "";
    prev.disabled = next.disabled = true;
    try {
      const r = await accounts.listPlayers({
        usernamePrefix: prefix,
        sort,
        category,
        descending,
        pageSize,
        pageToken: tokens[page],
      });
      if (disposed || mine !== generation) return;
      online.textContent = `${r.playersOnline} player${r.playersOnline === 1 ? "" : "s"} online`;
      drawHead();
      fill(body, r.players.map(row));
      empty.textContent = prefix ? `No player's name starts with “${prefix}”.` : "Nobody has registered yet.";
      empty.hidden = r.players.length > 0;
      nextToken = r.nextPageToken;
      prev.disabled = page === 0;
      next.disabled = !nextToken;
      pageInfo.textContent = `page ${page + 1}`;
      pager.hidden = page === 0 && !nextToken;
    } catch (e) {
      if (disposed || mine !== generation) return;
      error.textContent = describeError(e);
      prev.disabled = page === 0;
    }
  }

  search.addEventListener("input", () => {
    clearTimeout(timer);
    const typed = search.value.trim();
    if (!PREFIX.test(typed)) {
      // Nothing the server could find: say so rather than ask.
      generation++;
      error.textContent = "Usernames hold only letters, digits, _ and -.";
      return;
    }
    error.textContent = "";
    timer = setTimeout(() => {
      if (typed === prefix) return;
      prefix = typed;
      restart();
    }, DEBOUNCE_MS);
  });
  sortSelect.addEventListener("change", () => {
    sort = Number(sortSelect.value) as PlayerSort;
    // Best and busiest first unless asked otherwise; names from A.
    descending = sort !== PlayerSort.NAME;
    orderSelect.value = descending ? "desc" : "asc";
    restart();
  });
  categorySelect.addEventListener("change", () => {
    category = Number(categorySelect.value) as SpeedCategory;
    restart();
  });
  orderSelect.addEventListener("change", () => {
    descending = orderSelect.value === "desc";
    restart();
  });
  sizeSelect.addEventListener("change", () => {
    pageSize = Number(sizeSelect.value);
    restart();
  });
  prev.addEventListener("click", () => {
    if (page === 0) return;
    page--;
    void load();
  });
  next.addEventListener("click", () => {
    if (!nextToken) return;
    tokens[page + 1] = nextToken;
    page++;
    void load();
  });

  drawHead();
  void load();
  const label = (text: string, control: HTMLElement) => h("label", { class: "inline" }, text, " ", control);
  const el = h(
    "div",
    { class: "players" },
    h("h1", {}, "Players"),
    h(
      "section",
      { class: "card" },
      h(
        "div",
        { class: "filters" },
        search,
        label("Sort", sortSelect),
        label("in", categorySelect),
        orderSelect,
        sizeSelect,
      ),
      online,
      error,
      h("div", { class: "scroll" }, h("table", { class: "list directory" }, h("thead", {}, head), body)),
      empty,
      pager,
    ),
  );
  return {
    el,
    title: "Players",
    dispose() {
      disposed = true;
      clearTimeout(timer);
    },
  };
}
