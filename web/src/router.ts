// Client-side routes on real paths (the gateway answers each of them with the
// same page), History API navigation, and the one view on screen at a time.
import { h } from "./ui.js";

export interface View {
  /** The view's root element, put in <main>. */
  el: HTMLElement;
  /** The document title, without the site name. */
  title: string;
  /** Stops the view's streams and timers when another replaces it. */
  dispose?: () => void;
}

export type Params = Record<string, string>;
type Factory = (params: Params, query: URLSearchParams) => View;

const routes: [RegExp, string[], Factory][] = [];

/** Adds a route: `pattern` like "/games/:id". */
export function route(pattern: string, factory: Factory): void {
  const names: string[] = [];
  const source = pattern.replace(/:([a-z]+)/g, (_, name: string) => {
    names.push(name);
    return "([^/]+)";
  });
  routes.push([new RegExp(`^${source}$`), names, factory]);
}

let currentView: View | null = null;
let notFound: Factory = () => ({ el: h("p", {}, "There is no page at this address."), title: "Not found" });

export function setNotFound(factory: Factory): void {
  notFound = factory;
}

/** Goes to `path` (adds a history entry unless `replace`). */
export function navigate(path: string, replace = false): void {
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  render();
}

/** Shows the view of the current address. */
export function render(): void {
  const main = document.querySelector("main")!;
  currentView?.dispose?.();
  const query = new URLSearchParams(location.search);
  let view: View | null = null;
  for (const [re, names, factory] of routes) {
    const m = location.pathname.match(re);
    if (!m) continue;
    const params: Params = {};
    names.forEach((name, i) => (params[name] = decodeURIComponent(m[i + 1]!)));
    view = factory(params, query);
    break;
  }
  view ??= notFound({}, query);
  currentView = view;
  main.replaceChildren(view.el);
  document.title = `${view.title} · Rookery`;
  for (const link of document.querySelectorAll<HTMLAnchorElement>("nav a[data-nav]")) {
    link.toggleAttribute("aria-current", link.pathname === location.pathname);
  }
}

/** Same-origin links navigate without reloading the page. */
export function interceptLinks(): void {
  document.addEventListener("click", (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest("a");
    if (!a || a.target || a.hasAttribute("download") || a.origin !== location.origin) return;
    if (a.pathname === "/licences" || a.pathname.endsWith(".pgn")) return;
    e.preventDefault();
    if (a.pathname + a.search !== location.pathname + location.search) navigate(a.pathname + a.search);
  });
  window.addEventListener("popstate", render);
}
