// What src/api.ts takes from the browser, for running it under Node (20 or
// later, whose fetch the gRPC-Web transport uses): the page's address,
// localStorage, and a window to listen on. Import this before api.ts.
declare const process: { env: Record<string, string | undefined> };

const url = process.env.CHESS_WEB_URL;
if (!url) throw new Error("CHESS_WEB_URL is not set (the page's address, e.g. http://127.0.0.1:50051)");

const items = new Map<string, string>();
const storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> = {
  getItem: (key) => items.get(key) ?? null,
  setItem: (key, value) => void items.set(key, String(value)),
  removeItem: (key) => void items.delete(key),
};

Object.defineProperties(globalThis, {
  location: { value: new URL(url) },
  localStorage: { value: storage },
  window: { value: new EventTarget() },
});
