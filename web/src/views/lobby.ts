// The lobby: open seeks and correspondence tables, requests to play them,
// direct challenges and games against the computer, kept live without a
// reload. The server announces a new seek to nobody (LobbyEvent only says
// when one goes), so the lists are asked for again every few seconds while
// the tab is visible, and at once on every lobby event.
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { describeError, lobby, play, session } from "../api.js";
import {
  AcceptMode,
  type Challenge,
  ChallengeStatus,
  ColorChoice,
  type Seek,
  type SeekRequest,
  SeekRequestStatus,
} from "../gen/chess/common/v1/common_pb.js";
import type { StreamEventsResponse } from "../gen/chess/gateway/v1/gateway_pb.js";
import { navigate, type View } from "../router.js";
import { keepStreaming } from "../stream.js";
import { clearToasts, fill, h, speedName, timeControlText, toast } from "../ui.js";
import { isDaily, KeyedRows, labelled, signedInOrAway, signInPath, type TimeControlFields, timeControlFields } from "./helpers.js";
import { QuickPairing } from "./quick-pairing.js";
import { Tv } from "./tv.js";

const REFRESH_MS = 2500;
const REJECTED = "Your request to play a seek was rejected. Pick another seek, or post your own.";

function choiceText(c: ColorChoice): string {
  return c === ColorChoice.WHITE ? "White" : c === ColorChoice.BLACK ? "Black" : "Random";
}

function rangeText(min: number, max: number): string {
  if (!min && !max) return "Any";
  if (!max) return `≥ ${min}`;
  if (!min) return `≤ ${max}`;
  return `${min}–${max}`;
}

/** "14:05" today, "24 Nov, 14:05" on another day. */
function whenText(ms: number): string {
  const d = new Date(ms);
  const time = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  if (d.toDateString() === new Date().toDateString()) return `at ${time}`;
  return `${d.toLocaleDateString(undefined, { day: "numeric", month: "short" })}, ${time}`;
}

function playerLink(name: string): HTMLElement {
  return h("a", { href: `/players/${encodeURIComponent(name)}` }, name);
}

/** A button that runs `action`, disabled while it runs; a refusal shows as a toast. */
function actionButton(label: string, action: () => Promise<unknown>, attrs: Record<string, string> = {}): HTMLButtonElement {
  const b = h("button", { type: "button", ...attrs }, label);
  b.addEventListener("click", async () => {
    if (!signedInOrAway()) return;
    b.disabled = true;
    try {
      await action();
    } catch (e) {
      toast(describeError(e));
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

/** A form whose refusals show under its submit button. */
function actionForm(
  testid: string,
  title: string,
  fields: (HTMLElement | null)[],
  submitLabel: string,
  submit: () => Promise<void>,
): HTMLFormElement {
  const error = h("p", { class: "error line", role: "alert" });
  const button = h("button", { type: "submit" }, submitLabel);
  const form = h(
    "form",
    { class: "card", "data-testid": testid, "aria-label": title, novalidate: true },
    h("h2", {}, title),
    ...fields,
    error,
    button,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.textContent = "";
    if (!signedInOrAway()) return;
    button.disabled = true;
    try {
      await submit();
    } catch (err) {
      error.textContent = describeError(err);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

function checkbox(label: string, name: string, checked = false): [HTMLElement, HTMLInputElement] {
  const input = h("input", { type: "checkbox", name, checked });
  return [h("label", { class: "inline" }, input, label), input];
}

// Untimed games are never rated, and rated games allow no hints: a form's
// "Rated" and "Allow hints" boxes follow its time control and each other,
// from now on; `also` is the rest of the form that follows them.
function followRatedAndHints(
  tc: TimeControlFields,
  ratedLabel: HTMLElement,
  rated: HTMLInputElement,
  hintsLabel: HTMLElement,
  hints: HTMLInputElement,
  also: (untimed: boolean) => void = () => {},
): void {
  const sync = () => {
    const untimed = tc.kind() === "untimed";
    ratedLabel.hidden = untimed;
    rated.disabled = untimed;
    if (untimed) rated.checked = false;
    hints.disabled = rated.checked;
    if (rated.checked) hints.checked = false;
    hintsLabel.classList.toggle("disabled", rated.checked);
    also(untimed);
  };
  tc.onChange(sync);
  rated.addEventListener("change", sync);
  sync();
}

function colorSelect(label = "Colour"): [HTMLElement, HTMLSelectElement] {
  const select = h(
    "select",
    { name: "color" },
    h("option", { value: ColorChoice.EITHER }, "Random"),
    h("option", { value: ColorChoice.WHITE }, "White"),
    h("option", { value: ColorChoice.BLACK }, "Black"),
  );
  return [labelled(label, select), select];
}

export function lobbyView(): View {
  const me = session();
  let disposed = false;
  let leaving = false;
  const goToGame = (id: string) => {
    if (leaving || disposed || !id) return;
    leaving = true;
    // "Request sent" and the like are about the lobby, not the game.
    clearToasts("info");
    quick.gameStarted();
    navigate(`/games/${encodeURIComponent(id)}`);
  };

  // ---- The lists ---------------------------------------------------------
  let seeks: Seek[] = [];
  let received: SeekRequest[] = [];
  let sent: SeekRequest[] = [];
  let mySeeks: Seek[] = [];
  let incoming: Challenge[] = [];
  let outgoing: Challenge[] = [];
  let listError = "";

  const seekHead = () =>
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", {}, "Player"),
        h("th", { class: "num" }, "Rating"),
        h("th", {}, "Time control"),
        h("th", {}, "Game"),
        h("th", { class: "wide" }, "Range"),
        h("th", { class: "wide", title: "The colour the poster plays" }, "Poster plays"),
        h("th", {}, ""),
      ),
    );
  const liveBody = h("tbody");
  const tableBody = h("tbody");
  const liveRows = new KeyedRows(liveBody);
  const tableRows = new KeyedRows(tableBody);
  const liveEmpty = h("p", { class: "muted empty" }, "No open seeks right now. Create one!");
  const tablesEmpty = h("p", { class: "muted empty" }, "No open correspondence tables.");
  const listErrorEl = h("p", { class: "error line", role: "alert" });

  // A card listing what awaits the player's answer, hidden while empty.
  const answerCard = (title: string, cardClass: string) => {
    const body = h("tbody");
    const section = h(
      "section",
      { class: cardClass, hidden: true, "aria-label": title },
      h("h2", {}, title),
      h("table", { class: "list" }, body),
    );
    return { rows: new KeyedRows(body), section };
  };
  const { rows: requestRows, section: requestsSection } = answerCard("Requests to play your seeks", "card highlight");
  const { rows: challengeRows, section: challengesSection } = answerCard("Challenges", "card");

  function seekRow(s: Seek): HTMLElement {
    const mine = !!s.posterId;
    const myRequest = sent.find((r) => r.seekId === s.seekId && r.status === SeekRequestStatus.PENDING);
    const waiting = mine ? received.filter((r) => r.seekId === s.seekId && r.status === SeekRequestStatus.PENDING).length : 0;
    let action: HTMLElement;
    if (mine) {
      action = actionButton("Cancel", () => lobby.cancelSeek({ seekId: s.seekId }).then(refresh), {
        class: "secondary small",
        "aria-label": "Cancel seek",
      });
    } else if (myRequest) {
      action = h(
        "span",
        { class: "pending" },
        h("span", { class: "muted" }, "Requested "),
        actionButton("Withdraw", () => lobby.withdrawSeekRequest({ requestId: myRequest.requestId }).then(refresh), {
          class: "secondary small",
        }),
      );
    } else {
      action = actionButton(
        s.acceptMode === AcceptMode.AUTOMATIC ? "Play" : "Request",
        async () => {
          const r = await lobby.requestSeek({ seekId: s.seekId });
          if (r.request?.gameId) goToGame(r.request.gameId);
          else {
            if (r.request?.requestId) waitingFor.add(r.request.requestId);
            requestNote = "Request sent: the game starts when the player accepts it.";
            await refresh();
          }
        },
        { class: "small", "aria-label": s.acceptMode === AcceptMode.AUTOMATIC ? "Play" : "Request" },
      );
    }
    const poster = mine
      ? h("strong", {}, "You")
      : s.showName && s.posterUsername
        ? playerLink(s.posterUsername)
        : h("span", { class: "muted" }, "Anonymous");
    return h(
      "tr",
      { "data-testid": "seek", "data-seek-id": s.seekId, "data-mine": mine, class: mine ? "mine" : null },
      h("td", { class: "poster" }, poster, mine && !s.showName && h("span", { class: "tag" }, "name hidden"), waiting > 0 && h("span", { class: "tag alert" }, `${waiting} request${waiting > 1 ? "s" : ""}`)),
      h("td", { class: "num" }, s.posterRating ? `${s.posterRating}${s.posterProvisional ? "?" : ""}` : "—"),
      h("td", { class: "tc" }, timeControlText(s.timeControl), h("div", { class: "muted small" }, speedName(s.speed))),
      h(
        "td",
        {},
        s.rated ? h("span", { class: "rated" }, "Rated") : "Casual",
        h(
          "div",
          { class: "muted small" },
          [s.acceptMode === AcceptMode.AUTOMATIC ? "open table" : "", s.allowHints ? "hints allowed" : "no hints"].filter(Boolean).join(" · "),
        ),
      ),
      h("td", { class: "wide" }, rangeText(s.minRating, s.maxRating)),
      h("td", { class: "wide" }, choiceText(s.color)),
      h("td", { class: "action" }, action),
    );
  }

  // Accepting a request or a challenge: the game it starts, if it started
  // one, is opened; otherwise the lobby is shown again as it now stands.
  function acceptButton(accept: () => Promise<string | undefined>): HTMLElement {
    return actionButton("Accept", async () => {
      const gameId = await accept();
      if (gameId) goToGame(gameId);
      else await refresh();
    });
  }

  function requestRow(r: SeekRequest): HTMLElement {
    const seek = mySeeks.find((s) => s.seekId === r.seekId) ?? seeks.find((s) => s.seekId === r.seekId);
    return h(
      "tr",
      { "data-testid": "seek-request", "data-request-id": r.requestId },
      h("td", {}, playerLink(r.requesterUsername), " ", h("span", { class: "muted" }, `(${r.requesterRating || "—"})`)),
      h("td", {}, "wants to play your ", seek ? `${timeControlText(seek.timeControl)} ${seek.rated ? "rated" : "casual"}` : "", " seek"),
      h(
        "td",
        { class: "action" },
        acceptButton(async () => (await lobby.acceptSeekRequest({ requestId: r.requestId })).request?.gameId),
        " ",
        actionButton("Reject", () => lobby.rejectSeekRequest({ requestId: r.requestId }).then(refresh), { class: "secondary" }),
      ),
    );
  }

  function challengeRow(c: Challenge, isIncoming: boolean): HTMLElement {
    const terms = [
      timeControlText(c.timeControl),
      speedName(c.speed),
      c.rated ? "rated" : "casual",
      c.allowHints ? "hints allowed" : null,
    ]
      .filter(Boolean)
      .join(" · ");
    const expires = c.expiresAt ? `expires ${whenText(timestampMs(c.expiresAt))}` : "";
    if (isIncoming) {
      const reason = h("input", { type: "text", name: "reason", placeholder: "Reason (optional)", "aria-label": "Reason for declining", maxlength: 200 });
      // The challenger's colour choice, told from this player's side.
      const youPlay = c.color === ColorChoice.WHITE ? "Black" : c.color === ColorChoice.BLACK ? "White" : "Random";
      return h(
        "tr",
        { "data-testid": "challenge", "data-challenge-id": c.challengeId, "data-direction": "incoming" },
        h("td", {}, h("strong", {}, playerLink(c.challengerUsername)), " challenges you"),
        h("td", {}, terms, h("div", { class: "muted small" }, `You play: ${youPlay}. ${expires}`)),
        h(
          "td",
          { class: "action" },
          acceptButton(async () => (await lobby.acceptChallenge({ challengeId: c.challengeId })).challenge?.gameId),
          " ",
          reason,
          " ",
          actionButton("Decline", () => lobby.declineChallenge({ challengeId: c.challengeId, reason: reason.value.trim() }).then(refresh), {
            class: "secondary",
          }),
        ),
      );
    }
    return h(
      "tr",
      { "data-testid": "challenge", "data-challenge-id": c.challengeId, "data-direction": "outgoing" },
      h("td", {}, "You challenged ", h("strong", {}, playerLink(c.challengedUsername))),
      h("td", {}, terms, h("div", { class: "muted small" }, `You play: ${choiceText(c.color)}. Waiting for an answer; ${expires}`)),
      h(
        "td",
        { class: "action" },
        actionButton("Cancel", () => lobby.cancelChallenge({ challengeId: c.challengeId }).then(refresh), {
          class: "secondary",
          "aria-label": "Cancel challenge",
        }),
      ),
    );
  }

  const seekSig = (s: Seek) =>
    JSON.stringify([
      s.posterRating,
      s.posterUsername,
      sent.some((r) => r.seekId === s.seekId && r.status === SeekRequestStatus.PENDING),
      received.filter((r) => r.seekId === s.seekId && r.status === SeekRequestStatus.PENDING).length,
    ]);

  function draw(): void {
    // The note about a request lasts while one of this page's requests waits.
    if (!sent.some((r) => r.status === SeekRequestStatus.PENDING && waitingFor.has(r.requestId)) && requestNote.startsWith("Request sent")) {
      requestNote = "";
    }
    requestNoteEl.textContent = requestNote;
    requestNoteEl.hidden = !requestNote;
    quick.update();
    const live = seeks.filter((s) => !isDaily(s.timeControl));
    const tables = seeks.filter((s) => isDaily(s.timeControl));
    liveRows.update(live.map((s) => ({ key: s.seekId, sig: seekSig(s), render: () => seekRow(s) })));
    tableRows.update(tables.map((s) => ({ key: s.seekId, sig: seekSig(s), render: () => seekRow(s) })));
    liveEmpty.hidden = live.length > 0;
    tablesEmpty.hidden = tables.length > 0;
    listErrorEl.textContent = listError;

    const pending = received.filter((r) => r.status === SeekRequestStatus.PENDING);
    requestRows.update(pending.map((r) => ({ key: r.requestId, sig: r.seekId, render: () => requestRow(r) })));
    requestsSection.hidden = pending.length === 0;

    const rows = [
      ...incoming.filter((c) => c.status === ChallengeStatus.PENDING).map((c) => ({ key: `in:${c.challengeId}`, sig: "", render: () => challengeRow(c, true) })),
      ...outgoing.filter((c) => c.status === ChallengeStatus.PENDING).map((c) => ({ key: `out:${c.challengeId}`, sig: "", render: () => challengeRow(c, false) })),
    ];
    challengeRows.update(rows);
    challengesSection.hidden = rows.length === 0;
  }

  async function allSeeks(): Promise<Seek[]> {
    const out: Seek[] = [];
    let pageToken = "";
    for (let i = 0; i < 20; i++) {
      const r = await lobby.listSeeks({ pageSize: 100, pageToken });
      out.push(...r.seeks);
      if (!r.nextPageToken) break;
      pageToken = r.nextPageToken;
    }
    return out;
  }

  /** My requests seen pending on this page. */
  const waitingFor = new Set<string>();
  /** What became of the player's last request, shown above the lists. */
  let requestNote = "";
  const requestNoteEl = h("p", { class: "card notice request-note", "data-testid": "request-note", role: "status", hidden: true });
  const tv = new Tv();
  const quick = new QuickPairing({ seeks: () => seeks, refresh: () => refresh(), goToGame });
  let inFlight: Promise<void> | null = null;
  let again = false;
  /** Asks for the lists again (once more after the current ask, if one runs). */
  function refresh(): Promise<void> {
    if (inFlight) {
      again = true;
      return inFlight;
    }
    inFlight = (async () => {
      do {
        again = false;
        const signedIn = !!session();
        const [s, req, ch] = await Promise.allSettled([
          allSeeks(),
          signedIn ? lobby.listSeekRequests({}) : null,
          signedIn ? lobby.listChallenges({}) : null,
        ]);
        if (disposed) return;
        if (s.status === "fulfilled") {
          seeks = s.value;
          listError = "";
        } else listError = describeError(s.reason);
        if (req.status === "fulfilled" && req.value) {
          received = req.value.received;
          sent = req.value.sent;
          mySeeks = req.value.seeks;
          // An acceptance missed while the event stream was down.
          for (const r of sent) {
            if (r.status === SeekRequestStatus.PENDING) waitingFor.add(r.requestId);
            else if (r.status === SeekRequestStatus.ACCEPTED && r.gameId && waitingFor.has(r.requestId)) return goToGame(r.gameId);
            else if (r.status === SeekRequestStatus.REJECTED && waitingFor.delete(r.requestId)) requestNote = REJECTED;
          }
        }
        if (ch.status === "fulfilled" && ch.value) {
          incoming = ch.value.incoming;
          outgoing = ch.value.outgoing;
        }
        draw();
        void tv.countPlayers();
      } while (again && !disposed);
    })().finally(() => (inFlight = null));
    return inFlight;
  }

  // ---- Create a seek or a table -------------------------------------------
  const seekTc = timeControlFields("incremental");
  const [seekColorLabel, seekColor] = colorSelect();
  const [ratedLabel, rated] = checkbox("Rated", "rated", true);
  // Empty means no bound: the placeholder says so.
  const minRating = h("input", { type: "number", name: "min-rating", placeholder: "any", min: 0, max: 4000, step: 50 });
  const maxRating = h("input", { type: "number", name: "max-rating", placeholder: "any", min: 0, max: 4000, step: 50 });
  const rangeRow = h(
    "div",
    { class: "row" },
    labelled("Min rating", minRating),
    labelled("Max rating", maxRating),
  );
  const [showNameLabel, showName] = checkbox("Show my name", "show-name", true);
  const acceptMode = h(
    "select",
    { name: "accept-mode" },
    h("option", { value: AcceptMode.MANUAL }, "I accept each request"),
    h("option", { value: AcceptMode.AUTOMATIC }, "Open table: the first request starts the game"),
  );
  const [hintsLabel, hints] = checkbox("Allow hints", "allow-hints");
  followRatedAndHints(seekTc, ratedLabel, rated, hintsLabel, hints, (untimed) => {
    rangeRow.hidden = untimed;
    minRating.disabled = maxRating.disabled = untimed;
    hintsLabel.title = rated.checked ? "Rated games allow no hints" : "";
  });
  const createSeek = actionForm(
    "create-seek",
    "Create a game",
    [
      seekTc.el,
      seekColorLabel,
      ratedLabel,
      rangeRow,
      labelled("Who may join", acceptMode),
      showNameLabel,
      hintsLabel,
      h("p", { class: "muted small" }, "A daily time control makes a correspondence table."),
    ],
    "Create",
    async () => {
      const tc = seekTc.value();
      if (typeof tc === "string") throw new Error(tc);
      const untimed = seekTc.kind() === "untimed";
      const min = Math.round(Number(minRating.value) || 0);
      const max = Math.round(Number(maxRating.value) || 0);
      if (!untimed && min && max && min > max) throw new Error("The minimum rating is above the maximum: leave one empty for no bound.");
      const r = await lobby.createSeek({
        timeControl: tc,
        color: Number(seekColor.value) as ColorChoice,
        rated: !untimed && rated.checked,
        minRating: untimed ? 0 : min,
        maxRating: untimed ? 0 : max,
        showName: showName.checked,
        acceptMode: Number(acceptMode.value) as AcceptMode,
        allowHints: !rated.checked && hints.checked,
      });
      toast(isDaily(r.seek?.timeControl) ? "Your table is open." : "Your seek is posted.", "info");
      await refresh();
    },
  );

  // ---- Challenge a player -------------------------------------------------
  const opponent = h("input", { type: "text", name: "opponent", required: true, autocomplete: "off", maxlength: 20 });
  const chTc = timeControlFields("incremental");
  const [chColorLabel, chColor] = colorSelect();
  const [chRatedLabel, chRated] = checkbox("Rated", "rated");
  const [chHintsLabel, chHints] = checkbox("Allow hints", "allow-hints");
  const expiry = h(
    "select",
    { name: "expiry" },
    h("option", { value: 0 }, "Default (10 minutes; a day if daily)"),
    h("option", { value: 300 }, "5 minutes"),
    h("option", { value: 3600 }, "1 hour"),
    h("option", { value: 86400 }, "1 day"),
    h("option", { value: 259200 }, "3 days"),
    h("option", { value: 1209600 }, "2 weeks"),
  );
  followRatedAndHints(chTc, chRatedLabel, chRated, chHintsLabel, chHints);
  const challengeForm = actionForm(
    "send-challenge",
    "Challenge a player",
    [labelled("Opponent", opponent), chTc.el, chColorLabel, chRatedLabel, chHintsLabel, labelled("Expires after", expiry)],
    "Send challenge",
    async () => {
      const name = opponent.value.trim();
      if (!name) throw new Error("Name the player to challenge.");
      const tc = chTc.value();
      if (typeof tc === "string") throw new Error(tc);
      await lobby.createChallenge({
        opponentUsername: name,
        timeControl: tc,
        color: Number(chColor.value) as ColorChoice,
        rated: chTc.kind() !== "untimed" && chRated.checked,
        allowHints: !chRated.checked && chHints.checked,
        expiresInSeconds: Number(expiry.value),
      });
      toast(`Challenge sent to ${name}.`, "info");
      opponent.value = "";
      await refresh();
    },
  );

  // ---- Play the computer --------------------------------------------------
  const level = h(
    "select",
    { name: "level" },
    [1, 2, 3, 4, 5, 6, 7, 8].map((n) => h("option", { value: n, selected: n === 3 }, String(n))),
    h("option", { value: "full" }, "Full strength"),
  );
  const [engColorLabel, engColor] = colorSelect();
  const engTc = timeControlFields("untimed", ["untimed", "incremental", "movesInPeriod", "daily"]);
  const playComputer = actionForm(
    "play-computer",
    "Play the computer",
    [labelled("Level", level), engColorLabel, engTc.el],
    "Play",
    async () => {
      const full = level.value === "full";
      const tc = engTc.value();
      if (typeof tc === "string") throw new Error(tc);
      const r = await lobby.playEngine({
        level: full ? 0 : Number(level.value),
        fullStrength: full,
        color: Number(engColor.value) as ColorChoice,
        timeControl: engTc.kind() === "untimed" ? undefined : tc,
      });
      if (r.game?.gameId) goToGame(r.game.gameId);
    },
  );

  // ---- Events ---------------------------------------------------------------
  function onEvent(e: StreamEventsResponse): void {
    if (e.event.case === "game") {
      if (e.event.value.kind.case === "gameStarted") goToGame(e.event.value.gameId);
      return;
    }
    if (e.event.case !== "lobby") return;
    const k = e.event.value.kind;
    switch (k.case) {
      case "seekRequestAccepted":
        if (k.value.gameId) return goToGame(k.value.gameId);
        break;
      case "challengeAccepted":
        if (k.value.gameId) return goToGame(k.value.gameId);
        break;
      case "seekRequestReceived":
        toast(`${k.value.requesterUsername} asks to play your seek.`, "info");
        break;
      case "seekRequestRejected":
        waitingFor.delete(k.value.requestId);
        requestNote = REJECTED;
        break;
      case "challengeReceived":
        toast(`${k.value.challengerUsername} challenges you.`, "info");
        break;
      case "challengeDeclined":
        toast(
          `${k.value.challengedUsername} declined your challenge${k.value.declineReason ? `: “${k.value.declineReason}”` : "."}`,
          "info",
        );
        break;
      case "challengeExpired":
        toast("A challenge expired.", "info");
        break;
    }
    void refresh();
  }

  const stopStream = me
    ? keepStreaming<StreamEventsResponse>({
        open: (signal, opened) => play.streamEvents({}, { signal, onHeader: opened }),
        onItem: onEvent,
        onState: (state) => {
          // Whatever happened while the stream was down is in the lists.
          if (state === "live") void refresh();
        },
        onFatal: (message) => toast(message),
      })
    : () => {};

  const timer = setInterval(() => {
    if (!document.hidden) void refresh();
  }, REFRESH_MS);
  const onVisible = () => {
    if (!document.hidden) void refresh();
  };
  document.addEventListener("visibilitychange", onVisible);
  void refresh();

  const intro = me
    ? null
    : h(
        "p",
        { class: "card notice" },
        h("a", { href: signInPath() }, "Sign in"),
        " or ",
        h("a", { href: `/register?next=${encodeURIComponent("/")}` }, "register"),
        " to post a seek, request one, challenge a player or play the computer.",
      );
  const lists = h(
    "div",
    { class: "lobby-lists" },
    requestsSection,
    challengesSection,
    h(
      "section",
      { class: "card", "aria-label": "Live seeks" },
      h("h2", {}, "Live seeks"),
      listErrorEl,
      h("div", { class: "scroll" }, h("table", { class: "list seeks" }, seekHead(), liveBody)),
      liveEmpty,
    ),
    h(
      "section",
      { class: "card", "aria-label": "Correspondence tables" },
      h("h2", {}, "Correspondence tables"),
      h("div", { class: "scroll" }, h("table", { class: "list seeks" }, seekHead(), tableBody)),
      tablesEmpty,
    ),
  );
  // The full forms wait behind "Custom game", as on lichess.
  const forms = h("div", { class: "custom-forms", id: "custom-forms", hidden: true }, createSeek, playComputer, challengeForm);
  const customButton = h(
    "button",
    { type: "button", class: "secondary custom-toggle", "data-testid": "custom-game", "aria-expanded": "false", "aria-controls": "custom-forms" },
    "Custom game…",
  );
  customButton.addEventListener("click", () => {
    forms.hidden = !forms.hidden;
    customButton.setAttribute("aria-expanded", String(!forms.hidden));
  });
  const side = h("aside", { class: "lobby-side" }, quick.el, customButton, forms, tv.el);
  const el = h("div", { class: "lobby" }, h("h1", {}, "Lobby"), tv.counts, intro, requestNoteEl, h("div", { class: "lobby-grid" }, lists, side));
  fill(listErrorEl);
  return {
    el,
    title: "Lobby",
    dispose() {
      disposed = true;
      clearInterval(timer);
      document.removeEventListener("visibilitychange", onVisible);
      stopStream();
      tv.dispose();
    },
  };
}
