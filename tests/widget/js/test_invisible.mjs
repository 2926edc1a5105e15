// Invisible characters written out on the confirmation card: the helper (every character of
// gmchat_nb/core/guards/invisible.py's INVISIBLE_RANGES and lone surrogates as ⟨U+XXXX⟩) and the
// card that uses it, in a jsdom document.
// Run: node tests/widget/js/test_invisible.mjs   (node >= 20, after `npm ci` in frontend/;
// exit code 1 on failure). It imports the built module, gmchat_nb/widget/static/chat.js.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CHAT_JS, newWindow } from "./dom.mjs";

const window = newWindow();
globalThis.window = window;
globalThis.document = window.document;

const { ConfirmBox, INVISIBLE_RANGES, INVISIBLE_WARNING, hasInvisible, revealInvisible, revealInvisibleIn } =
  await import(CHAT_JS.href);

test("a right-to-left override is written out", () => {
  assert.equal(revealInvisible("invoice\u202efdp.exe"), "invoice\u27e8U+202E\u27e9fdp.exe");
  assert.ok(hasInvisible("invoice\u202efdp.exe"));
  for (const code of [0x202a, 0x202b, 0x202c, 0x202d, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c]) {
    const hex = code.toString(16).toUpperCase().padStart(4, "0");
    assert.equal(revealInvisible(`a${String.fromCodePoint(code)}b`), `a\u27e8U+${hex}\u27e9b`);
  }
});

test("zero-width characters, soft hyphens, variation selectors and the BOM are written out", () => {
  assert.equal(revealInvisible("pass\u200bword"), "pass\u27e8U+200B\u27e9word");
  assert.equal(revealInvisible("a\u200c\u200d\u2060b"), "a\u27e8U+200C\u27e9\u27e8U+200D\u27e9\u27e8U+2060\u27e9b");
  assert.equal(revealInvisible("in\u00advoice"), "in\u27e8U+00AD\u27e9voice");
  assert.equal(revealInvisible("\ufeffx\ufe0f"), "\u27e8U+FEFF\u27e9x\u27e8U+FE0F\u27e9");
  assert.equal(revealInvisible("x\u{e0100}"), "x\u27e8U+E0100\u27e9");
});

test("tag characters (invisible ASCII) are written out one by one", () => {
  const smuggled = [..."hi"].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join("");
  assert.equal(revealInvisible(`ok${smuggled}`), "ok\u27e8U+E0068\u27e9\u27e8U+E0069\u27e9");
  assert.equal(revealInvisible("\u{e0001}\u{e007f}"), "\u27e8U+E0001\u27e9\u27e8U+E007F\u27e9");
});

test("lone surrogates are written out, pairs are not", () => {
  assert.equal(revealInvisible("a\ud800b"), "a\u27e8U+D800\u27e9b");
  assert.equal(revealInvisible("a\udfffb"), "a\u27e8U+DFFF\u27e9b");
  assert.equal(revealInvisible("\udc00\ud800"), "\u27e8U+DC00\u27e9\u27e8U+D800\u27e9");
  assert.ok(hasInvisible("\ud83d"));
});

test("astral characters and plain text stay as they are", () => {
  for (const text of ["", "Spring", "Caf\u00e9 \u00fc\u00df \u65e5\u672c", "\u{1f600} \u{1f469}\u{1f3fd}", "\u05e9\u05dc\u05d5\u05dd", "a\tb\nc", "e\u0301"]) {
    assert.equal(revealInvisible(text), text);
    assert.equal(hasInvisible(text), false, text);
  }
  // A joined emoji sequence loses only its joiner, as the Python side strips it.
  assert.equal(revealInvisible("\u{1f468}\u200d\u{1f469}"), "\u{1f468}\u27e8U+200D\u27e9\u{1f469}");
});

test("every code point of every range is written out, its neighbours are not", () => {
  for (const [low, high] of INVISIBLE_RANGES) {
    for (let code = low; code <= high; code++) assert.ok(hasInvisible(String.fromCodePoint(code)), code.toString(16));
  }
  assert.equal(hasInvisible("\u00ac\u00ae\u200a\u2010\u2029\u202f\u205f\u2070\ufdff\ufe10\ufefe"), false);
});

test("revealInvisibleIn reveals keys and values at any depth", () => {
  const { value, revealed } = revealInvisibleIn({ "n\u200bame": ["x", { deep: "a\u202eb" }], n: 3, none: null });
  assert.equal(revealed, true);
  assert.deepEqual(value, { "n\u27e8U+200B\u27e9ame": ["x", { deep: "a\u27e8U+202E\u27e9b" }], n: 3, none: null });
  assert.deepEqual(revealInvisibleIn({ name: "Spring", tags: ["a"] }), { value: { name: "Spring", tags: ["a"] }, revealed: false });
  const cyclic = { name: "x" };
  cyclic.self = cyclic;
  assert.deepEqual(revealInvisibleIn(cyclic).value, { name: "x", self: "[cycle]" });
});

function card(event) {
  return new ConfirmBox(() => {}, { type: "confirm_mutation", id: "call-1", expires_in_seconds: 60, ...event }).el;
}

test("the card shows a right-to-left override as an escape, with a warning", () => {
  const el = card({ mutation: "createPart", input: { name: "invoice\u202efdp.exe" } });
  assert.equal(el.querySelector("td").textContent, "invoice\u27e8U+202E\u27e9fdp.exe");
  const warning = el.querySelector("[data-testid=invisible-warning]");
  assert.equal(warning.textContent, INVISIBLE_WARNING);
  assert.ok(!el.textContent.includes("\u202e"));
});

test("the card reveals the mutation's name, keys and nested values", () => {
  const el = card({
    mutation: "create\u200bPart",
    input: { "na\u2066me": "x", data: { list: ["a\u{e0041}"] } },
  });
  assert.ok(el.querySelector(".gmchat-confirm-title").textContent.includes("create\u27e8U+200B\u27e9Part"));
  assert.equal(el.querySelector("th").textContent, "na\u27e8U+2066\u27e9me");
  assert.ok(el.querySelectorAll("td")[1].textContent.includes("a\u27e8U+E0041\u27e9"));
  assert.equal(hasInvisible(el.textContent), false);
  assert.equal(el.getAttribute("aria-label"), "Confirm mutation create\u27e8U+200B\u27e9Part");
  assert.ok(el.querySelector("[data-testid=invisible-warning]"));
});

test("a nested value's invisible character alone raises the warning", () => {
  const el = card({ mutation: "createPart", input: { data: { name: "a\u200bb" } } });
  assert.ok(el.querySelector("[data-testid=invisible-warning]"));
  assert.ok(el.querySelector("td").textContent.includes("a\u27e8U+200B\u27e9b"));
});

test("a card with plain text shows it unchanged and no warning", () => {
  const el = card({ mutation: "createPart", input: { name: "Spring", quantity: 4 } });
  assert.equal(el.querySelector("td").textContent, "Spring");
  assert.equal(el.querySelector("[data-testid=invisible-warning]"), null);
});
