// Builds the chat widget's front end: frontend/src/widget.ts and everything it imports bundled
// into one ES module (anywidget loads it from a Blob URL, so it may import nothing), and the
// stylesheet copied beside it.
//
//   node build.mjs                  -> ../gmchat_nb/widget/static/chat.js and chat.css
//   node build.mjs --outdir DIR     -> DIR/chat.js and DIR/chat.css (tests compare the two)
//   node build.mjs --lab            -> lib/index.js and lib/style.css: the side panel's plugin
//                                      (src/lab/index.ts) with the same components, JupyterLab's
//                                      and Lumino's packages left as imports (they are shared with
//                                      the app); `jupyter labextension build .` then bundles it
//                                      with webpack into ../gmchat_nb/labextension/
//
// `npm run build` type-checks first (tsc --noEmit), then runs this (both ways) and the labextension build.

import { copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_OUTDIR = path.join(HERE, "..", "gmchat_nb", "widget", "static");
const BANNER = "// gmchat_nb chat widget, built from frontend/src by frontend/build.mjs: do not edit.";

function outdirFrom(argv) {
  const index = argv.findIndex((arg) => arg === "--outdir" || arg.startsWith("--outdir="));
  if (index < 0) return DEFAULT_OUTDIR;
  const arg = argv[index];
  const value = arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : argv[index + 1];
  if (!value) throw new Error("--outdir needs a directory");
  return path.resolve(value);
}

async function buildLab() {
  const lib = path.join(HERE, "lib");
  await mkdir(lib, { recursive: true });
  const result = await esbuild.build({
    entryPoints: [path.join(HERE, "src", "lab", "index.ts")],
    outfile: path.join(lib, "index.js"),
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2020",
    external: ["@jupyterlab/*", "@lumino/*"],
    legalComments: "eof",
    charset: "utf8",
    banner: { js: "// gmchat_nb side panel, built from frontend/src by frontend/build.mjs --lab: do not edit." },
    logLevel: "warning",
    metafile: true,
  });
  const css = await Promise.all(["chat.css", "panel.css"].map((name) => readFile(path.join(HERE, "src", "styles", name), "utf8")));
  await writeFile(path.join(lib, "style.css"), css.join("\n"));
  const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
  console.log(`built lib/index.js (${bytes} bytes) and lib/style.css`);
}

if (process.argv.includes("--lab")) {
  await buildLab();
  process.exit(0);
}

const outdir = outdirFrom(process.argv.slice(2));
await mkdir(outdir, { recursive: true });
const result = await esbuild.build({
  entryPoints: [path.join(HERE, "src", "widget.ts")],
  outfile: path.join(outdir, "chat.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2020",
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  banner: { js: BANNER },
  logLevel: "warning",
  metafile: true,
});
await copyFile(path.join(HERE, "src", "styles", "chat.css"), path.join(outdir, "chat.css"));
const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
console.log(`built ${path.relative(process.cwd(), path.join(outdir, "chat.js")) || "chat.js"} (${bytes} bytes) and chat.css`);
