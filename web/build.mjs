// Builds the page into dist/: the script and the style sheet under
// content-hashed names (so the gateway can serve them as immutable), each
// also gzip- and brotli-compressed, the licences page of everything the
// bundle contains, and manifest.txt, from which the gateway's build script
// embeds them all. The output depends only on the sources and the locked
// packages: CI rebuilds it and fails on any difference from what is committed.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const DIST = "dist";
const CONTENT_TYPES = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
};

const result = await esbuild.build({
  entryPoints: { app: "src/main.ts", style: "src/style.css" },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022", "chrome110", "firefox110", "safari16"],
  outdir: path.join(DIST, "assets"),
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  legalComments: "none",
  metafile: true,
  write: false,
  logLevel: "warning",
});

fs.rmSync(DIST, { recursive: true, force: true });
fs.mkdirSync(path.join(DIST, "assets"), { recursive: true });

const manifest = [];
function emit(entry, url, bytes, immutable) {
  const file = url === "/licences" ? "licences.html" : url.replace(/^\/+/, "");
  const full = path.join(DIST, file);
  fs.mkdirSync(path.dirname(full), { recursive: true });
  fs.writeFileSync(full, bytes);
  fs.writeFileSync(`${full}.gz`, gzipSync(bytes, { level: 9 }));
  fs.writeFileSync(
    `${full}.br`,
    brotliCompressSync(bytes, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
      },
    }),
  );
  const etag = createHash("sha256").update(bytes).digest("hex").slice(0, 20);
  const type = CONTENT_TYPES[path.extname(full)];
  if (!type) throw new Error(`no content type for ${full}`);
  manifest.push([entry, url, file, type, etag, immutable ? "immutable" : "revalidate"].join("\t"));
}

for (const out of result.outputFiles) {
  const name = path.basename(out.path);
  const entry = name.startsWith("app-") ? "app.js" : name.startsWith("style-") ? "style.css" : name;
  emit(entry, `/assets/${name}`, Buffer.from(out.contents), true);
}

emit("licences", "/licences", Buffer.from(licencesPage(result.metafile)), false);
manifest.sort();
fs.writeFileSync(path.join(DIST, "manifest.txt"), `${manifest.join("\n")}\n`);

// The licences page: this project, then every package whose code is in the
// bundle, and the licence texts, each once: packages under the same text
// (the GPL of chessground and chessops, say) point to one copy of it.
function licencesPage(metafile) {
  const dirs = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const m = input.match(/^(.*?node_modules\/(?:@[^/]+\/)?[^/]+)\//);
    if (m) dirs.add(m[1]);
  }
  const packages = [...dirs]
    .map((dir) => {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
      const licenceFile = fs
        .readdirSync(dir)
        .sort()
        .find((f) => /^(licen[cs]e|copying)(\.md|\.txt)?$/i.test(f));
      const text = licenceFile ? fs.readFileSync(path.join(dir, licenceFile), "utf8").trim() : "";
      return { name: pkg.name, version: pkg.version, licence: pkg.license, homepage: pkg.homepage ?? "", text };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
  const texts = new Map();
  for (const p of packages.filter((p) => p.text)) {
    if (!texts.has(p.text)) texts.set(p.text, { id: `text-${texts.size + 1}`, licence: p.licence, users: [] });
    texts.get(p.text).users.push(p);
  }
  const esc = (s) =>
    String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const list = packages
    .map(
      (p) =>
        `<li id="${esc(p.name)}">${esc(p.name)} ${esc(p.version)} (${esc(p.licence)})` +
        (p.homepage ? ` · <a href="${esc(p.homepage)}">${esc(p.homepage)}</a>` : "") +
        (p.text ? ` · <a href="#${texts.get(p.text).id}">licence text</a>` : "") +
        "</li>",
    )
    .join("\n");
  const sections = [...texts]
    .map(
      ([text, { id, licence, users }]) =>
        `<section id="${id}">\n<h2>${esc(licence)}: ${users.map((p) => esc(p.name)).join(", ")}</h2>\n` +
        `<pre>${esc(text)}</pre>\n</section>`,
    )
    .join("\n");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Licences · Rookery</title>
<style>body{font-family:system-ui,sans-serif;max-width:50rem;margin:auto;padding:1rem;color:#222}pre{white-space:pre-wrap;font-size:.8rem;background:#f4f4f4;padding:.6rem}</style>
</head>
<body>
<h1>Licences</h1>
<p>Rookery is free software under the GNU Affero General Public License, version 3 or later.
The page you are using is built from its sources and from these packages, whose code is in the script it runs:</p>
<ul>
${list}
</ul>
${sections}
</body>
</html>
`;
}
