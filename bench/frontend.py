"""Benchmark of the front end: bundle sizes, and the JupyterLab side panel against the notebook
widget in a real JupyterLab driven by Debian's chromium.

Run from the repository root (needs the built front end: ``pip install -e '.[lab]'`` or ``npm run
build`` in ``frontend/``; Node only for the widget bundle's breakdown)::

    .venv/bin/python bench/frontend.py                        # ~2-3 minutes
    .venv/bin/python bench/frontend.py --runs 3               # fewer page loads
    .venv/bin/python bench/frontend.py --provider offline     # the offline provider on both sides
    .venv/bin/python bench/frontend.py --chunk-delay 1 --runs 3   # a model pausing 1 s a chunk
    .venv/bin/python bench/frontend.py --sizes-only           # section 1 only, no browser

1. **Bundle sizes**, raw and gzip (Python's gzip, level 9): the widget's ES module
   (``gmchat_nb/widget/static/chat.js``, ``chat.css``: what anywidget sends to each view) and every
   file of the prebuilt labextension (``gmchat_nb/labextension/static/``: JupyterLab loads the
   plugin's chunks at start-up, the panel being an autoStart plugin; ``@jupyterlab/*`` and
   ``@lumino/*`` are the app's own and not in it). When ``frontend/node_modules`` is there, chat.js
   broken down by input: build.mjs prints no metafile, so esbuild runs again with build.mjs's
   options and ``metafile: true`` (``bytesInOutput`` of each input, grouped by npm package), and
   ``node build.mjs --outdir TMP`` is run to check that the shipped chat.js is this checkout's build.
2. **Time to first paint and to the first streamed character**, the side panel against the widget
   in the same JupyterLab, medians of ``--runs`` (5). One JupyterLab server for the whole run
   (gmchat's server extension, the demo project, the checkout's labextension linked first on the
   data path, the app exposed as ``window.jupyterapp``) and, per run, a fresh browser context
   (cold caches, empty storage) on a fresh notebook in its own workspace. Untimed set-up of each
   run: the page loads, the kernel starts and is idle, and a first cell imports gmchat_nb, builds
   the ``Chat`` (a SQLite file of its own, as the server has one) and connects it (``await
   chat.session()``: the demo project and the store), after one turn in a throwaway ``Chat``;
   so the widget's times include neither a kernel start nor imports nor a process's first turn,
   as the panel's include neither a server start nor the server's first turn (one untimed
   ``POST {url}`` before the runs). A fresh empty conversation is created on the server (``POST conversations/``) so the
   panel opens on an empty conversation as the widget's new ``Chat`` is one. The two are measured
   one after the other in the same page, in alternating order from run to run.

   Every time is taken in the page with ``performance.now()``: a MutationObserver (and a check on
   every animation frame) is set up in the same ``page.evaluate`` that starts the action, so no
   Playwright round trip is in a number. Milestones, each the moment its DOM condition first holds:

   * **first paint**: the view's input (``[data-testid=gmchat-input]``) is in the document and
     rendered (it has a box). Panel: from ``commands.execute('gmchat:open')`` (the palette's "Open
     gmchat" runs the same command); the plugin is already loaded, the panel's ``ChatView`` is
     built when it is first shown, before any request. Widget: from
     ``commands.execute('notebook:run-cell')`` on the cell whose last line is ``chat``: the
     execute request to the kernel, the display message, the anywidget model's comm, loading the
     ES module from its Blob URL and building the same ``ChatView``.
   * **connected**: the view shows its first snapshot (``data-sync`` set on its root). Panel:
     ``GET conversations/``, ``GET conversations/{id}/turns/``, the journal read from its start
     (``GET .../events``). Widget: ``hello`` over the comm, the kernel's ``snapshot``.
   * **turn shown**, **first character**, **answer complete**: from a click on Send with the
     question in the input (the same question on both sides) to the turn's element appearing
     (``turn_start`` came back), to the first non-blank character of the answer, and to the turn
     finished (its ``gmchat-running`` class gone) with the whole answer. Panel: ``POST turns/``,
     then the journal followed over server-sent events (the server's engine thread runs the turn;
     events are committed in groups, at most 50 ms apart, before a follower sees them). Widget:
     the comm message to the kernel, which runs the turn and sends batched ``events`` (a message
     once 40 ms have passed since the last one or 200 characters wait; the check runs when an
     event arrives, there is no timer, so a text chunk that comes sooner waits for the next event:
     here the first chunk waits for the second, 50 ms later; ``--chunk-delay 1`` makes it 1 s).

   The browser paints a milestone in the frame after its DOM condition: that frame is recorded
   too (``requestAnimationFrame``, then a task: within ~17 ms on an idle main thread, later when
   layout or script holds it) and shown for first paint and the first character.
   Provider (both sides the same): ``scripted`` (default), one answer of 22 chunks
   ``--chunk-delay`` (0.05) seconds apart and no tools, so the numbers are the front ends and their
   transports; ``offline``, the default provider, which queries the demo project first (its tool
   steps, then the answer as one text chunk).
3. The machine's load average before and after (these machines are shared and noisy).

Nothing is asserted.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from machine import describe, load  # noqa: E402  (bench/ is on sys.path when run)
from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

from tests.chromium import CHROMIUM, launch_chromium  # noqa: E402
from tests.jupyter_app import LABEXTENSION, JupyterApp  # noqa: E402
from tests.widget.browser.lab import (  # noqa: E402
    cell_output,
    open_notebook,
    run_cell,
    wait_for_kernel_idle,
    write_notebook,
)

FRONTEND = ROOT / "frontend"
WIDGET_STATIC = ROOT / "gmchat_nb" / "widget" / "static"

QUESTION = "Which projects use parts made of cobalt?"
# (no figures and no claims of data or changes: the completion gates pass it as it is)
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho"
ANSWER_CHUNKS = [
    "Here is ",
    "a reply ",
    "streamed ",
    "word by word: ",
    *(f"{word} " for word in WORDS.split()),
    "omega.",
]


def scripted_rounds(delay: float) -> list[dict[str, Any]]:
    """The scripted provider's one round: the answer's chunks, ``delay`` seconds apart."""
    return [{"chunks": ANSWER_CHUNKS, "chunk_delay_seconds": delay}]


PANEL_SCOPE = "#gmchat-panel"
WIDGET_SCOPE = ".jp-NotebookPanel"
SETUP_DONE = "bench: chat connected"

# -- 1. bundle sizes -------------------------------------------------------------------------------


def sizes(path: Path) -> tuple[int, int]:
    """(raw bytes, gzip -9 bytes) of a file."""
    data = path.read_bytes()
    return len(data), len(gzip.compress(data, compresslevel=9))


METAFILE_SCRIPT = """
import * as esbuild from "esbuild";
const result = await esbuild.build({
  entryPoints: ["src/widget.ts"], outfile: process.argv[1] + "/chat.js", bundle: true,
  format: "esm", platform: "browser", target: "es2020", minify: true, legalComments: "eof",
  charset: "utf8", logLevel: "warning", metafile: true, write: false,
});
const [output] = Object.values(result.metafile.outputs).filter((o) => o.entryPoint);
console.log(JSON.stringify({ bytes: output.bytes, inputs: output.inputs }));
"""


def package_of(source: str) -> str:
    """An esbuild input path's npm package (``node_modules/...``), else the path itself."""
    if "node_modules/" not in source:
        return source
    parts = source.rsplit("node_modules/", 1)[1].split("/")
    return "/".join(parts[:2]) if parts[0].startswith("@") else parts[0]


def widget_breakdown() -> tuple[dict[str, int], int, str] | str:
    """chat.js's bytes by input (grouped by package), esbuild's total, and a note on whether
    build.mjs rebuilds the shipped chat.js byte for byte; or why there is no breakdown."""
    node = shutil.which("node")
    if node is None or not (FRONTEND / "node_modules" / "esbuild").is_dir():
        return "no breakdown: needs node and frontend/node_modules (npm install in frontend/)"
    with tempfile.TemporaryDirectory() as folder:
        built = subprocess.run(
            [node, "build.mjs", "--outdir", folder], cwd=FRONTEND, capture_output=True, text=True
        )
        if built.returncode != 0:
            return f"no breakdown: build.mjs failed: {built.stderr.strip()[-300:]}"
        same = (Path(folder) / "chat.js").read_bytes() == (WIDGET_STATIC / "chat.js").read_bytes()
        note = (
            "build.mjs rebuilds the shipped chat.js byte for byte"
            if same
            else "the shipped chat.js differs from build.mjs's output now (a stale build?)"
        )
        meta = subprocess.run(
            [node, "--input-type=module", "-e", METAFILE_SCRIPT, folder],
            cwd=FRONTEND,
            capture_output=True,
            text=True,
        )
    if meta.returncode != 0:
        return f"no breakdown: esbuild failed: {meta.stderr.strip()[-300:]}"
    output = json.loads(meta.stdout)
    grouped: dict[str, int] = {}
    for source, info in output["inputs"].items():
        key = package_of(source)
        grouped[key] = grouped.get(key, 0) + int(info["bytesInOutput"])
    return grouped, int(output["bytes"]), note


def holds(path: Path) -> str:
    """What a built file is (read from its name and content)."""
    data = path.read_bytes()
    if path.name == "chat.js":
        return "the widget: ChatView, markdown-it, DOMPurify (one ES module)"
    if path.name == "charts.js":
        return "the chart library: Vega, Vega-Lite, vega-embed (sent when a view draws its first chart)"
    if path.suffix == ".css":
        return "the widget's stylesheet"
    if path.name.startswith("remoteEntry"):
        return "module federation entry (loaded at start-up)"
    if b"gmchat:open" in data:
        return "the plugin: panel, ChatView, server transport, markdown-it, DOMPurify"
    if b".gmchat" in data and b".push([" in data:
        return "the stylesheet (chat.css + panel.css) as a JS module"
    if path.name == "style.js":
        return "the builder's stylesheet import stub"
    if path.suffix in (".json", ".txt"):
        return "licences (not loaded)"
    if b"charts load nothing" in data:
        return "the chart library's entry (lazy: loaded with Vega on the first chart)"
    if b"vega-lite" in data or b"Vega-Lite" in data:
        return "Vega, Vega-Lite, vega-embed (a lazy chunk: loaded on the first chart)"
    return ""


def report_sizes() -> None:
    print("## 1. Bundle sizes (gzip: Python's gzip, level 9)\n")
    print("| bundle | file | what | raw | gzip |")
    print("|---|---|---|---:|---:|")
    widget = [WIDGET_STATIC / "chat.js", WIDGET_STATIC / "chat.css", WIDGET_STATIC / "charts.js"]
    lab = sorted(p for p in (LABEXTENSION / "static").glob("*") if p.is_file())
    for label, files in (("widget (anywidget ES module)", widget), ("labextension", lab)):
        total_raw = total_gz = 0
        for path in files:
            if not path.is_file():
                print(f"| {label} | {path.name} | missing | | |")
                continue
            raw, gz = sizes(path)
            total_raw, total_gz = total_raw + raw, total_gz + gz
            print(f"| {label} | {path.name} | {holds(path)} | {raw:,} | {gz:,} |")
        print(f"| {label} | **total** | | **{total_raw:,}** | **{total_gz:,}** |")
    breakdown = widget_breakdown()
    if isinstance(breakdown, str):
        print(f"\nchat.js by input: {breakdown}")
        return
    grouped, total, note = breakdown
    print(
        f"\n### chat.js by input (esbuild metafile, bytes in the minified output; {note}; "
        f"esbuild's output {total:,} bytes, chat.js {sizes(widget[0])[0]:,} with its banner)\n"
    )
    print("| input | bytes | share |")
    print("|---|---:|---:|")
    shown = sorted(grouped.items(), key=lambda item: -item[1])
    for name, count in shown:
        print(f"| {name} | {count:,} | {count / total:.1%} |")
    rest = total - sum(grouped.values())
    print(f"| (esbuild's glue: module wrappers, exports) | {rest:,} | {rest / total:.1%} |")
    ours = sum(count for name, count in grouped.items() if name.startswith("src/"))
    theirs = total - ours - rest
    print(f"| **frontend/src/ (ours)** | **{ours:,}** | **{ours / total:.1%}** |")
    print(f"| **npm packages** | **{theirs:,}** | **{theirs / total:.1%}** |")


# -- 2. measuring in the page ----------------------------------------------------------------------

# One page.evaluate: install the observer, start the action, resolve with each milestone's time
# (ms after the action started) and the frame after it.
MEASURE = """
async ({ scope, action, question, cell, milestones, last, timeout }) => {
  const app = window.jupyterapp;
  const q = (selector) => document.querySelector(`${scope} ${selector}`);
  const turns = () => document.querySelectorAll(`${scope} [data-testid=gmchat-turn]`);
  const earlier = turns().length; // the turn measured is the one after these
  const turn = () => turns()[earlier] || null;
  const answer = () => turn()?.querySelector("[data-testid=gmchat-answer]") || null;
  const checks = {
    paint: () => { const el = q("[data-testid=gmchat-input]"); return !!el && el.getClientRects().length > 0; },
    connected: () => { const el = q("[data-testid=gmchat-root]"); return !!el && el.hasAttribute("data-sync"); },
    turn: () => !!turn(),
    first: () => { const el = answer(); return !!el && el.textContent.trim().length > 0; },
    done: () => {
      const el = answer();
      return !!el && !turn().classList.contains("gmchat-running") && el.textContent.includes(last);
    },
  };
  const dom = {}, frame = {};
  return await new Promise((resolve, reject) => {
    let t0 = null, finished = false;
    const settle = () => {
      if (!finished && milestones.every((name) => name in frame)) {
        finished = true; observer.disconnect(); clearTimeout(timer); resolve({ dom, frame });
      }
    };
    const check = () => {
      if (t0 === null || finished) return;
      const now = performance.now();
      for (const name of milestones) {
        if (name in dom || !checks[name]()) continue;
        dom[name] = now - t0;
        requestAnimationFrame(() => setTimeout(() => { frame[name] = performance.now() - t0; settle(); }, 0));
      }
    };
    const observer = new MutationObserver(check);
    observer.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
    const timer = setTimeout(() => {
      finished = true; observer.disconnect();
      reject(new Error(`${action}: timed out with ${JSON.stringify(dom)}`));
    }, timeout);
    const everyFrame = () => { check(); if (!finished) requestAnimationFrame(everyFrame); };
    let start;
    if (action === "open-panel") {
      start = () => app.commands.execute("gmchat:open");
    } else if (action === "run-cell") {
      const notebook = app.shell.currentWidget.content;
      notebook.activeCellIndex = cell;
      notebook.deselectAll();
      start = () => app.commands.execute("notebook:run-cell");
    } else {
      const input = q("[data-testid=gmchat-input]");
      input.value = question;
      input.dispatchEvent(new Event("input"));
      const send = q("[data-testid=gmchat-send]");
      start = () => send.click();
    }
    t0 = performance.now();
    Promise.resolve(start()).catch(reject);
    check();
    requestAnimationFrame(everyFrame);
  });
}
"""
MILESTONES = {
    "paint": "first paint (input shown)",
    "connected": "connected (first snapshot shown)",
    "turn": "turn shown (after Send)",
    "first": "first answer character (after Send)",
    "done": "answer complete (after Send)",
}
LAST_WORDS = {"scripted": "omega.", "offline": ""}


def measure(page: Page, scope: str, action: str, milestones: list[str], **extra: Any) -> Any:
    spec = {"scope": scope, "action": action, "question": QUESTION, "cell": 2}
    spec.update(milestones=milestones, timeout=120_000)
    spec.update(extra)
    return page.evaluate(MEASURE, spec)


def one_view(page: Page, surface: str, last: str) -> dict[str, float]:
    """Open one surface, then ask; its milestones (ms) and the frames after them."""
    scope, action = (
        (PANEL_SCOPE, "open-panel") if surface == "panel" else (WIDGET_SCOPE, "run-cell")
    )
    shown = measure(page, scope, action, ["paint", "connected"], last=last)
    time.sleep(0.5)  # (let what the view started settle: the panel's journal follow, the comm)
    asked = measure(page, scope, "ask", ["turn", "first", "done"], last=last)
    result = {**shown["dom"], **asked["dom"]}
    result.update({f"{name}_frame": value for name, value in shown["frame"].items()})
    result.update({f"{name}_frame": value for name, value in asked["frame"].items()})
    return result


SETUP_CELL = """\
import gmchat_nb
from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider

# one turn in a throwaway chat first, as the server answered one before the runs
warm_up = Chat(provider={provider}, store=":memory:")
await warm_up.ask({question!r})
await warm_up.aclose()
chat = Chat(provider={provider}, store={store!r})
await chat.session()  # the demo project and the store, connected before the timed cell
print({done!r})
"""


def one_run(
    browser: Browser, lab: JupyterApp, index: int, provider: str, rounds: list[dict[str, Any]]
) -> dict[str, dict[str, float]]:
    """One fresh page: set-up (untimed), then the panel and the widget, in ``index``'s order."""
    kernel_provider = (
        f"ScriptedProvider({{'rounds': {rounds!r}}})" if provider == "scripted" else repr(provider)
    )
    store = str(lab.base / f"widget-{index}.sqlite3")
    setup = SETUP_CELL.format(
        provider=kernel_provider, store=store, question=QUESTION, done=SETUP_DONE
    )
    name = f"bench-{index}"
    write_notebook(lab.root / f"{name}.ipynb", f"# {name}", setup, "chat")
    lab.call("POST", "gmchat/chat/conversations/", {})  # the panel opens on the latest: empty
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        open_notebook(page, lab.lab_url(name, f"{name}.ipynb"))
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('gmchat:open')",
            timeout=60_000,
        )
        run_cell(page, 1)
        cell_output(page, 1).get_by_text(SETUP_DONE).wait_for(timeout=120_000)
        wait_for_kernel_idle(page)
        time.sleep(0.5)
        order = ("panel", "widget") if index % 2 == 0 else ("widget", "panel")
        results = {}
        for surface in order:
            results[surface] = one_view(page, surface, LAST_WORDS[provider])
            time.sleep(0.5)
        return results
    finally:
        context.close()
        lab.shutdown_kernels()


def median(runs: list[dict[str, dict[str, float]]], surface: str, key: str) -> float:
    return statistics.median(run[surface][key] for run in runs)


def report_times(runs_wanted: int, provider: str, delay: float) -> None:
    if CHROMIUM is None:
        print("\n## 2. Time to first paint and first character: skipped (no Chromium found)")
        return
    with tempfile.TemporaryDirectory(prefix="gmchat-bench-frontend-") as folder:
        rounds = scripted_rounds(delay)
        # (the one launcher of the browser tests: the checkout's labextension linked first, the
        # app exposed as window.jupyterapp, gmchat's server extension on the demo project)
        lab = JupyterApp(
            Path(folder), rounds=rounds, provider=None if provider == "scripted" else provider
        )
        try:
            # one untimed turn, so the server's first-turn costs (the project, the provider) are
            # not in the first run's numbers (the kernel's are paid in each run's set-up cell)
            lab.call("POST", "gmchat/chat/", {"text": QUESTION})
            with sync_playwright() as playwright:
                browser = launch_chromium(playwright)
                try:
                    runs = [one_run(browser, lab, i, provider, rounds) for i in range(runs_wanted)]
                finally:
                    browser.close()
        finally:
            lab.stop()
    what = (
        f"scripted provider: {len(ANSWER_CHUNKS)} chunks {delay * 1000:,.0f} ms apart, no tools"
        if provider == "scripted"
        else "offline provider: two tool steps on the demo project, then the answer"
    )
    print(
        f"\n## 2. Side panel against widget, one JupyterLab, medians of {len(runs)} runs "
        f"({what}; ms from the action, measured in the page)\n"
    )
    print("| milestone | side panel | widget | panel / widget |")
    print("|---|---:|---:|---:|")
    for key, label in MILESTONES.items():
        panel, widget = median(runs, "panel", key), median(runs, "widget", key)
        print(f"| {label} | {panel:,.1f} | {widget:,.1f} | {panel / widget:.2f}x |")
    for key in ("paint", "first"):
        panel, widget = (
            median(runs, "panel", f"{key}_frame"),
            median(runs, "widget", f"{key}_frame"),
        )
        print(f"| {MILESTONES[key]}, the frame after | {panel:,.1f} | {widget:,.1f} | "
              f"{panel / widget:.2f}x |")  # fmt: skip
    print("\n### Every run (ms; first paint / connected / first character)\n")
    print("| run | order | side panel | widget |")
    print("|---:|---|---|---|")
    for number, run in enumerate(runs, 1):
        cells = [
            " / ".join(f"{run[surface][key]:,.0f}" for key in ("paint", "connected", "first"))
            for surface in ("panel", "widget")
        ]
        order = "panel first" if (number - 1) % 2 == 0 else "widget first"
        print(f"| {number} | {order} | {cells[0]} | {cells[1]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="page loads, each timing both views")
    parser.add_argument("--provider", choices=("scripted", "offline"), default="scripted")
    parser.add_argument(
        "--chunk-delay", type=float, default=0.05, help="seconds between the scripted chunks"
    )
    parser.add_argument("--sizes-only", action="store_true", help="section 1 only")
    options = parser.parse_args()
    print("# gmchat_nb front-end benchmark\n")
    print(f"{describe()} (before)\n")
    report_sizes()
    if not options.sizes_only:
        report_times(options.runs, options.provider, options.chunk_delay)
    print(f"\nload average after: {load()}")


if __name__ == "__main__":
    main()
