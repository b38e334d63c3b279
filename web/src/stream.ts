// A server stream kept open: opened again with back-off when it drops, with
// its state shown in the page's connection banner ("Reconnecting…").
import { describeError, isTransient } from "./api.js";

export type StreamState = "connecting" | "live" | "reconnecting" | "stopped";

export interface StreamOptions<T> {
  /**
   * Opens the stream; called again after every drop (resume there). Pass
   * `opened` as the call's `onHeader`: the stream counts as live from the
   * server's headers, before any item.
   */
  open: (signal: AbortSignal, opened: () => void) => AsyncIterable<T>;
  onItem: (item: T) => void;
  /** The stream ended without error: return true to open it again. */
  onEnd?: () => boolean;
  /** A refusal that opening again would not cure; the stream stops. */
  onFatal?: (message: string, error: unknown) => void;
  onState?: (state: StreamState) => void;
}

const reconnecting = new Set<object>();

function showBanner(): void {
  const banner = document.getElementById("connection");
  if (!banner) return;
  banner.hidden = reconnecting.size === 0;
}

/** Runs the stream until the returned function is called. */
export function keepStreaming<T>(options: StreamOptions<T>): () => void {
  const token = {};
  const controller = new AbortController();
  let stopped = false;
  const setState = (state: StreamState) => {
    if (state === "reconnecting") reconnecting.add(token);
    else reconnecting.delete(token);
    showBanner();
    options.onState?.(state);
  };
  (async () => {
    let delay = 250;
    setState("connecting");
    while (!stopped) {
      const opened = () => {
        delay = 250;
        setState("live");
      };
      try {
        for await (const item of options.open(controller.signal, opened)) {
          options.onItem(item);
        }
        if (stopped) break;
        if (!(options.onEnd?.() ?? true)) break;
      } catch (e) {
        if (stopped) break;
        if (!isTransient(e)) {
          setState("stopped");
          options.onFatal?.(describeError(e), e);
          return;
        }
      }
      setState("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, delay + Math.random() * delay * 0.3));
      delay = Math.min(delay * 2, 5000);
    }
    setState("stopped");
  })();
  return () => {
    stopped = true;
    controller.abort();
    reconnecting.delete(token);
    showBanner();
  };
}

