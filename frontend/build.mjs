// Builds the chat widget's front end: frontend/src/widget.ts and everything it imports bundled
// into one ES module (anywidget loads it from a Blob URL, so it may import nothing), and the
// stylesheet copied beside it.
//
//   node build.mjs                  -> ../gmchat_nb/widget/static/chat.js and chat.css
//   node build.mjs --outdir DIR     -> DIR/chat.js and DIR/chat.css (tests compare the two)
//
// `npm run build` type-checks first (tsc --noEmit), then runs this.

import { copyFile, mkdir } from "node:fs/promises";
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
