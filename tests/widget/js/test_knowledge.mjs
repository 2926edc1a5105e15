// Knowledge in the view (frontend/src/knowledge.ts, knowledge-forms.ts, knowledge-view.ts,
// transport/server-knowledge.ts): the recall step's text, the trusted label, which turns offer
// Save as verified query, and in a ChatView over a transport that records what it sends: the
// recall step and "Verified query: <name>" rendered as text, the save form's flagged/duplicate
// answers, and the knowledge view listing, searching, editing, deleting and accepting; then the
// side panel's requests over HTTP (a fetch that answers as the server's routes do).
// Run: node tests/widget/js/test_knowledge.mjs   (node >= 20, after `npm ci` in frontend/;
// exit code 1 on failure). It imports the built module, gmchat_nb/widget/static/chat.js.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CHAT_JS, newWindow } from "./dom.mjs";

const window = newWindow();
globalThis.window = window;
globalThis.document = window.document;

const {
  ChatView,
  KnowledgeClient,
  defaultName,
  knowledgeOverHttp,
  ranQuery,
  recallItems,
  recallSummary,
  refusalOf,
  scoreText,
  trustedLabel,
} = await import(CHAT_JS.href);

const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

// ------------------------------------------------------------------ pure helpers

test("the recall step says what was recalled, kind by kind, in a fixed order", () => {
  const vq = { kind: "verified_query", id: "k1", name: "titanium parts", score: 0.0328 };
  const definition = { kind: "definition", id: "k2", name: "active project", score: 0.02 };
  assert.equal(recallSummary([]), "Nothing recalled");
  assert.equal(recallSummary(recallItems([vq])), "Recalled 1 verified query");
  assert.equal(recallSummary(recallItems([definition, vq, { ...vq, id: "k3" }])), "Recalled 2 verified queries, 1 definition");
  assert.equal(
    recallSummary(recallItems([{ kind: "note", id: "n1", name: "EUR" }, { kind: "note", id: "n2" }, definition])),
    "Recalled 1 definition, 2 notes",
  );
  assert.equal(recallSummary(recallItems([{ kind: "future_kind", id: "x" }])), "Recalled 1 entry");
  // what is not an item is left out; a missing score shows nothing
  assert.deepEqual(recallItems([null, "x", 3, vq]).map((item) => item.id), ["k1"]);
  assert.deepEqual(recallItems("not a list"), []);
  assert.equal(scoreText(0.03276), "0.033");
  assert.equal(scoreText(undefined), "");
  assert.equal(scoreText(Number.NaN), "");
});

test("a trusted answer is labelled with its verified query's name, and only then", () => {
  assert.equal(trustedLabel({ id: "k1", name: "titanium parts" }), "Verified query: titanium parts");
  assert.equal(trustedLabel({ id: "k1", name: "  spaced  " }), "Verified query: spaced");
  for (const absent of [undefined, null, {}, { id: "k1" }, { name: "" }, { name: 3 }, "titanium parts", ["x"]]) {
    assert.equal(trustedLabel(absent), null, JSON.stringify(absent));
  }
});

test("a turn offers Save as verified query only when a query returned data", () => {
  const call = (id, name = "query") => ({ type: "tool_call", id, name, args: { manager: "Part" } });
  const result = (id, result, name = "query") => ({ type: "tool_result", id, name, result });
  assert.equal(ranQuery([call("q1"), result("q1", { rows: 3, total_count: 3 })]), true);
  assert.equal(ranQuery([call("q1"), result("q1", { status: "error", code: "unknown_field", message: "no" })]), false);
  assert.equal(ranQuery([call("q1"), result("q1", { status: "cancelled" })]), false);
  assert.equal(ranQuery([call("s1", "search_managers"), result("s1", [], "search_managers")]), false);
  assert.equal(ranQuery([result("q9", { rows: 1 })]), false); // a result without its call
  assert.equal(ranQuery([{ type: "text_chunk", content: "Hi" }]), false);
});

test("a saved query's name starts from the question's first words", () => {
  assert.equal(defaultName("Which parts are made of titanium?"), "Which parts are made of titanium");
  assert.equal(defaultName("  many   spaces\there "), "many spaces here");
  const long = defaultName("word ".repeat(40));
  assert.ok(long.length <= 61 && long.endsWith("\u2026"), long);
});

test("a knowledge request without an answer, or that cannot be sent, gets one that says so", async () => {
  const silent = new KnowledgeClient(() => undefined, 20);
  const late = await silent.ask({ type: "knowledge_list" });
  assert.equal(late.error.code, "no_answer");
  const broken = new KnowledgeClient(() => {
    throw new Error("the comm is closed");
  });
  const refused = await broken.ask({ type: "knowledge_list" });
  assert.equal(refused.error.code, "unavailable");
  assert.match(refused.error.message, /the comm is closed/);
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
    this.sent.push(msg);
  }
  onMessage(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  emit(msg) {
    for (const listener of this.listeners) listener(msg);
  }
  /** The last knowledge request of `type` sent. */
  last(type) {
    const found = this.sent.filter((msg) => msg.type === type);
    assert.ok(found.length, `no ${type} was sent: ${JSON.stringify(this.sent.map((m) => m.type))}`);
    return found[found.length - 1];
  }
  /** Answer the last request of `type`. */
  answer(type, fields) {
    this.emit({ type: "knowledge", request: this.last(type).request, ...fields });
  }
}

function newView() {
  const transport = new FakeTransport();
  const host = document.createElement("div");
  document.body.append(host);
  const view = new ChatView(transport, host);
  const q = (id, root = view.root) => root.querySelector(`[data-testid=${id}]`);
  const qa = (id, root = view.root) => [...root.querySelectorAll(`[data-testid=${id}]`)];
  return { transport, view, q, qa };
}

/** A finished turn that ran a query, recalled `items` and (maybe) re-ran a verified query. */
function answeredTurn(index, { items, trusted, query = true } = {}) {
  const events = [];
  if (items) events.push({ type: "recall", items, sequence: 1 });
  if (query) {
    events.push({ type: "tool_call", id: "q1", name: "query", args: { manager: "Part", fields: ["name"] }, sequence: 2 });
    events.push({ type: "tool_result", id: "q1", name: "query", result: { rows: 5, total_count: 5, complete: true }, sequence: 3 });
  }
  events.push({ type: "text_chunk", content: "Five parts.", sequence: 4 });
  const done = { type: "done", usage: { input_tokens: 0, output_tokens: 0 }, sequence: 5 };
  if (trusted !== undefined) done.trusted = trusted;
  events.push(done);
  return { index, question: "Which parts are made of titanium?", events, answer: "Five parts.", running: false };
}

test("the recall step opens to the entries, and a trusted answer says which verified query it re-ran", () => {
  const { transport, view, q, qa } = newView();
  const items = [
    { kind: "verified_query", id: "k1", name: "titanium parts", score: 0.0328 },
    { kind: "definition", id: "k2", name: HOSTILE, score: 0.016 },
  ];
  transport.emit({ type: "snapshot", turns: [answeredTurn(0, { items, trusted: { id: "k1", name: "titanium parts" } })], busy: false, conversation_id: "c1" });
  const recall = q("gmchat-recall");
  assert.equal(recall.tagName, "DETAILS");
  assert.equal(recall.open, false);
  assert.equal(q("gmchat-recall-summary").textContent, "Recalled 1 verified query, 1 definition");
  const entries = qa("gmchat-recall-item");
  assert.deepEqual(
    entries.map((li) => [li.getAttribute("data-kind"), li.querySelector("[data-testid=gmchat-recall-name]").textContent]),
    [
      ["verified_query", "titanium parts"],
      ["definition", HOSTILE],
    ],
  );
  assert.match(entries[0].textContent, /^Verified query.*titanium parts.*0\.033$/);
  assert.equal(view.root.querySelector("img"), null, "a recalled name is text, never markup");
  // the recall step comes first among the steps, before the query's card
  assert.equal(recall.parentElement.firstElementChild, recall);
  assert.equal(q("gmchat-trusted").textContent, "Verified query: titanium parts");
  view.dispose();
});

test("an empty recall says nothing was recalled; no recall event, no step; no trusted, no label", () => {
  const { transport, view, q, qa } = newView();
  transport.emit({
    type: "snapshot",
    turns: [answeredTurn(0, { items: [] }), { ...answeredTurn(1), question: "Second?" }],
    busy: false,
    conversation_id: "c1",
  });
  const steps = qa("gmchat-recall");
  assert.equal(steps.length, 1, "the turn without a recall event has no recall step");
  assert.equal(steps[0].textContent, "Nothing recalled");
  assert.equal(steps[0].getAttribute("data-count"), "0");
  assert.equal(q("gmchat-trusted"), null);
  view.dispose();
});

test("live events: the recall step and the trusted label arrive with their events", () => {
  const { transport, view, q } = newView();
  transport.emit({ type: "snapshot", turns: [], busy: false, conversation_id: "c1" });
  transport.emit({ type: "turn_start", turn: { index: 0, question: "Titanium?", running: true } });
  transport.emit({ type: "events", turn: 0, events: [{ type: "recall", items: [{ kind: "verified_query", id: "k1", name: "titanium parts", score: 0.03 }], sequence: 1 }] });
  assert.equal(q("gmchat-recall-summary").textContent, "Recalled 1 verified query");
  assert.equal(q("gmchat-save-query"), null, "a running turn offers no save");
  transport.emit({ type: "events", turn: 0, events: [{ type: "done", usage: {}, trusted: { id: "k1", name: "titanium parts" }, sequence: 2 }] });
  assert.equal(q("gmchat-trusted").textContent, "Verified query: titanium parts");
  view.dispose();
});

test("Save as verified query: a form, a flagged entry confirmed, a duplicate named, then saved", async () => {
  const { transport, view, q } = newView();
  transport.emit({ type: "snapshot", turns: [answeredTurn(0), { ...answeredTurn(1, { query: false }), question: "Hello?" }], busy: false, conversation_id: "c1" });
  const turns = view.root.querySelectorAll("[data-testid=gmchat-turn]");
  assert.equal(turns[1].querySelector("[data-testid=gmchat-save-query]"), null, "a turn without a query offers no save");
  const save = turns[0].querySelector("[data-testid=gmchat-save-query]");
  assert.equal(save.textContent, "Save as verified query");
  save.click();
  const form = q("gmchat-knowledge-form", turns[0]);
  assert.equal(form.getAttribute("aria-label"), "Save as verified query");
  assert.equal(q("gmchat-knowledge-name", form).value, "Which parts are made of titanium");
  assert.equal(q("gmchat-knowledge-question", form).value, "Which parts are made of titanium?");
  assert.equal(q("gmchat-knowledge-scope", form).value, "shared");

  // an empty name is refused here, before anything is sent
  q("gmchat-knowledge-name", form).value = "  ";
  q("gmchat-knowledge-save", form).click();
  assert.equal(q("gmchat-knowledge-error", form).textContent, "Name is empty.");
  assert.equal(transport.sent.filter((m) => m.type === "knowledge_save_turn").length, 0);

  q("gmchat-knowledge-name", form).value = "titanium parts";
  q("gmchat-knowledge-question", form).value = "Which parts are titanium?";
  q("gmchat-knowledge-scope", form).value = "personal";
  q("gmchat-knowledge-save", form).click();
  const first = transport.last("knowledge_save_turn");
  assert.deepEqual({ ...first, request: "…" }, {
    type: "knowledge_save_turn",
    request: "…",
    turn: 0,
    name: "titanium parts",
    question: "Which parts are titanium?",
    scope: "personal",
    confirm_flagged: false,
  });
  assert.equal(q("gmchat-knowledge-status", form).textContent, "Saving\u2026");

  // flagged: the person confirms, and the same values go again with confirm_flagged
  transport.answer("knowledge_save_turn", { error: { code: "flagged", message: "The question reads like instructions to the assistant." } });
  await tick();
  assert.match(q("gmchat-knowledge-error", form).textContent, /reads like instructions/);
  assert.equal(q("gmchat-knowledge-error", form).getAttribute("data-code"), "flagged");
  q("gmchat-knowledge-confirm", form).click();
  const second = transport.last("knowledge_save_turn");
  assert.notEqual(second.request, first.request);
  assert.equal(second.confirm_flagged, true);
  assert.equal(second.name, "titanium parts");

  // a duplicate: the message names the entry that has the same content
  transport.answer("knowledge_save_turn", { error: { code: "duplicate", message: "the same verified query is already stored as 'titanium' (k-1)", existing: "k-1" } });
  await tick();
  assert.equal(q("gmchat-knowledge-error", form).textContent, "the same verified query is already stored as 'titanium' (k-1)");
  assert.equal(q("gmchat-knowledge-error", form).getAttribute("data-code"), "duplicate");
  assert.equal(q("gmchat-knowledge-confirm", form), null);

  // saved
  q("gmchat-knowledge-save", form).click();
  transport.answer("knowledge_save_turn", { entry: { id: "k-2", kind: "verified_query", name: HOSTILE, status: "active", scope: "personal" } });
  await tick();
  assert.equal(q("gmchat-knowledge-saved", turns[0]).textContent, `Saved as verified query: ${HOSTILE}`);
  assert.equal(q("gmchat-knowledge-form", turns[0]), null);
  assert.equal(view.root.querySelector("img"), null);
  view.dispose();
});

test("Cancel closes the save form and brings the button back", () => {
  const { transport, view, q } = newView();
  transport.emit({ type: "snapshot", turns: [answeredTurn(0)], busy: false, conversation_id: "c1" });
  q("gmchat-save-query").click();
  q("gmchat-knowledge-cancel").click();
  assert.equal(q("gmchat-knowledge-form"), null);
  assert.equal(q("gmchat-save-query").textContent, "Save as verified query");
  view.dispose();
});

const ENTRIES = [
  { id: "k1", kind: "verified_query", name: "titanium parts", status: "active", scope: "shared", question: "Which parts are titanium?", calls: [] },
  { id: "k2", kind: "definition", name: "active project", term: "active project", status: "suggested", scope: "personal", text: HOSTILE },
  { id: "k3", kind: "note", name: "amounts in EUR", status: "active", scope: "personal", text: "amounts in EUR" },
];

test("the knowledge view lists, searches, edits, deletes and accepts", async () => {
  const { transport, view, q, qa } = newView();
  transport.emit({ type: "snapshot", turns: [], busy: false, conversation_id: "c1" });
  const toggle = q("gmchat-knowledge-toggle");
  const drawer = q("gmchat-knowledge");
  assert.equal(drawer.hidden, true);
  toggle.click();
  assert.equal(drawer.hidden, false);
  assert.equal(toggle.getAttribute("aria-expanded"), "true");
  assert.deepEqual({ ...transport.last("knowledge_list"), request: "…" }, { type: "knowledge_list", request: "…" });
  transport.answer("knowledge_list", { items: ENTRIES });
  await tick();
  const rows = () => qa("gmchat-knowledge-entry");
  assert.deepEqual(
    rows().map((row) => [
      q("gmchat-knowledge-entry-kind", row).textContent,
      q("gmchat-knowledge-entry-name", row).textContent,
      q("gmchat-knowledge-entry-status", row).textContent,
      q("gmchat-knowledge-entry-scope", row).textContent,
    ]),
    [
      ["Verified query", "titanium parts", "active", "shared"],
      ["Definition", "active project", "suggested", "personal"],
      ["Note", "amounts in EUR", "active", "personal"],
    ],
  );
  assert.equal(q("gmchat-knowledge-list-status").textContent, "3 entries");
  assert.ok(rows()[1].textContent.includes(HOSTILE));
  assert.equal(view.root.querySelector("img"), null, "an entry's text is text, never markup");
  assert.equal(qa("gmchat-knowledge-accept").length, 1, "only the suggestion can be accepted");

  // search: asked once the typing stops, with the words typed; an older answer is dropped
  const search = q("gmchat-knowledge-search");
  search.value = "titanium";
  search.dispatchEvent(new window.Event("input"));
  await new Promise((resolve) => setTimeout(resolve, 320));
  assert.equal(transport.last("knowledge_list").search, "titanium");
  transport.answer("knowledge_list", { items: [] });
  await tick();
  assert.equal(q("gmchat-knowledge-list-status").textContent, "Nothing matches \u201ctitanium\u201d.");
  search.value = "";
  search.dispatchEvent(new window.Event("input"));
  await new Promise((resolve) => setTimeout(resolve, 320));
  transport.answer("knowledge_list", { items: ENTRIES });
  await tick();

  // edit a verified query's name and question
  q("gmchat-knowledge-edit", rows()[0]).click();
  const form = q("gmchat-knowledge-form", rows()[0]);
  assert.equal(q("gmchat-knowledge-name", form).value, "titanium parts");
  assert.equal(q("gmchat-knowledge-question", form).value, "Which parts are titanium?");
  q("gmchat-knowledge-name", form).value = "titanium parts (all)";
  q("gmchat-knowledge-save", form).click();
  const update = transport.last("knowledge_update");
  assert.deepEqual({ ...update, request: "…" }, {
    type: "knowledge_update",
    request: "…",
    entry_id: "k1",
    name: "titanium parts (all)",
    question: "Which parts are titanium?",
    confirm_flagged: false,
  });
  const listsBefore = transport.sent.filter((m) => m.type === "knowledge_list").length;
  transport.answer("knowledge_update", { entry: { ...ENTRIES[0], name: "titanium parts (all)" } });
  await tick();
  assert.equal(transport.sent.filter((m) => m.type === "knowledge_list").length, listsBefore + 1, "a write lists again");
  transport.answer("knowledge_list", { items: [{ ...ENTRIES[0], name: "titanium parts (all)" }, ENTRIES[1], ENTRIES[2]] });
  await tick();
  assert.equal(q("gmchat-knowledge-entry-name", rows()[0]).textContent, "titanium parts (all)");

  // a definition is edited by term and meaning
  q("gmchat-knowledge-edit", rows()[1]).click();
  const definition = q("gmchat-knowledge-form", rows()[1]);
  assert.equal(q("gmchat-knowledge-term", definition).value, "active project");
  assert.equal(q("gmchat-knowledge-text", definition).value, HOSTILE);
  q("gmchat-knowledge-cancel", definition).click();

  // accept the suggestion
  q("gmchat-knowledge-accept", rows()[1]).click();
  assert.equal(transport.last("knowledge_accept").entry_id, "k2");
  transport.answer("knowledge_accept", { error: { code: "forbidden", message: "You may not write shared entries of this project." } });
  await tick();
  assert.match(rows()[1].textContent, /You may not write shared entries/);

  // delete asks once more, inline; Keep keeps it
  q("gmchat-knowledge-delete", rows()[2]).click();
  assert.match(q("gmchat-knowledge-delete-question", rows()[2]).textContent, /^Delete \u201camounts in EUR\u201d\?/);
  q("gmchat-knowledge-delete-keep", rows()[2]).click();
  assert.equal(q("gmchat-knowledge-delete-question", rows()[2]), null);
  assert.equal(transport.sent.filter((m) => m.type === "knowledge_remove").length, 0);
  q("gmchat-knowledge-delete", rows()[2]).click();
  q("gmchat-knowledge-delete-confirm", rows()[2]).click();
  assert.equal(transport.last("knowledge_remove").entry_id, "k3");
  transport.answer("knowledge_remove", { removed: "k3" });
  await tick();
  transport.answer("knowledge_list", { items: ENTRIES.slice(0, 2) });
  await tick();
  assert.equal(rows().length, 2);

  // add a definition
  q("gmchat-knowledge-add-definition").click();
  const add = q("gmchat-knowledge-form", drawer);
  q("gmchat-knowledge-term", add).value = "revenue";
  q("gmchat-knowledge-text", add).value = "excludes tax";
  q("gmchat-knowledge-save", add).click();
  assert.deepEqual({ ...transport.last("knowledge_add"), request: "…" }, {
    type: "knowledge_add",
    request: "…",
    kind: "definition",
    term: "revenue",
    text: "excludes tax",
    confirm_flagged: false,
  });
  transport.answer("knowledge_add", { entry: { id: "k4", kind: "definition", name: "revenue" } });
  await tick();
  assert.equal(q("gmchat-knowledge-form", drawer), null, "the form closes once the entry is added");

  // a refused list says why
  transport.answer("knowledge_list", { error: { code: "unavailable", message: "No knowledge routes." } });
  await tick();
  assert.equal(q("gmchat-knowledge-list-status").textContent, "No knowledge routes.");

  q("gmchat-knowledge-close").click();
  assert.equal(drawer.hidden, true);
  assert.equal(toggle.getAttribute("aria-expanded"), "false");
  view.dispose();
});

// ------------------------------------------------------------------ over HTTP (the side panel)

/** A fetch that records its calls and answers with `respond(path, init)`'s [status, body]. */
function fakeFetch(respond) {
  const calls = [];
  const fetcher = async (path, init = {}) => {
    calls.push({ path, method: init.method ?? "GET", body: init.body ? JSON.parse(init.body) : undefined });
    const [status, body] = respond(path, init);
    const text = body === undefined ? null : typeof body === "string" ? body : JSON.stringify(body);
    return new Response(text, { status });
  };
  return { calls, fetcher };
}

test("the side panel's knowledge requests go to the contract's routes", async () => {
  const entry = { id: "k1", kind: "verified_query", name: "titanium parts" };
  const { calls, fetcher } = fakeFetch((path, init) => {
    if (init.method === "DELETE") return [204, undefined];
    if (path.startsWith("knowledge/?") || path === "knowledge/") return init.method === "POST" ? [201, entry] : [200, { items: [entry] }];
    return [path.endsWith("from-turn") ? 201 : 200, entry];
  });
  const locate = (index) => (index === 0 ? { conversationId: "c 1", turnId: "t-1" } : null);
  const listed = await knowledgeOverHttp(fetcher, { type: "knowledge_list", request: "r1", search: "titan ium?", kind: "" }, locate);
  assert.deepEqual(listed, { type: "knowledge", request: "r1", items: [entry] });
  assert.equal(calls.at(-1).path, "knowledge/?search=titan+ium%3F");

  const saved = await knowledgeOverHttp(fetcher, { type: "knowledge_save_turn", request: "r2", turn: 0, name: "titanium parts", question: "Q?", scope: "shared", confirm_flagged: false }, locate);
  assert.deepEqual(saved, { type: "knowledge", request: "r2", entry });
  assert.deepEqual(calls.at(-1), {
    path: "knowledge/from-turn",
    method: "POST",
    body: { conversation_id: "c 1", turn_id: "t-1", name: "titanium parts", question: "Q?", scope: "shared", confirm_flagged: false },
  });
  const unknownTurn = await knowledgeOverHttp(fetcher, { type: "knowledge_save_turn", request: "r3", turn: 7, name: "x" }, locate);
  assert.equal(unknownTurn.error.code, "not_found");

  await knowledgeOverHttp(fetcher, { type: "knowledge_add", request: "r4", kind: "definition", term: "revenue", text: "excludes tax" }, locate);
  assert.deepEqual(calls.at(-1), { path: "knowledge/", method: "POST", body: { kind: "definition", term: "revenue", text: "excludes tax" } });
  await knowledgeOverHttp(fetcher, { type: "knowledge_update", request: "r5", entry_id: "k/1", name: "n", question: "q" }, locate);
  assert.deepEqual(calls.at(-1), { path: "knowledge/k%2F1", method: "PATCH", body: { name: "n", question: "q" } });
  const removed = await knowledgeOverHttp(fetcher, { type: "knowledge_remove", request: "r6", entry_id: "k1" }, locate);
  assert.deepEqual(removed, { type: "knowledge", request: "r6", removed: "k1" });
  assert.deepEqual(calls.at(-1), { path: "knowledge/k1", method: "DELETE", body: undefined });
  await knowledgeOverHttp(fetcher, { type: "knowledge_accept", request: "r7", entry_id: "k2" }, locate);
  assert.deepEqual(calls.at(-1), { path: "knowledge/k2/accept", method: "POST", body: {} });
});

test("the server's refusals reach the form as they are; a missing route or network says so", async () => {
  const duplicate = { type: "error", code: "duplicate", message: "the same verified query is already stored as 'titanium parts' (k1)", existing: "k1" };
  const { fetcher } = fakeFetch(() => [409, duplicate]);
  const answer = await knowledgeOverHttp(fetcher, { type: "knowledge_add", request: "r", kind: "note", text: "EUR" }, () => null);
  assert.deepEqual(answer.error, { code: "duplicate", message: duplicate.message, existing: "k1" });
  assert.deepEqual(refusalOf(409, { type: "error", code: "flagged", message: "Flagged." }), { code: "flagged", message: "Flagged." });
  assert.equal(refusalOf(404, null).code, "unavailable");
  assert.match(refusalOf(404, null).message, /no knowledge routes/);
  assert.equal(refusalOf(404, { type: "error", code: "not_found", message: "no knowledge entry 'x'" }).code, "not_found");
  assert.equal(refusalOf(500, null).code, "http_500");
  const down = await knowledgeOverHttp(
    async () => {
      throw new TypeError("Failed to fetch");
    },
    { type: "knowledge_list", request: "r" },
    () => null,
  );
  assert.deepEqual(down.error, { code: "unavailable", message: "Could not reach the Jupyter server: Failed to fetch" });
  const html = await knowledgeOverHttp(fakeFetch(() => [200, "<html>login</html>"]).fetcher, { type: "knowledge_list", request: "r" }, () => null);
  assert.equal(html.error.code, "unavailable");
});
