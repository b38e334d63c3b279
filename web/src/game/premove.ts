// When the player may queue a premove (see the board): in a game they play,
// still going, with a clock that runs in real time. A correspondence game
// has no premove, as on lichess: a day to answer leaves time to look.
import { Color } from "../gen/chess/common/v1/common_pb.js";
import { colorOf, type Game, isActive } from "./model.js";

/** The player's colour where premoves are allowed in `game`, else undefined. */
export function premoveColor(game: Game, myColor: Color): "white" | "black" | undefined {
  if (myColor === Color.UNSPECIFIED || !isActive(game)) return undefined;
  if (game.timeControl?.kind.case === "daily") return undefined;
  return colorOf(myColor);
}
