// The game page, /games/<id>: the same live view for the players and for
// anyone watching; only a signed-in player of the game gets the controls.
//
// WatchGame is the page's one stream. Opened without from_ply it starts with
// a snapshot; after a drop it is opened again from the last ply applied and
// the server sends only what was missed, so every event is applied by ply,
// never twice. The player's own move shows at once and waits for the
// server's answer; one lost with the connection is checked against the game
// when the connection is back and sent again only if the game does not have
// it.
import { isNormal, type NormalMove } from "chessops/types";
import { parseUci } from "chessops/util";
import { makeSan } from "chessops/san";
import { accounts, describeError, isTransient, play, reasonOf, session } from "../api.js";
import { Board } from "../game/board.js";
import { Clocks } from "../game/clocks.js";
import { MoveList } from "../game/moves.js";
import { premoveColor } from "../game/premove.js";
import { NextSteps } from "./after-game.js";
import { Takebacks } from "./offers.js";
import { awaitRatingChanges, type ShownChange } from "../game/rating-changes.js";
import {
  applyEnding,
  applyEvent,
  applyMove,
  colorOf,
  fiftyMovesLeft,
  fromSnapshot,
  type Game,
  isActive,
  legalMove,
  type LocalMove,
  other,
  playLocal,
  PlyGap,
  positionOf,
  repetitions,
  resolveMove,
  uciSquares,
} from "../game/model.js";
import { Color, type GameEnded, GameResult, GameStatus, type Player, RuleSet, SpeedCategory } from "../gen/chess/common/v1/common_pb.js";
import type { MakeMoveResponse, WatchGameResponse } from "../gen/chess/gateway/v1/gateway_pb.js";
import type { View } from "../router.js";
import { keepStreaming, type StreamState } from "../stream.js";
import { colorName, fill, h, playerName, rating, resultText, scoreText, timeControlText } from "../ui.js";

/** The player's move on its way to the server. */
interface Pending extends LocalMove {
  /** The ply it will be. */
  ply: number;
  /**
   * sending: MakeMove under way; unsure: the call failed with the connection,
   * so the game may or may not have it; sent: accepted, its event not yet
   * applied.
   */
  state: "sending" | "unsure" | "sent";
  /** Sent again after a lost answer. */
  resent: boolean;
}

export function gameView(id: string): View {
  const me = session();
  let game: Game | null = null;
  let myColor = Color.UNSPECIFIED;
  let pending: Pending | null = null;
  let hint: string | null = null;
  let fiftyWarning: number | null = null;
  let notice = "";
  let confirmingResign = false;
  /** How often the position at `ply` has stood (see `repeatedNow`). */
  let repeated = { ply: -1, count: 0 };
  let busy = false;
  let resync = false;
  let reconciling = false;
  let retryTimer: number | undefined;
  let streamState: StreamState = "connecting";
  let disposed = false;
  const ratings = new Map<string, string>();
  /** Each side's rating change, once a rated game has ended and been applied. */
  const ratingChanges = new Map<Color, ShownChange>();
  let ratingChangesAsked = false;

  const board = new Board((move) => dropped(move));
  const clocks = new Clocks();
  const moveList = new MoveList();
  const nextSteps = new NextSteps();
  const takebacks = new Takebacks({ gameId: id, act: (action) => act(action), busy: () => busy });

  const heading = h("h1", { class: "game-title" }, "Game");
  const info = h("p", { class: "muted game-info" });
  // How many watch, its players not counted: hidden while nobody does.
  const watching = h("p", { class: "muted watching", "data-testid": "watching", hidden: true });
  const showWatching = (n: number) => {
    watching.hidden = n === 0;
    watching.textContent = `${n} watching`;
  };
  const topBar = h("div", { class: "player-bar top" });
  const bottomBar = h("div", { class: "player-bar bottom" });
  const status = h("p", { class: "status", "data-testid": "status", role: "status", "aria-live": "polite" }, "Loading…");
  const result = h("p", { class: "result", "data-testid": "result" });
  const fifty = h("p", { class: "fifty", "data-testid": "fifty-move", role: "status", hidden: true });
  const drawBox = h("div", { class: "draw-offer", hidden: true });
  const noticeLine = h("p", { class: "notice", role: "status", hidden: true });
  const engineLine = h("p", { class: "engine-failed", hidden: true });
  const error = h("p", { class: "error", role: "alert" });
  const hintLine = h("p", { class: "hint", hidden: true });
  const controls = h("div", { class: "controls" });
  const moveInput = h("input", {
    type: "text",
    name: "move",
    "aria-label": "Move",
    placeholder: "e2e4 or Nf3",
    autocomplete: "off",
    spellcheck: "false",
  });
  const moveForm = h(
    "form",
    { class: "move-form", hidden: true, onsubmit: ((e: Event) => typed(e)) as EventListener },
    moveInput,
    h("button", { type: "submit" }, "Play"),
  );
  const pgn = h("a", { href: `/games/${encodeURIComponent(id)}.pgn`, download: true, class: "pgn" }, "Download PGN");

  const el = h(
    "div",
    { class: "game-page" },
    h("section", { class: "game-board", "aria-label": "Board" }, topBar, board.el, bottomBar),
    h(
      "aside",
      { class: "game-side" },
      heading,
      info,
      watching,
      status,
      result,
      fifty,
      engineLine,
      drawBox,
      takebacks.el,
      noticeLine,
      error,
      moveList.el,
      moveForm,
      controls,
      nextSteps.el,
      hintLine,
      h("p", {}, pgn),
    ),
  );
  result.remove();

  const view: View = {
    el,
    title: "Game",
    dispose: () => {
      disposed = true;
      stop();
      clocks.dispose();
      board.dispose();
      clearTimeout(retryTimer);
    },
  };

  const stop = keepStreaming<WatchGameResponse>({
    open: (signal, opened) => {
      const fromPly = game && !resync ? game.ply : undefined;
      // What was missed includes the offer standing now, if any: an offer
      // declined while the page was away must not linger.
      if (game && fromPly !== undefined) {
        game.drawOffer = Color.UNSPECIFIED;
        takebacks.forget();
      }
      resync = false;
      return play.watchGame({ gameId: id, fromPly }, { signal, onHeader: opened });
    },
    onItem: (r) => received(r),
    // The stream ends when the game does; one that ends early is reopened.
    onEnd: () => !game || isActive(game),
    onFatal: (message) => {
      if (!game) {
        fill(
          el,
          h(
            "div",
            { class: "card", "data-testid": "game-missing" },
            h("h1", {}, "Game"),
            h("p", { class: "error", role: "alert" }, message),
            h("p", {}, h("a", { href: "/", "data-testid": "back-to-lobby" }, "Back to the lobby")),
          ),
        );
      } else {
        showError(message);
      }
    },
    onState: (state) => {
      streamState = state;
      if (state === "live") void reconcile();
      render();
    },
  });

  // --- Events -------------------------------------------------------------

  function received(r: WatchGameResponse): void {
    const e = r.event;
    if (!e || disposed) return;
    if (e.kind.case === "snapshot") showWatching(e.kind.value.spectators);
    if (e.kind.case === "spectatorsChanged") showWatching(e.kind.value.spectators);
    if (e.kind.case === "snapshot") {
      const first = !game;
      game = fromSnapshot(e.kind.value);
      myColor = colorIn(game, me?.playerId);
      takebacks.snapshot(e.kind.value.takebackOffer);
      clocks.setDaily(game.timeControl?.kind.case === "daily");
      clocks.update(e.kind.value.clock ?? e.clock, game.ply, true);
      settlePending();
      if (first) loadRatings(game);
      render();
      return;
    }
    if (!game) return;
    let changed: boolean;
    try {
      const applied = applyEvent(game, e);
      changed = applied.changed;
      if (applied.notice) notice = applied.notice;
    } catch (err) {
      if (err instanceof PlyGap) {
        // Plies went missing: load the whole game again.
        resync = true;
      }
      throw err;
    }
    takebacks.apply(e);
    switch (e.kind.case) {
      case "moveMade":
        if (changed) {
          hint = null;
          notice = "";
        }
        break;
      case "fiftyMoveWarning":
        fiftyWarning = e.kind.value.movesRemaining;
        break;
      case "takebackOffered":
        // The takeback prompt tells of it.
        notice = "";
        break;
      case "gameEnded":
        confirmingResign = false;
        notice = "";
        break;
    }
    // A takeback brings the game, and its clocks, to a lower ply.
    clocks.update(e.clock, e.ply, e.kind.case === "takenBack");
    settlePending();
    render();
  }

  /** The answer to MakeMove: the same facts as the move's event. */
  function applyReply(r: MakeMoveResponse): void {
    if (!game) return;
    if (r.moveMade) {
      try {
        applyMove(game, r.moveMade);
      } catch (err) {
        // The stream is behind; it brings the missing plies and this one.
        if (!(err instanceof PlyGap)) throw err;
      }
    }
    if (r.gameEnded && game.ply >= r.ply) ended(r.gameEnded);
    clocks.update(r.clock, r.ply);
    settlePending();
  }

  function ended(e: GameEnded): void {
    if (!game) return;
    applyEnding(game, e);
    confirmingResign = false;
  }

  /** Clears the pending move once the game has its ply. */
  function settlePending(): void {
    const p = pending;
    if (!p || !game) return;
    if (game.ply >= p.ply) {
      pending = null;
      const played = game.moves[p.ply - 1];
      if (played && played.uci !== p.uci) showError(`Your move ${p.san} was not played.`);
    } else if (!isActive(game)) {
      pending = null;
      showError(`Your move ${p.san} was not played: the game is over.`);
    }
  }

  // --- Moves --------------------------------------------------------------

  function canMove(): boolean {
    return !!game && myColor !== Color.UNSPECIFIED && isActive(game) && !pending && game.turn === myColor;
  }

  function dropped(move: NormalMove): void {
    const pos = game && positionOf(game.fen);
    const legal = pos && canMove() ? legalMove(pos, move) : null;
    if (!pos || !legal) {
      render();
      return;
    }
    submit(playLocal(pos, legal));
  }

  function submit(local: LocalMove): void {
    if (!game) return;
    pending = { ...local, ply: game.ply + 1, state: "sending", resent: false };
    hint = null;
    clearError();
    render();
    void send();
  }

  async function send(): Promise<void> {
    const p = pending;
    if (!p) return;
    p.state = "sending";
    render();
    try {
      // With its ply, a move sent again after a lost answer is answered
      // as already made, never played twice.
      const r = await play.makeMove({ gameId: id, move: p.uci, ply: p.ply });
      if (disposed) return;
      if (pending === p) p.state = "sent";
      applyReply(r);
    } catch (e) {
      if (disposed || pending !== p) return;
      if (isTransient(e) && !reasonOf(e)) {
        // The connection failed: the game may or may not have the move.
        p.state = "unsure";
        if (streamState === "live") void reconcile();
      } else if (p.resent && (await gameHas(p))) {
        // The first attempt got through after all: the refusal is of the copy.
        if (pending === p) p.state = "sent";
        settlePending();
      } else if (pending === p) {
        pending = null;
        showError(describeError(e));
      }
    }
    render();
  }

  /** Whether the game has `p` at its ply (false if that cannot be known). */
  async function gameHas(p: Pending): Promise<boolean> {
    try {
      const { game: g } = await play.getGame({ gameId: id });
      return g?.moves[p.ply - 1]?.uci === p.uci;
    } catch {
      return false;
    }
  }

  /**
   * A move whose answer was lost: if the game has it, it is done; if the
   * game is still waiting for it, it is sent again; otherwise it is dropped.
   */
  async function reconcile(): Promise<void> {
    const p = pending;
    if (!p || p.state !== "unsure" || reconciling || disposed) return;
    reconciling = true;
    clearTimeout(retryTimer);
    try {
      const { game: g } = await play.getGame({ gameId: id });
      if (disposed || pending !== p || !g) return;
      const played = g.moves[p.ply - 1];
      if (played) {
        if (played.uci === p.uci) p.state = "sent";
        else {
          pending = null;
          showError(`Your move ${p.san} was not played.`);
        }
      } else if (g.status === GameStatus.ACTIVE && g.ply === p.ply - 1 && g.turn === myColor) {
        reconciling = false;
        p.resent = true;
        void send();
        return;
      } else {
        pending = null;
        showError(`Your move ${p.san} was not played.`);
      }
      // The stream may not have brought the plies yet: it will.
      settlePending();
    } catch (e) {
      if (disposed || pending !== p) return;
      if (isTransient(e) && !reasonOf(e)) {
        retryTimer = window.setTimeout(() => void reconcile(), 2000);
      } else {
        pending = null;
        showError(describeError(e));
      }
    } finally {
      reconciling = false;
      render();
    }
  }

  async function typed(e: Event): Promise<void> {
    e.preventDefault();
    const text = moveInput.value.trim();
    if (!text || !game) return;
    clearError();
    if (pending) {
      showError("Your previous move is still on its way.");
      return;
    }
    const pos = positionOf(game.fen);
    const move = pos && canMove() ? resolveMove(pos, text) : null;
    if (pos && move) {
      moveInput.value = "";
      submit(playLocal(pos, move));
      return;
    }
    // Not a legal move here as far as the page can tell: the server says why.
    try {
      const r = await play.makeMove({ gameId: id, move: text });
      if (disposed) return;
      moveInput.value = "";
      applyReply(r);
    } catch (err) {
      showError(describeError(err));
    }
    render();
  }

  // --- Other actions ------------------------------------------------------

  async function act(action: () => Promise<void>): Promise<void> {
    if (busy) return;
    busy = true;
    clearError();
    render();
    try {
      await action();
    } catch (e) {
      showError(describeError(e));
    } finally {
      busy = false;
      if (!disposed) render();
    }
  }

  const offerDraw = () =>
    act(async () => {
      const r = await play.offerDraw({ gameId: id });
      if (r.gameEnded) ended(r.gameEnded);
      else if (game && isActive(game)) game.drawOffer = myColor;
    });
  // An action that ends the game when the server says it did.
  const ending = (call: (request: { gameId: string }) => Promise<{ gameEnded?: GameEnded }>) => () =>
    act(async () => {
      const r = await call({ gameId: id });
      if (r.gameEnded) ended(r.gameEnded);
    });
  const acceptDraw = ending((request) => play.acceptDraw(request));
  const declineDraw = () =>
    act(async () => {
      await play.declineDraw({ gameId: id });
      if (game) game.drawOffer = Color.UNSPECIFIED;
    });
  const claimDraw = ending((request) => play.claimDraw(request));
  const abort = ending((request) => play.abort(request));
  const resign = () =>
    act(async () => {
      confirmingResign = false;
      const r = await play.resign({ gameId: id });
      if (r.gameEnded) ended(r.gameEnded);
    });
  const askHint = () =>
    act(async () => {
      const r = await play.hint({ gameId: id });
      hint = r.bestMove || null;
    });

  // --- Drawing ------------------------------------------------------------

  function render(): void {
    if (disposed) return;
    const g = game;
    if (!g) {
      status.textContent = streamState === "reconnecting" ? "Reconnecting…" : "Loading…";
      return;
    }
    if (!isActive(g)) showRatingChanges(g);
    const orientation = myColor === Color.BLACK ? "black" : "white";
    const p = pending;
    const lastUci = g.moves[g.moves.length - 1]?.uci;
    board.show({
      fen: p ? p.fen : g.fen,
      orientation,
      movable: canMove() ? colorOf(myColor) : undefined,
      premovable: premoveColor(g, myColor),
      lastMove: p ? [p.from, p.to] : lastUci ? uciSquares(lastUci) : undefined,
      arrow: hint && canMove() ? hint : null,
      ply: g.ply,
    });
    moveList.show(g.moves, g.initialFen, p ? p.san : null);

    const white = playerName(g.white);
    const black = playerName(g.black);
    view.title = `${white} vs ${black}`;
    document.title = `${view.title} · Rookery`;
    fill(heading, `${white} vs ${black}`);
    fill(
      info,
      timeControlText(g.timeControl),
      " · ",
      g.rated ? "rated" : "casual",
      g.rules === RuleSet.UQCHESS ? " · uqchess rules" : "",
      g.hintsAllowed ? " · hints allowed" : "",
    );
    const bottom = orientation === "white" ? Color.WHITE : Color.BLACK;
    playerBar(bottomBar, g, bottom);
    playerBar(topBar, g, other(bottom));

    status.textContent = statusText(g);
    status.classList.toggle("your-move", canMove());
    if (isActive(g)) result.remove();
    else {
      result.textContent = resultText(g.result, g.termination);
      if (!result.isConnected) status.after(result);
    }

    const left = fiftyMovesLeft(g) ?? (isActive(g) ? fiftyWarning : null);
    fifty.hidden = left === null;
    fifty.textContent =
      left === null
        ? ""
        : left === 0
          ? "The fifty-move rule: the game is drawn unless this move mates."
          : `Fifty-move rule: ${left} move${left === 1 ? "" : "s"} left for a capture or a pawn move.`;

    engineLine.hidden = g.engineFailed === null || !isActive(g);
    engineLine.textContent =
      g.engineFailed === null ? "" : `The engine failed to move${g.engineFailed ? ` (${g.engineFailed})` : ""}; it is being retried.`;

    noticeLine.hidden = !notice;
    noticeLine.textContent = notice;

    drawOffer(g);
    takebacks.show(g, myColor);
    controlButtons(g);
    nextSteps.show(g, myColor);

    const player = myColor !== Color.UNSPECIFIED;
    // The box stays usable out of turn (focus is not lost while the
    // opponent thinks); a move sent then gets the server's answer.
    moveForm.hidden = !player || !isActive(g);

    hintLine.hidden = !hint || !canMove();
    if (hint && canMove()) fill(hintLine, "Hint: ", h("strong", {}, hintText(g.fen, hint)));
  }

  function statusText(g: Game): string {
    if (!isActive(g)) return g.result === GameResult.UNSPECIFIED ? "Game over" : `Game over: ${scoreText(g.result)}`;
    const p = pending;
    if (p) {
      if (p.state === "unsure") return `Your move ${p.san} will be checked and sent when the connection is back…`;
      return `Sending ${p.san}…`;
    }
    const toMove = g.turn === Color.WHITE ? g.white : g.black;
    if (myColor !== Color.UNSPECIFIED) {
      if (g.turn === myColor) return "Your move";
      if (toMove?.kind.case === "engine") {
        return g.engineFailed !== null ? "The computer's move is late; it is being retried…" : "Waiting for the computer…";
      }
      return `Waiting for ${playerName(toMove)}…`;
    }
    return `${colorName(g.turn)} to move (${playerName(toMove)})`;
  }

  function playerBar(bar: HTMLElement, g: Game, color: Color): void {
    const p = color === Color.WHITE ? g.white : g.black;
    const clock = color === Color.WHITE ? clocks.white : clocks.black;
    const control = color === Color.WHITE ? clocks.whiteControl : clocks.blackControl;
    const r = p?.kind.case === "registered" ? ratings.get(p.kind.value.username) : undefined;
    fill(
      bar,
      h(
        "span",
        { class: "who" },
        h("span", { class: `swatch ${color === Color.WHITE ? "white" : "black"}`, "aria-label": colorName(color) }),
        nameOf(p),
        ratingOrChange(r, ratingChanges.get(color)),
        color === myColor ? h("span", { class: "muted" }, " · you") : null,
        isActive(g) && g.turn === color ? h("span", { class: "to-move", title: "To move" }, " ●") : null,
      ),
      control,
      clock,
    );
  }

  function drawOffer(g: Game): void {
    const player = myColor !== Color.UNSPECIFIED;
    if (!isActive(g) || g.drawOffer === Color.UNSPECIFIED) {
      drawBox.hidden = true;
      drawBox.replaceChildren();
      return;
    }
    drawBox.hidden = false;
    if (player && g.drawOffer !== myColor) {
      fill(
        drawBox,
        h("span", {}, `${playerName(g.drawOffer === Color.WHITE ? g.white : g.black)} offers a draw.`),
        h("button", { type: "button", onclick: acceptDraw, disabled: busy }, "Accept draw"),
        h("button", { type: "button", class: "secondary", onclick: declineDraw, disabled: busy }, "Decline draw"),
      );
    } else if (player) {
      fill(drawBox, h("span", { class: "muted" }, "You offered a draw."));
    } else {
      fill(drawBox, h("span", { class: "muted" }, `${colorName(g.drawOffer)} offers a draw.`));
    }
  }

  /** `repetitions` of the position at the game's ply, counted once a ply. */
  function repeatedNow(g: Game): number {
    if (repeated.ply !== g.ply) repeated = { ply: g.ply, count: repetitions(g) };
    return repeated.count;
  }

  function controlButtons(g: Game): void {
    if (myColor === Color.UNSPECIFIED || !isActive(g)) {
      controls.replaceChildren();
      return;
    }
    const standard = g.rules !== RuleSet.UQCHESS;
    const opponent = myColor === Color.WHITE ? g.black : g.white;
    const vsEngine = opponent?.kind.case === "engine";
    const button = (label: string, onclick: () => void, cls = "secondary") =>
      h("button", { type: "button", class: cls, onclick, disabled: busy }, label);
    if (confirmingResign) {
      fill(
        controls,
        h(
          "div",
          { class: "confirm", role: "group", "aria-label": "Confirm resignation" },
          h("span", {}, "Resign this game?"),
          button("Yes, resign", resign, "danger"),
          button("Cancel", () => {
            confirmingResign = false;
            render();
          }),
        ),
      );
      return;
    }
    fill(
      controls,
      standard && !vsEngine && g.drawOffer !== myColor ? button("Offer draw", offerDraw) : null,
      standard && repeatedNow(g) >= 3 ? button("Claim threefold", claimDraw) : null,
      standard && g.ply < 2 ? button("Abort", abort) : null,
      takebacks.button(g, myColor),
      g.hintsAllowed && canMove() ? button("Hint", askHint) : null,
      button(
        "Resign",
        () => {
          confirmingResign = true;
          render();
        },
        "danger",
      ),
    );
  }

  function nameOf(p: Player | undefined): Node {
    const name = playerName(p);
    if (p?.kind.case === "registered") return h("a", { href: `/players/${encodeURIComponent(name)}` }, name);
    return document.createTextNode(name);
  }

  /** Once a rated game is over: asks what it did to the ratings, to show
   * the new ratings and their changes instead of the ratings before. */
  function showRatingChanges(g: Game): void {
    if (ratingChangesAsked || !g.rated) return;
    ratingChangesAsked = true;
    void awaitRatingChanges(g.id, () => disposed, (white, black) => {
      if (white) ratingChanges.set(Color.WHITE, white);
      if (black) ratingChanges.set(Color.BLACK, black);
      render();
    });
  }

  function ratingOrChange(before: string | undefined, change: ShownChange | undefined): Node | null {
    if (change) {
      return h(
        "span",
        { class: "muted", "data-testid": "rating-after" },
        ` (${change.after} `,
        h("span", { class: change.gain ? "gain" : "drop", "data-testid": "rating-change" }, change.change),
        ")",
      );
    }
    return before ? h("span", { class: "muted" }, ` (${before})`) : null;
  }

  function loadRatings(g: Game): void {
    if (g.speed === SpeedCategory.UNTIMED || g.speed === SpeedCategory.UNSPECIFIED) return;
    for (const p of [g.white, g.black]) {
      if (p?.kind.case !== "registered") continue;
      const username = p.kind.value.username;
      accounts
        .getProfile({ username })
        .then((r) => {
          const found = r.profile?.ratings.find((x) => x.category === g.speed);
          if (!found || disposed) return;
          ratings.set(username, rating(found.rating) + (found.provisional ? "?" : ""));
          render();
        })
        // A rating is a nicety: the game shows without it.
        .catch(() => undefined);
    }
  }

  function showError(message: string): void {
    error.textContent = message;
  }

  function clearError(): void {
    error.textContent = "";
  }

  return view;
}

/** The colour the player with `playerId` has in `g`, if any. */
function colorIn(g: Game, playerId: string | undefined): Color {
  if (!playerId) return Color.UNSPECIFIED;
  if (g.white?.kind.case === "registered" && g.white.kind.value.playerId === playerId) return Color.WHITE;
  if (g.black?.kind.case === "registered" && g.black.kind.value.playerId === playerId) return Color.BLACK;
  return Color.UNSPECIFIED;
}

/** "Nf3 (g1f3)" where the page can name the move, else the UCI. */
function hintText(fen: string, uci: string): string {
  const pos = positionOf(fen);
  const move = parseUci(uci);
  const legal = pos && move && isNormal(move) ? legalMove(pos, move) : null;
  if (!pos || !legal) return uci;
  return `${makeSan(pos, legal)} (${uci})`;
}
