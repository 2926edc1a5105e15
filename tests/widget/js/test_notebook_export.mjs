// Export as notebook in the view (frontend/src/notebook-export.ts, transport/server-notebook.ts):
// the file's name made from a conversation's title (the rule of gmchat_nb/chat_export.py's
// notebook_filename, which tests/widget/test_widget_export.py holds equal to this one), numbered
// names and the first free one; the side panel's exporter over a fetch that answers as the
// notebook route does (docs/server.md) and files that behave as JupyterLab's contents do; and in a
// ChatView: the header's button, the widget's `export_notebook` request and the kernel's answer,
// a host's exporter, and the status line, everything as text.
// Run: node tests/widget/js/test_notebook_export.mjs   (node >= 20, after `npm ci` in frontend/;
// exit code 1 on failure). It imports the built module, gmchat_nb/widget/static/chat.js.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CHAT_JS, newWindow } from "./dom.mjs";

const window = newWindow();
globalThis.window = window;
globalThis.document = window.document;

const {
  ChatView,
  FALLBACK_NAME,
  KernelNotebookExport,
  NAME_LENGTH,
  NOTHING_TO_EXPORT,
  NO_NOTEBOOK_ROUTE,
  dispositionName,
  exportText,
  firstFreeName,
  notebookExporter,
  notebookFileName,
  notebookRefusal,
  numberedName,
  pathIn,
} = await import(CHAT_JS.href);

const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const NOTEBOOK = { cells: [{ cell_type: "markdown", metadata: {}, source: "# Which parts?" }], metadata: {}, nbformat: 4, nbformat_minor: 5 };
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

// ------------------------------------------------------------------ names

test("a title becomes a file name that is safe anywhere", () => {
  assert.equal(notebookFileName("Which parts are made of titanium?"), "Which parts are made of titanium.ipynb");
  assert.equal(notebookFileName("Umsatz für Q3 — Übersicht"), "Umsatz für Q3 — Übersicht.ipynb"); // letters beyond ASCII stay
  assert.equal(notebookFileName("../../etc/passwd"), "etc passwd.ipynb"); // no folder, no hidden file
  assert.equal(notebookFileName('a\\b:c*d?e"f<g>h|i`j\'k'), "a b c d e f g h i j k.ipynb");
  assert.equal(notebookFileName("tab\there\nnew\u0000line\u0085next"), "tab here new line next.ipynb");
  assert.equal(notebookFileName("invoice\u202efdp.exe"), "invoice fdp.exe.ipynb"); // a bidi override cannot disguise it
  assert.equal(notebookFileName("zero\u200bwidth\u00a0space\u3000ideographic"), "zero width space ideographic.ipynb");
  assert.equal(notebookFileName("   ...trailing dots...  "), "trailing dots.ipynb");
  assert.equal(notebookFileName("lone \ud800 surrogate"), "lone surrogate.ipynb");
  assert.equal(notebookFileName("e\u0301"), "\u00e9.ipynb"); // NFC
  assert.equal(notebookFileName(HOSTILE), "img src=x onerror= window.__pwned=1.ipynb");
  for (const nothing of ["", "  ", "...", "???", "\u202e", null, undefined, 42, { title: "x" }]) {
    assert.equal(notebookFileName(nothing), `${FALLBACK_NAME}.ipynb`, JSON.stringify(nothing));
  }
  const long = notebookFileName("word ".repeat(40));
  assert.equal(long, `${"word ".repeat(16).trim()}.ipynb`);
  assert.ok(Array.from(long.replace(/\.ipynb$/, "")).length <= NAME_LENGTH);
  // characters, not UTF-16 units: 80 emoji stay whole
  assert.equal(notebookFileName("😀".repeat(100)), `${"😀".repeat(NAME_LENGTH)}.ipynb`);
  // a name it made is made again unchanged
  for (const title of ["Which parts are made of titanium?", "a  b", "x.y", "ü"]) {
    const stem = notebookFileName(title).replace(/\.ipynb$/, "");
    assert.equal(notebookFileName(stem), notebookFileName(title));
  }
});

test("numbered names count up before the extension, and the first free one is taken", async () => {
  assert.equal(numberedName("Parts.ipynb", 0), "Parts.ipynb");
  assert.equal(numberedName("Parts.ipynb", 1), "Parts 1.ipynb");
  assert.equal(numberedName("v1.2 parts.ipynb", 12), "v1.2 parts 12.ipynb");
  assert.equal(numberedName("Parts", 2), "Parts 2");
  const taken = new Set(["Parts.ipynb", "Parts 1.ipynb", "Parts 3.ipynb"]);
  const asked = [];
  const exists = async (name) => {
    asked.push(name);
    return taken.has(name);
  };
  assert.equal(await firstFreeName("Parts.ipynb", exists), "Parts 2.ipynb");
  assert.deepEqual(asked, ["Parts.ipynb", "Parts 1.ipynb", "Parts 2.ipynb"]);
  assert.equal(await firstFreeName("Other.ipynb", exists), "Other.ipynb");
  await assert.rejects(firstFreeName("Parts.ipynb", async () => true, 3), /Parts 1\.ipynb to Parts 2\.ipynb all exist/);
});

test("the route's Content-Disposition names the file; a folder in it is dropped", () => {
  assert.equal(dispositionName('attachment; filename="Which parts.ipynb"'), "Which parts.ipynb");
  assert.equal(
    dispositionName("attachment; filename=\"Umsatz f_r Q3.ipynb\"; filename*=UTF-8''Umsatz%20f%C3%BCr%20Q3.ipynb"),
    "Umsatz für Q3.ipynb",
  );
  assert.equal(dispositionName("attachment; filename=plain.ipynb"), "plain.ipynb");
  assert.equal(dispositionName('attachment; filename="../../x.ipynb"'), "x.ipynb");
  assert.equal(dispositionName("attachment; filename*=UTF-8''%E0%A4%A"), ""); // malformed escape
  assert.equal(dispositionName(null), "");
  assert.equal(dispositionName("inline"), "");
  assert.equal(pathIn("", "a.ipynb"), "a.ipynb");
  assert.equal(pathIn("work/sub/", "a.ipynb"), "work/sub/a.ipynb");
  assert.equal(pathIn("/work", "a.ipynb"), "work/a.ipynb");
});

test("the route's refusals read as what to do", () => {
  const unknown = { events: [{ type: "error", code: "bad_event", message: "Unknown conversation." }], answer: "" };
  assert.deepEqual(notebookRefusal(404, unknown), { code: "bad_event", message: "Unknown conversation." });
  assert.deepEqual(notebookRefusal(409, { error: "turn_in_progress", message: "A turn is running." }), {
    code: "turn_in_progress",
    message: "A turn is running.",
  });
  assert.deepEqual(notebookRefusal(404, null), { code: "unavailable", message: NO_NOTEBOOK_ROUTE }); // an older gmchat_nb
  assert.equal(notebookRefusal(403, null).code, "forbidden");
  assert.equal(notebookRefusal(500, "<html>").code, "http_500");
  assert.equal(exportText({ path: "work/a.ipynb" }), "Exported to work/a.ipynb");
  assert.equal(exportText({ error: { code: "empty", message: "No turn yet." } }), "Export failed: No turn yet. (empty)");
});

// ------------------------------------------------------------------ the side panel's exporter

/** A fetch that answers the notebook route, recording what was asked. */
function notebookRoute(answer) {
  const asked = [];
  const fetcher = async (path, init) => {
    asked.push({ path, method: init?.method });
    if (answer instanceof Error) throw answer;
    return typeof answer === "function" ? answer(path) : answer;
  };
  return { fetcher, asked };
}

function notebookResponse(filename = "Which parts.ipynb", body = NOTEBOOK) {
  return new Response(JSON.stringify(body), {
    status: 200,
    headers: { "Content-Type": "application/x-ipynb+json", "Content-Disposition": `attachment; filename="${filename}"` },
  });
}

/** Files as JupyterLab's contents keep them: a map of path -> notebook. */
function contents(folder = "work", existing = {}) {
  const files = new Map(Object.entries(existing));
  const opened = [];
  return {
    files,
    opened,
    folder: () => folder,
    exists: async (path) => files.has(path),
    save: async (path, notebook) => {
      files.set(path, notebook);
    },
    open: async (path) => {
      opened.push(path);
    },
  };
}

test("the panel writes the notebook beside the active one under a free name, then opens it", async () => {
  const route = notebookRoute(() => notebookResponse());
  const files = contents("work", { "work/Which parts.ipynb": { mine: true } });
  const exporter = notebookExporter(route.fetcher, files);

  const first = await exporter({ conversationId: "c/1 ?", title: "ignored when the route names it" });
  assert.deepEqual(first, { path: "work/Which parts 1.ipynb" });
  assert.deepEqual(route.asked, [{ path: "conversations/c%2F1%20%3F/notebook", method: "GET" }]);
  assert.deepEqual(files.files.get("work/Which parts 1.ipynb"), NOTEBOOK);
  assert.deepEqual(files.files.get("work/Which parts.ipynb"), { mine: true }); // never written over
  assert.deepEqual(files.opened, ["work/Which parts 1.ipynb"]);

  const second = await exporter({ conversationId: "c1", title: "" });
  assert.deepEqual(second, { path: "work/Which parts 2.ipynb" });
  assert.deepEqual(files.files.get("work/Which parts 1.ipynb"), NOTEBOOK);

  // at the root, a route without a filename: the view's title names it
  const bare = notebookRoute(() => new Response(JSON.stringify(NOTEBOOK), { status: 200 }));
  const root = contents("");
  assert.deepEqual(await notebookExporter(bare.fetcher, root)({ conversationId: "c1", title: "Steel: parts?" }), { path: "Steel parts.ipynb" });
  // a hostile filename is made safe again
  const hostile = notebookRoute(() => notebookResponse("../../<script>x.ipynb"));
  const safe = await notebookExporter(hostile.fetcher, contents("work"))({ conversationId: "c1", title: "" });
  assert.equal(safe.path, "work/script x.ipynb"); // (the part after the last slash, made safe)
});

test("what the panel cannot export says why, and nothing is written", async () => {
  const files = contents("work");
  const outcome = async (answer, target = { conversationId: "c1", title: "t" }) => notebookExporter(notebookRoute(answer).fetcher, files)(target);

  assert.deepEqual(await outcome(notebookResponse(), { conversationId: null, title: "" }), { error: { code: "empty", message: NOTHING_TO_EXPORT } });
  const unknown = new Response(JSON.stringify({ events: [{ type: "error", code: "bad_event", message: "Unknown conversation." }], answer: "" }), { status: 404 });
  assert.deepEqual(await outcome(unknown), { error: { code: "bad_event", message: "Unknown conversation." } });
  const empty = new Response(JSON.stringify({ events: [{ type: "error", code: "bad_event", message: "Nothing to export: no turn has finished." }] }), { status: 409 });
  assert.equal((await outcome(empty)).error.message, "Nothing to export: no turn has finished.");
  assert.deepEqual(await outcome(new Response("<html>404</html>", { status: 404 })), { error: { code: "unavailable", message: NO_NOTEBOOK_ROUTE } });
  const down = await outcome(new TypeError("Failed to fetch"));
  assert.equal(down.error.code, "unavailable");
  assert.match(down.error.message, /Could not reach the Jupyter server: Failed to fetch/);
  const notNotebook = await outcome(new Response(JSON.stringify({ cells: "no" }), { status: 200 }));
  assert.match(notNotebook.error.message, /not a notebook/);
  assert.equal(files.files.size, 0);
  assert.deepEqual(files.opened, []);

  const readOnly = { ...contents("work"), save: async () => Promise.reject(new Error("Permission denied: work/t.ipynb")) };
  const refused = await notebookExporter(notebookRoute(notebookResponse("t.ipynb")).fetcher, readOnly)({ conversationId: "c1", title: "t" });
  assert.deepEqual(refused, { error: { code: "not_written", message: "Could not write work/t.ipynb: Permission denied: work/t.ipynb" } });
  const unreadable = { ...contents("work"), exists: async () => Promise.reject(new Error("Forbidden")) };
  const blind = await notebookExporter(notebookRoute(notebookResponse("t.ipynb")).fetcher, unreadable)({ conversationId: "c1", title: "t" });
  assert.equal(blind.error.code, "not_written");
  const noOpener = { ...contents("work"), open: async () => Promise.reject(new Error("Command 'docmanager:open' not registered.")) };
  const closed = await notebookExporter(notebookRoute(notebookResponse("t.ipynb")).fetcher, noOpener)({ conversationId: "c1", title: "t" });
  assert.equal(closed.error.code, "not_opened");
  assert.match(closed.error.message, /written to work\/t\.ipynb but could not be opened/);
});

// ------------------------------------------------------------------ in a ChatView

class FakeTransport {
  constructor() {
    this.sent = [];
    this.listeners = new Set();
  }
  storageKey() {
    return null;
  }
  send(msg) {
    if (this.broken && msg.type === "export_notebook") throw new Error("the comm is closed");
    this.sent.push(msg);
  }
  onMessage(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  emit(msg) {
    for (const listener of this.listeners) listener(msg);
  }
  exports() {
    return this.sent.filter((msg) => msg.type === "export_notebook");
  }
}

function mount(options = {}) {
  const transport = new FakeTransport();
  const host = document.createElement("div");
  document.body.append(host);
  const view = new ChatView(transport, host, options);
  const q = (id) => view.root.querySelector(`[data-testid=${id}]`);
  return { transport, view, q };
}

const SNAPSHOT = {
  type: "snapshot",
  turns: [{ index: 0, question: "Which parts?", answer: "Two.", events: [], running: false }],
  busy: false,
  conversation_id: "c1",
  conversations: { items: [{ id: "c1", title: "Which parts?", messages: 2 }], current: "c1" },
};

test("the widget asks its kernel, and shows where the notebook went as text", async () => {
  const { transport, view, q } = mount();
  const button = q("gmchat-export");
  const status = q("gmchat-export-status");
  assert.equal(button.textContent, "Export as notebook");
  assert.equal(status.hidden, true);

  // the kernel decides what there is to export (a view learns its conversation only from a
  // snapshot: after a first turn it may still hold none)
  button.click();
  await tick();
  const [early] = transport.exports();
  transport.emit({ type: "notebook_exported", request: early.request, error: { code: "not_found", message: "This chat has no conversation yet: ask first." } });
  await tick();
  assert.equal(status.textContent, "Export failed: This chat has no conversation yet: ask first. (not_found)");

  transport.emit(SNAPSHOT);
  button.click();
  await tick();
  const asked = transport.exports()[1];
  assert.equal(typeof asked.request, "string");
  assert.equal(status.textContent, "Exporting\u2026");
  assert.equal(button.disabled, true);
  button.click(); // (one export at a time)
  assert.equal(transport.exports().length, 2);

  transport.emit({ type: "notebook_exported", request: "someone else's", path: "/elsewhere.ipynb" }); // not this one
  await tick();
  assert.equal(status.textContent, "Exporting\u2026");
  const path = `/home/me/${HOSTILE}.ipynb`;
  transport.emit({ type: "notebook_exported", request: asked.request, path });
  await tick();
  assert.equal(status.textContent, `Exported to ${path}`);
  assert.equal(status.getAttribute("data-state"), "done");
  assert.equal(status.children.length, 0); // text only: the path made no element
  assert.equal(button.disabled, false);

  button.click();
  await tick();
  const again = transport.exports()[2];
  transport.emit({ type: "notebook_exported", request: again.request, error: { code: "not_written", message: "Could not write /ro/x.ipynb: Read-only file system" } });
  await tick();
  assert.equal(status.textContent, "Export failed: Could not write /ro/x.ipynb: Read-only file system (not_written)");
  assert.equal(status.getAttribute("data-state"), "error");
  view.dispose();
});

test("a kernel that does not answer, or cannot be reached, is said so", async () => {
  const silent = new KernelNotebookExport(() => undefined, 20);
  const late = await silent.export({ conversationId: "c1", title: "" });
  assert.equal(late.error.code, "no_answer");
  const broken = new KernelNotebookExport(() => {
    throw new Error("the comm is closed");
  });
  const refused = await broken.export({ conversationId: "c1", title: "" });
  assert.equal(refused.error.code, "unavailable");
  assert.match(refused.error.message, /the comm is closed/);
  // an answer without a path is not taken for success
  const odd = new KernelNotebookExport((msg) => queueMicrotask(() => odd.receive({ type: "notebook_exported", request: msg.request })));
  assert.equal((await odd.export({ conversationId: "c1", title: "" })).error.code, "failed");
  // a view closed while it waits answers its export
  const { transport, view, q } = mount();
  transport.emit(SNAPSHOT);
  q("gmchat-export").click();
  view.dispose();
  await tick();
  assert.match(q("gmchat-export-status").textContent, /The view was closed/);
});

test("a host's exporter writes instead of the kernel, given the conversation and its title", async () => {
  const targets = [];
  const { transport, view, q } = mount({
    exportNotebook: async (target) => {
      targets.push(target);
      return { path: "work/Which parts.ipynb" };
    },
  });
  transport.emit(SNAPSHOT);
  q("gmchat-export").click();
  await tick();
  await tick();
  assert.deepEqual(targets, [{ conversationId: "c1", title: "Which parts?" }]);
  assert.deepEqual(transport.exports(), []); // nothing goes to a kernel
  assert.equal(q("gmchat-export-status").textContent, "Exported to work/Which parts.ipynb");
  view.dispose();

  const failing = mount({
    exportNotebook: async () => {
      throw new Error("unexpected");
    },
  });
  failing.transport.emit(SNAPSHOT);
  failing.q("gmchat-export").click();
  await tick();
  await tick();
  assert.equal(failing.q("gmchat-export-status").textContent, "Export failed: unexpected (failed)");
  failing.view.dispose();
});
