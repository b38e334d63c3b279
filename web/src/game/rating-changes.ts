// What a finished rated game did to its players' ratings, as the page shows
// it beside their names ("1510 +10"): asked for once the game ends, and
// again for a little while until the rating service has applied it (the
// game service reports a result just after the game ends).
import { play } from "../api.js";
import type { RatingDelta } from "../gen/chess/gateway/v1/gateway_pb.js";
import { rating } from "../ui.js";

/** "+12", "−8", "±0". */
export function changeText(d: RatingDelta): string {
  const change = Math.round(d.ratingAfter) - Math.round(d.ratingBefore);
  return change > 0 ? `+${change}` : change < 0 ? `−${-change}` : "±0";
}

export interface ShownChange {
  /** The new rating. */
  after: string;
  /** "+10", "−10", "±0". */
  change: string;
  gain: boolean;
}

function shown(d: RatingDelta | undefined): ShownChange | undefined {
  if (!d) return undefined;
  const change = changeText(d);
  return { after: rating(d.ratingAfter), change, gain: !change.startsWith("−") };
}

/** Calls `found` with the white and the black player's change once the
 * game's are known, trying for about half a minute; `gone` says the page
 * has moved on. */
export async function awaitRatingChanges(
  gameId: string,
  gone: () => boolean,
  found: (white: ShownChange | undefined, black: ShownChange | undefined) => void,
): Promise<void> {
  let pause = 250;
  for (let attempt = 0; attempt < 12 && !gone(); attempt++) {
    try {
      const r = await play.getRatingChanges({ gameId });
      if (r.white || r.black) {
        if (!gone()) found(shown(r.white), shown(r.black));
        return;
      }
    } catch {
      // A rating change is a nicety: the game shows without it.
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 4000);
  }
}
