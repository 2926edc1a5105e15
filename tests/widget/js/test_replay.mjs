// Tests of the chat widget's replay bookkeeping: cursors, hello, turn records, sessionStorage.
// Run: node tests/widget/js/test_replay.mjs   (node >= 18, no npm packages; exit code 1 on failure)

import assert from "node:assert/strict";
import { test } from "node:test";

const CHAT_JS = new URL("../../../gmchat_nb/widget/static/chat.js", import.meta.url);
const {
  ConnectionWatch,
  MAX_STORED_VIEWS,
  cursorOf,
  helloMessage,
  loadView,
  recordMessage,
  replayAnswers,
  saveView,
  storageKey,
  SseParser,
} = await import(CHAT_JS.href);

/** The Storage interface over a Map; `quota` (characters) makes setItem throw like a full one. */
class MemoryStorage {
  constructor(quota = Infinity) {
    this.items = new Map();
    this.quota = quota;
  }
  get length() {
    return this.items.size;
  }
  key(i) {
    return [...this.items.keys()][i] ?? null;
  }
  getItem(key) {
    return this.items.has(key) ? this.items.get(key) : null;
  }
  setItem(key, value) {
    const used = [...this.items].reduce((n, [k, v]) => n + (k === key ? 0 : v.length), 0);
    if (used + String(value).length > this.quota) throw new DOMException("full", "QuotaExceededError");
    this.items.set(key, String(value));
  }
  removeItem(key) {
    this.items.delete(key);
  }
}

/** A storage whose every call throws (disabled storage, a sandboxed frame). */
const hostile = new Proxy(
  {},
  {
    get() {
      throw new Error("SecurityError");
    },
  },
);

const CURSOR = { conversation_id: "c1", position: 12, epoch: "t0k3n" };
const TURNS = [
  { index: 0, question: "Which materials?", events: [{ type: "text_chunk", content: "Eight.", sequence: 1, position: 11 }], tables: [], running: false },
];

test("cursorOf accepts only whole positions >= 0 with a conversation and an epoch", () => {
  assert.deepEqual(cursorOf(CURSOR), { conversationId: "c1", position: 12, epoch: "t0k3n" });
  assert.deepEqual(cursorOf({ ...CURSOR, position: 0 }).position, 0);
  for (const position of [-1, 1.5, "12", NaN, Infinity, 2 ** 60, true, null, undefined]) {
    assert.equal(cursorOf({ ...CURSOR, position }), null, String(position));
  }
  for (const bad of [null, undefined, "c1", 7, [], { ...CURSOR, conversation_id: "" }, { ...CURSOR, conversation_id: null }, { ...CURSOR, epoch: "" }, { ...CURSOR, epoch: 3 }]) {
    assert.equal(cursorOf(bad), null, JSON.stringify(bad));
  }
});

test("hello carries the cursor back as {conversation_id, after, epoch}", () => {
  assert.deepEqual(helloMessage(null), { type: "hello" });
  assert.deepEqual(helloMessage(undefined), { type: "hello" });
  assert.deepEqual(helloMessage(cursorOf(CURSOR)), { type: "hello", conversation_id: "c1", after: 12, epoch: "t0k3n" });
  const cursor = cursorOf(CURSOR);
  assert.ok(replayAnswers(cursor, { conversation_id: "c1", after: 12 }));
  assert.ok(!replayAnswers(cursor, { conversation_id: "c1", after: 11 }));
  assert.ok(!replayAnswers(cursor, { conversation_id: "c2", after: 12 }));
  assert.ok(!replayAnswers(null, { conversation_id: "c1", after: 12 }));
});

test("live messages build the turn records a reload restores", () => {
  const records = new Map();
  recordMessage(records, { type: "turn_start", turn: { index: 0, question: "Q", answer: "", tables: [], running: true } });
  recordMessage(records, { type: "events", turn: 0, events: [{ type: "tool_call", id: "a", sequence: 1 }] });
  recordMessage(records, { type: "table", turn: 0, table: { key: "t0-a", call_id: "a" } });
  recordMessage(records, { type: "table", turn: 0, table: { key: "t0-a", call_id: "a" } }); // once
  recordMessage(records, { type: "events", turn: 0, events: [{ type: "text_chunk", content: "Hi", sequence: 3 }] });
  recordMessage(records, { type: "events", turn: 7, events: [{ type: "text_chunk", content: "lost" }] }); // no record
  recordMessage(records, { type: "turn_end", turn: { index: 0, question: "Q", answer: "Hi", tables: [{ key: "t0-a" }], running: false }, cursor: CURSOR });
  assert.deepEqual([...records.keys()], [0]);
  const record = records.get(0);
  assert.deepEqual(record.events.map((e) => e.sequence), [1, 3]);
  assert.equal(record.answer, "Hi");
  assert.equal(record.running, false);
  assert.deepEqual(record.tables, [{ key: "t0-a" }]);
  // Malformed messages change nothing and never throw.
  for (const msg of [null, "x", { type: "events" }, { type: "events", turn: "a" }, { type: "turn_start", turn: 5 }, { type: "table", turn: 0, table: null }]) {
    recordMessage(records, msg);
  }
  assert.deepEqual([...records.keys()], [0]);
  // A saved record without event or table lists still takes new ones.
  const saved = new Map([[1, { index: 1, question: "Q2" }]]);
  recordMessage(saved, { type: "events", turn: 1, events: [{ type: "done", sequence: 1 }] });
  assert.equal(saved.get(1).events.length, 1);
});

test("a saved view loads back under its widget key, and only the latest conversation is kept", () => {
  const storage = new MemoryStorage();
  assert.ok(saveView(storage, "w1", cursorOf({ ...CURSOR, conversation_id: "old" }), TURNS));
  assert.ok(saveView(storage, "w1", cursorOf(CURSOR), TURNS));
  assert.deepEqual([...storage.items.keys()], [storageKey("w1", "c1")]);
  const view = loadView(storage, "w1");
  assert.deepEqual(view.cursor, cursorOf(CURSOR));
  assert.deepEqual(view.turns, TURNS);
  assert.equal(loadView(storage, "w2"), null); // another widget's
  assert.equal(loadView(storage, undefined), null);
  assert.equal(loadView(storage, "bad key:with colon"), null);
  assert.equal(loadView(null, "w1"), null);
});

test("corrupted, foreign or oversized saved views are dropped, never thrown", () => {
  const key = storageKey("w1", "c1");
  const good = () => JSON.stringify({ v: 1, saved_at: 1, cursor: CURSOR, turns: TURNS });
  for (const text of [
    "{not json",
    "null",
    "[]",
    JSON.stringify({ v: 2, cursor: CURSOR, turns: TURNS }),
    JSON.stringify({ v: 1, cursor: { ...CURSOR, position: -3 }, turns: TURNS }),
    JSON.stringify({ v: 1, cursor: { ...CURSOR, position: "12" }, turns: TURNS }),
    JSON.stringify({ v: 1, cursor: { ...CURSOR, conversation_id: "c9" }, turns: TURNS }), // filed under another
    JSON.stringify({ v: 1, cursor: CURSOR, turns: "many" }),
    JSON.stringify({ v: 1, cursor: CURSOR, turns: [null] }),
    JSON.stringify({ v: 1, cursor: CURSOR, turns: [{ index: -1 }] }),
    JSON.stringify({ v: 1, cursor: CURSOR, turns: [{ index: "0" }] }),
    "x".repeat(500_000),
  ]) {
    const storage = new MemoryStorage();
    storage.setItem(key, text);
    assert.equal(loadView(storage, "w1"), null, text.slice(0, 80));
    assert.equal(storage.getItem(key), null, "the broken entry is removed");
  }
  const storage = new MemoryStorage();
  storage.setItem(key, good());
  assert.ok(loadView(storage, "w1"));
  // Storage that throws on every call: no saved view, nothing saved, no exception.
  assert.equal(loadView(hostile, "w1"), null);
  assert.equal(saveView(hostile, "w1", cursorOf(CURSOR), TURNS), false);
});

test("a view over the size limit or the storage quota is not saved (that reload snapshots)", () => {
  const storage = new MemoryStorage();
  assert.ok(saveView(storage, "w1", cursorOf(CURSOR), TURNS));
  const big = [{ index: 0, question: "x".repeat(2000), events: [], tables: [] }];
  assert.equal(saveView(storage, "w1", cursorOf(CURSOR), big, { maxChars: 1000 }), false);
  assert.equal(loadView(storage, "w1"), null, "the older, now wrong copy is gone too");
  const full = new MemoryStorage(300);
  assert.equal(saveView(full, "w1", cursorOf(CURSOR), big), false);
  assert.equal(full.length, 0);
  assert.equal(saveView(storage, "w1", null, TURNS), false); // no cursor: nothing to replay from
  const circular = { index: 0 };
  circular.self = circular;
  assert.equal(saveView(storage, "w1", cursorOf(CURSOR), [circular]), false);
});

test("at most MAX_STORED_VIEWS saved views, the oldest dropped first", async () => {
  const storage = new MemoryStorage();
  storage.setItem("other-app", "kept"); // not ours: never touched
  for (let i = 0; i < MAX_STORED_VIEWS + 3; i++) {
    assert.ok(saveView(storage, `w${i}`, cursorOf(CURSOR), TURNS));
    await new Promise((resolve) => setTimeout(resolve, 2)); // distinct saved_at
  }
  const ours = [...storage.items.keys()].filter((k) => k.startsWith("gmchat:"));
  assert.equal(ours.length, MAX_STORED_VIEWS);
  assert.equal(loadView(storage, "w0"), null);
  assert.ok(loadView(storage, `w${MAX_STORED_VIEWS + 2}`));
  assert.equal(storage.getItem("other-app"), "kept");
});

test("a lost kernel connection that comes back asks again, once", () => {
  const slots = [];
  const kernel = {
    connectionStatusChanged: {
      connect: (slot) => slots.push(slot),
      disconnect: (slot) => slots.splice(slots.indexOf(slot), 1),
    },
  };
  let hellos = 0;
  const watch = new ConnectionWatch(kernel, () => hellos++);
  const status = (s) => slots.forEach((slot) => slot(kernel, s));
  status("connected"); // never lost: nothing to ask
  assert.equal(hellos, 0);
  status("connecting");
  status("disconnected");
  status("connected");
  status("connected");
  assert.equal(hellos, 1);
  watch.dispose();
  assert.equal(slots.length, 0);
  status("connecting");
  status("connected");
  assert.equal(hellos, 1);
  // No kernel (another front end) or a strange one: nothing to watch, nothing thrown.
  for (const k of [null, undefined, {}, { connectionStatusChanged: 3 }, hostile]) new ConnectionWatch(k, () => hellos++).dispose();
});

test("an SSE frame's id is its own: a live-only frame without one is no journal position", () => {
  const parser = new SseParser();
  const frames = parser.push(
    'id: 7\nevent: text_chunk\ndata: {"type":"text_chunk"}\n\n' +
      'event: notice\ndata: {"type":"notice","kind":"store"}\n\n' +
      ": keep-alive\n\n" +
      'id: 8\nevent: done\ndata: {"type":"done"}\n\n',
  );
  assert.deepEqual(
    frames.map((f) => [f.id, f.event]),
    [["7", "text_chunk"], [null, "notice"], ["8", "done"]],
  );
});
