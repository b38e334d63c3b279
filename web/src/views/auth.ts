// Sign in, register, and the signed-in player's account: a new password,
// signing out everywhere.
import { type Timestamp, timestampMs } from "@bufbuild/protobuf/wkt";
import { accounts, describeError, session, setSession } from "../api.js";
import { navigate, type View } from "../router.js";
import { h, toast } from "../ui.js";
import { signInPath } from "./helpers.js";

/** Where to go after signing in: `?next=` if it is a path of this site. */
function next(query: URLSearchParams): string {
  const n = query.get("next");
  return n && n.startsWith("/") && !n.startsWith("//") ? n : "/";
}

/** Keeps the session a Login or ChangePassword answer carries. */
function keep(r: { token: string; playerId: string; username: string; expiresAt?: Timestamp }): void {
  setSession({
    token: r.token,
    playerId: r.playerId,
    username: r.username,
    expiresAt: r.expiresAt ? timestampMs(r.expiresAt) : Date.now() + 86_400_000,
  });
}

async function signIn(login: string, password: string): Promise<void> {
  keep(await accounts.login({ login, password }));
}

function form(
  title: string,
  fields: HTMLElement[],
  submitLabel: string,
  submit: (data: FormData) => Promise<void>,
  footer: HTMLElement,
): HTMLElement {
  const error = h("p", { class: "error", role: "alert" });
  const button = h("button", { type: "submit" }, submitLabel);
  const f = h("form", { class: "card narrow" }, h("h1", {}, title), ...fields, error, button, footer);
  f.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.textContent = "";
    button.disabled = true;
    try {
      await submit(new FormData(f));
    } catch (err) {
      error.textContent = describeError(err);
    } finally {
      button.disabled = false;
    }
  });
  return f;
}

function field(label: string, name: string, type: string, extra: Record<string, string | boolean> = {}): HTMLElement {
  return h("label", {}, label, h("input", { name, type, required: true, ...extra }));
}

export function loginView(query: URLSearchParams): View {
  const el = form(
    "Sign in",
    [
      field("Username or email", "login", "text", { autocomplete: "username", autofocus: true }),
      field("Password", "password", "password", { autocomplete: "current-password" }),
    ],
    "Sign in",
    async (data) => {
      await signIn(String(data.get("login")), String(data.get("password")));
      navigate(next(query), true);
    },
    h("p", {}, "New here? ", h("a", { href: `/register${location.search}` }, "Register")),
  );
  return { el, title: "Sign in" };
}

export function registerView(query: URLSearchParams): View {
  const el = form(
    "Register",
    [
      field("Username", "username", "text", {
        autocomplete: "username",
        minlength: "3",
        maxlength: "20",
        pattern: "[A-Za-z0-9_\\-]{3,20}",
        title: "3 to 20 letters, digits, _ and -",
        autofocus: true,
      }),
      field("Email", "email", "email", { autocomplete: "email" }),
      field("Password", "password", "password", { autocomplete: "new-password", minlength: "8" }),
    ],
    "Register",
    async (data) => {
      const username = String(data.get("username"));
      const password = String(data.get("password"));
      await accounts.register({ username, email: String(data.get("email")), password });
      await signIn(username, password);
      navigate(next(query), true);
    },
    h("p", {}, "Already registered? ", h("a", { href: `/login${location.search}` }, "Sign in")),
  );
  return { el, title: "Register" };
}

export function accountView(): View {
  if (!session()) {
    queueMicrotask(() => navigate(signInPath(), true));
    return { el: h("p", {}, h("a", { href: signInPath() }, "Sign in"), " to manage your account."), title: "Account" };
  }
  const change = form(
    "Change password",
    [
      field("Current password", "old", "password", { autocomplete: "current-password", autofocus: true }),
      field("New password", "new", "password", { autocomplete: "new-password", minlength: "8" }),
    ],
    "Change password",
    async (data) => {
      // Every other session ends; this one goes on with the new token.
      keep(await accounts.changePassword({ oldPassword: String(data.get("old")), newPassword: String(data.get("new")) }));
      (change as HTMLFormElement).reset();
      toast("Password changed; you are signed out everywhere else.", "info");
    },
    h("p", {}, "Changing it signs you out on every other device."),
  );
  const everywhere = h("button", { type: "button" }, "Sign out everywhere");
  const error = h("p", { class: "error", role: "alert" });
  everywhere.addEventListener("click", async () => {
    error.textContent = "";
    everywhere.disabled = true;
    try {
      await accounts.logoutEverywhere({});
      setSession(null);
      navigate("/");
    } catch (err) {
      error.textContent = describeError(err);
    } finally {
      everywhere.disabled = false;
    }
  });
  const el = h(
    "div",
    {},
    change,
    h(
      "section",
      { class: "card narrow" },
      h("h2", {}, "Sessions"),
      h("p", {}, "Sign out on every device and browser, this one included."),
      error,
      everywhere,
    ),
    chatSettings(),
  );
  return { el, title: "Account" };
}

/** The "Chat" switch (SetChatOff), and a moderator's server-wide mute while it lasts. */
function chatSettings(): HTMLElement {
  const toggle = h("input", { type: "checkbox", role: "switch", disabled: true, "data-testid": "chat-switch" });
  const state = h("span", { class: "muted" });
  const muted = h("p", { class: "error", "data-testid": "chat-muted", hidden: true });
  const error = h("p", { class: "error", role: "alert" });
  const show = (off: boolean) => {
    toggle.checked = !off;
    toggle.disabled = false;
    state.textContent = off ? "off: you neither see nor post chat messages" : "on";
  };
  void accounts.me({}).then(
    (r) => {
      show(r.chatOff);
      if (r.chatMutedUntil && timestampMs(r.chatMutedUntil) > Date.now()) {
        muted.textContent = `Your chat is muted until ${new Date(timestampMs(r.chatMutedUntil)).toLocaleString()}.`;
        muted.hidden = false;
      }
    },
    (e) => (error.textContent = describeError(e)),
  );
  toggle.addEventListener("change", async () => {
    error.textContent = "";
    const off = !toggle.checked;
    toggle.disabled = true;
    try {
      show((await accounts.setChatOff({ chatOff: off })).chatOff);
    } catch (e) {
      error.textContent = describeError(e);
      show(!off);
    }
  });
  return h(
    "section",
    { class: "card narrow", "data-testid": "chat-settings" },
    h("h2", {}, "Chat"),
    h("label", { class: "switch" }, toggle, " Chat ", state),
    muted,
    error,
  );
}
