// Takeback requests on the game page: the player's "Takeback" button, the
// opponent's "X asks to take back a move: Accept / Decline" and the asker's
// "Takeback requested… Cancel". The standing request is known from the
// snapshot and the stream's events; the game going back arrives as a
// `takenBack` event, which the game page applies (board, moves, clocks).
import { play, reasonOf } from "../api.js";
import { type Game, isActive } from "../game/model.js";
import { Color, type GameEvent, RuleSet } from "../gen/chess/common/v1/common_pb.js";
import { fill, h, playerName } from "../ui.js";

/** What the game page lends the offers: its busy-guarded call runner. */
export interface OfferHost {
  gameId: string;
  /** Runs a call, showing its refusal, with the page's controls disabled. */
  act(action: () => Promise<void>): Promise<void>;
  busy(): boolean;
}

export class Takebacks {
  /** The prompt row (the opponent's answer, or the asker's Cancel). */
  readonly el = h("div", { class: "draw-offer takeback-offer", "data-testid": "takeback-offer", hidden: true });
  /** The side whose request stands, if any. */
  private offer = Color.UNSPECIFIED;
  /** The server refused takebacks in this game for good (rated, say). */
  private refused = false;

  constructor(private readonly host: OfferHost) {}

  /** Takes the standing request from a snapshot. */
  snapshot(takebackOffer: Color): void {
    this.offer = takebackOffer;
  }

  /** A stream opened from a ply tells of the request standing now again. */
  forget(): void {
    this.offer = Color.UNSPECIFIED;
  }

  /** Follows the request through the stream's events. */
  apply(e: GameEvent): void {
    switch (e.kind.case) {
      case "takebackOffered":
        this.offer = e.kind.value.by;
        break;
      case "takebackDeclined":
      case "takebackCancelled":
      case "takenBack":
      case "gameEnded":
        this.offer = Color.UNSPECIFIED;
        break;
    }
  }

  /** The "Takeback" button for the controls row, where one may be asked. */
  button(g: Game, me: Color): HTMLElement | null {
    if (me === Color.UNSPECIFIED || !isActive(g) || g.rules === RuleSet.UQCHESS) return null;
    if (this.refused || this.offer !== Color.UNSPECIFIED) return null;
    // Back to before my last move: one ply if the opponent has not replied.
    const toPly = g.ply - (g.turn === me ? 2 : 1);
    const timed = g.timeControl !== undefined && g.timeControl.kind.case !== "untimed";
    // In a timed game the plies before both clocks started stay.
    if (toPly < 0 || (timed && toPly < 2)) return null;
    return h(
      "button",
      { type: "button", class: "secondary", "data-testid": "takeback", onclick: () => void this.propose(me, g.rated), disabled: this.host.busy() },
      "Takeback",
    );
  }

  /** Shows the prompt that fits the standing request, if any. */
  show(g: Game, me: Color): void {
    const offer = this.offer;
    if (!isActive(g) || offer === Color.UNSPECIFIED) {
      this.el.hidden = true;
      this.el.replaceChildren();
      return;
    }
    this.el.hidden = false;
    const busy = this.host.busy();
    const asker = playerName(offer === Color.WHITE ? g.white : g.black);
    const button = (label: string, onclick: () => void, cls = "secondary") =>
      h("button", { type: "button", class: cls, onclick, disabled: busy }, label);
    if (me !== Color.UNSPECIFIED && offer !== me) {
      fill(
        this.el,
        h("span", {}, `${asker} asks to take back a move.`),
        button("Accept", () => void this.answer("accept"), ""),
        button("Decline", () => void this.answer("decline")),
      );
    } else if (me !== Color.UNSPECIFIED) {
      fill(this.el, h("span", { class: "muted" }, "Takeback requested…"), button("Cancel", () => void this.answer("cancel")));
    } else {
      fill(this.el, h("span", { class: "muted" }, `${asker} asks to take back a move.`));
    }
  }

  private propose(me: Color, rated: boolean): Promise<void> {
    return this.host.act(async () => {
      try {
        const r = await play.proposeTakeback({ gameId: this.host.gameId });
        // Against the engine it is made at once: the stream brings it.
        if (r.offered) this.offer = me;
      } catch (e) {
        // A rated game on a server that keeps takebacks out of them: the
        // button goes and the server's sentence stays.
        if (rated && reasonOf(e) === "not-allowed") this.refused = true;
        throw e;
      }
    });
  }

  private answer(how: "accept" | "decline" | "cancel"): Promise<void> {
    return this.host.act(async () => {
      const request = { gameId: this.host.gameId };
      if (how === "accept") await play.acceptTakeback(request);
      else if (how === "decline") await play.declineTakeback(request);
      else await play.cancelTakeback(request);
      this.offer = Color.UNSPECIFIED;
    });
  }
}
