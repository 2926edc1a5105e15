// Builds the chat widget's front end: frontend/src/widget.ts and everything it imports bundled
// into one ES module (anywidget loads it from a Blob URL, so it may import nothing), and the
// stylesheet copied beside it; and the chart library (src/chart-library.ts: Vega, Vega-Lite and
// vega-embed) as a second self-contained module, charts.js, which the kernel sends to a view when
// its first chart is drawn (chat.js holds no Vega).
//
//   node build.mjs                  -> ../gmchat_nb/widget/static/chat.js, charts.js and chat.css
//   node build.mjs --outdir DIR     -> DIR/chat.js, DIR/charts.js and DIR/chat.css (tests compare them)
//   node build.mjs --lab            -> lib/index.js (+ lib/chart-library.js) and lib/style.css: the
//                                      side panel's plugin (src/lab/index.ts) with the same
//                                      components, JupyterLab's and Lumino's packages left as
//                                      imports (they are shared with the app) and the Vega
//                                      packages too, imported by lib/chart-library.js, which the
//                                      panel imports dynamically; `jupyter labextension build .`
//                                      then bundles it with webpack into ../gmchat_nb/labextension/,
//                                      the chart library and Vega as a lazy chunk
//
// `npm run build` type-checks first (tsc --noEmit), then runs this (both ways) and the labextension build.

import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_OUTDIR = path.join(HERE, "..", "gmchat_nb", "widget", "static");
const BANNER = "// gmchat_nb chat widget, built from frontend/src by frontend/build.mjs: do not edit.";
const CHARTS_BANNER = "// gmchat_nb chart library (Vega, Vega-Lite, vega-embed), built from frontend/src/chart-library.ts by frontend/build.mjs: do not edit.";

function outdirFrom(argv) {
  const index = argv.findIndex((arg) => arg === "--outdir" || arg.startsWith("--outdir="));
  if (index < 0) return DEFAULT_OUTDIR;
  const arg = argv[index];
  const value = arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : argv[index + 1];
  if (!value) throw new Error("--outdir needs a directory");
  return path.resolve(value);
}

// The chart library's packages: in the widget's charts.js, bundled; in the side panel's lib/,
// imports that webpack resolves (into the lazy chunk of lib/chart-library.js).
const VEGA = ["vega", "vega-lite", "vega-embed", "vega-interpreter"];

async function buildLab() {
  const lib = path.join(HERE, "lib");
  await rm(lib, { recursive: true, force: true });
  await mkdir(lib, { recursive: true });
  const result = await esbuild.build({
    entryPoints: [path.join(HERE, "src", "lab", "index.ts")],
    outdir: lib,
    // the dynamic import of src/chart-library.ts becomes lib/chart-library.js
    splitting: true,
    entryNames: "[name]",
    chunkNames: "[name]",
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2020",
    external: ["@jupyterlab/*", "@lumino/*", ...VEGA],
    legalComments: "eof",
    charset: "utf8",
    banner: { js: "// gmchat_nb side panel, built from frontend/src by frontend/build.mjs --lab: do not edit." },
    logLevel: "warning",
    metafile: true,
  });
  const css = await Promise.all(["chat.css", "panel.css"].map((name) => readFile(path.join(HERE, "src", "styles", name), "utf8")));
  await writeFile(path.join(lib, "style.css"), css.join("\n"));
  const outputs = Object.entries(result.metafile.outputs).map(([file, output]) => `${path.basename(file)} (${output.bytes} bytes)`);
  console.log(`built lib/: ${outputs.join(", ")} and style.css`);
}

if (process.argv.includes("--lab")) {
  await buildLab();
  process.exit(0);
}

const outdir = outdirFrom(process.argv.slice(2));
await mkdir(outdir, { recursive: true });
const common = {
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2020",
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  logLevel: "warning",
  metafile: true,
};
const [chat, charts] = await Promise.all([
  esbuild.build({
    ...common,
    entryPoints: [path.join(HERE, "src", "widget.ts")],
    outfile: path.join(outdir, "chat.js"),
    banner: { js: BANNER },
  }),
  esbuild.build({
    ...common,
    entryPoints: [path.join(HERE, "src", "chart-library.ts")],
    outfile: path.join(outdir, "charts.js"),
    banner: { js: CHARTS_BANNER },
  }),
]);
// chat.js must stay without Vega: only charts.js may hold it.
const leaked = Object.keys(chat.metafile.inputs).filter((input) => VEGA.some((name) => input.includes(`node_modules/${name}/`)));
if (leaked.length) throw new Error(`chat.js would hold the chart library: ${leaked.slice(0, 3).join(", ")}`);
await copyFile(path.join(HERE, "src", "styles", "chat.css"), path.join(outdir, "chat.css"));
const size = (result) => Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
const where = path.relative(process.cwd(), outdir) || ".";
console.log(`built ${where}/chat.js (${size(chat)} bytes), charts.js (${size(charts)} bytes) and chat.css`);
