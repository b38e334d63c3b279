// The public API over gRPC-Web, same origin as the page; the session (token
// kept in localStorage so it survives a reload); refusals turned into the
// sentence a player reads.
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { AccountService, LobbyService, PlayService } from "./gen/chess/gateway/v1/gateway_pb.js";

export interface Session {
  token: string;
  playerId: string;
  username: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

const SESSION_KEY = "rookery.session";
const sessionListeners = new Set<(s: Session | null) => void>();

function loadSession(): Session | null {
  try {
    const raw = localStorage.getItem(SESSION_KEY);
    if (!raw) return null;
    const s = JSON.parse(raw) as Session;
    if (typeof s.token !== "string" || typeof s.username !== "string" || s.expiresAt <= Date.now()) {
      localStorage.removeItem(SESSION_KEY);
      return null;
    }
    return s;
  } catch {
    return null;
  }
}

let current: Session | null = loadSession();

/** The signed-in player, if any. */
export function session(): Session | null {
  if (current && current.expiresAt <= Date.now()) setSession(null);
  return current;
}

export function setSession(s: Session | null): void {
  current = s;
  if (s) localStorage.setItem(SESSION_KEY, JSON.stringify(s));
  else localStorage.removeItem(SESSION_KEY);
  for (const listener of sessionListeners) listener(s);
}

/** Calls `listener` whenever the player signs in or out (also from another tab). */
export function onSessionChange(listener: (s: Session | null) => void): () => void {
  sessionListeners.add(listener);
  return () => sessionListeners.delete(listener);
}

window.addEventListener("storage", (e) => {
  if (e.key !== SESSION_KEY) return;
  current = loadSession();
  for (const listener of sessionListeners) listener(current);
});

const authenticate: Interceptor = (next) => async (req) => {
  const s = session();
  if (s) req.header.set("authorization", `Bearer ${s.token}`);
  try {
    return await next(req);
  } catch (e) {
    // A token the server no longer accepts (expired, or the server's key
    // changed) signs the player out rather than failing every call.
    if (s && e instanceof ConnectError && e.code === Code.Unauthenticated && session()?.token === s.token) {
      setSession(null);
    }
    throw e;
  }
};

const transport = createGrpcWebTransport({
  baseUrl: location.origin,
  interceptors: [authenticate],
});

export const accounts = createClient(AccountService, transport);
export const lobby = createClient(LobbyService, transport);
export const play = createClient(PlayService, transport);

/**
 * Signs out: ends the session on the server, so that its token is refused
 * from now on even where it was copied, then forgets it here. It is
 * forgotten even if the server cannot be told (offline, or it already
 * refused the token).
 */
export async function signOut(): Promise<void> {
  if (session()) {
    try {
      await accounts.logout({});
    } catch {
      // Nothing more to do: the token goes either way.
    }
  }
  setSession(null);
}

/** The `chess-reason` of a refusal (see gateway.proto), if it has one. */
export function reasonOf(e: unknown): string | undefined {
  return e instanceof ConnectError ? (e.metadata.get("chess-reason") ?? undefined) : undefined;
}

/** What to tell the player about a failed call: the server's own words. */
export function describeError(e: unknown): string {
  if (!(e instanceof ConnectError)) return e instanceof Error ? e.message : String(e);
  if (e.code === Code.Canceled) return "Cancelled.";
  const message = e.rawMessage.trim();
  if (e.code === Code.Unavailable && (!message || /fetch|network|transport/i.test(message))) {
    return "The server cannot be reached. Check your connection and try again.";
  }
  if (e.code === Code.Unauthenticated && !reasonOf(e)) {
    return message ? sentence(message) : "Please sign in again.";
  }
  if (!message) return `The server refused (${Code[e.code]}).`;
  return sentence(reasonOf(e) === "too-many-attempts" ? waitInWords(message) : message);
}

/** "try again in 723 s" said as a person would: "try again in 13 minutes". */
function waitInWords(message: string): string {
  return message.replace(/try again in (\d+) s\b/, (_, n: string) => {
    const secs = Number(n);
    if (secs < 60) return `try again in ${secs} second${secs === 1 ? "" : "s"}`;
    const minutes = Math.ceil(secs / 60);
    return `try again in ${minutes} minute${minutes === 1 ? "" : "s"}`;
  });
}

function sentence(text: string): string {
  // A sentence that starts with a move ("e2e5 is not…") keeps its case.
  const startsWithWord = /^[a-z]+(\s|$)/.test(text);
  const s = startsWithWord ? text.charAt(0).toUpperCase() + text.slice(1) : text;
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

/** Whether a failed stream should be opened again (rather than reported). */
export function isTransient(e: unknown): boolean {
  if (!(e instanceof ConnectError)) return true;
  return [Code.Unavailable, Code.Unknown, Code.Internal, Code.DeadlineExceeded, Code.Aborted, Code.ResourceExhausted].includes(
    e.code,
  );
}
