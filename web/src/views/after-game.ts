// What a player of a finished game may do next, under the result: a new
// game with the same settings (against the computer: the same level and
// colour at once; against a person: the same time control posted as an
// open seek, the lobby then showing it waiting), or back to the lobby.
// `extra` is where other next steps (a rematch offer) go, first in the row.
import { describeError, lobby } from "../api.js";
import { AcceptMode, Color, ColorChoice } from "../gen/chess/common/v1/common_pb.js";
import { type Game, isActive } from "../game/model.js";
import { navigate } from "../router.js";
import { h, toast } from "../ui.js";

export class NextSteps {
  readonly el: HTMLElement;
  /** Where further next steps go, before "New game" and "Back to the lobby". */
  readonly extra: HTMLElement;
  private readonly again: HTMLButtonElement;
  private game: Game | null = null;
  private myColor = Color.UNSPECIFIED;

  constructor() {
    this.extra = h("span", { class: "next-extra" });
    this.again = h("button", { type: "button", "data-testid": "new-game-same-settings" }, "New game with the same settings");
    this.again.addEventListener("click", () => void this.newGame());
    this.el = h(
      "div",
      { class: "next-steps", "data-testid": "next-steps", role: "group", "aria-label": "Next steps", hidden: true },
      this.extra,
      this.again,
      h("a", { href: "/", class: "button secondary", "data-testid": "back-to-lobby" }, "Back to the lobby"),
    );
  }

  /** Shown to a player of `g` once it is over. */
  show(g: Game, myColor: Color): void {
    this.game = g;
    this.myColor = myColor;
    this.el.hidden = myColor === Color.UNSPECIFIED || isActive(g);
  }

  private async newGame(): Promise<void> {
    const g = this.game;
    if (!g || this.again.disabled) return;
    const opponent = this.myColor === Color.WHITE ? g.black : g.white;
    this.again.disabled = true;
    try {
      if (opponent?.kind.case === "engine") {
        const level = opponent.kind.value.level;
        const r = await lobby.playEngine({
          level,
          fullStrength: level === 0,
          color: this.myColor === Color.WHITE ? ColorChoice.WHITE : ColorChoice.BLACK,
          timeControl: g.timeControl?.kind.case === "untimed" ? undefined : g.timeControl,
        });
        if (r.game?.gameId) navigate(`/games/${encodeURIComponent(r.game.gameId)}`);
        return;
      }
      await lobby.createSeek({
        timeControl: g.timeControl,
        color: ColorChoice.EITHER,
        rated: g.rated,
        minRating: 0,
        maxRating: 0,
        showName: true,
        acceptMode: AcceptMode.AUTOMATIC,
        allowHints: g.hintsAllowed && !g.rated,
      });
      toast("Your seek is posted: the game starts when someone takes it.", "info");
      navigate("/");
    } catch (e) {
      toast(describeError(e));
    } finally {
      this.again.disabled = false;
    }
  }
}
