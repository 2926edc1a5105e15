// The side panel's room for JupyterLab's toasts (frontend/src/fit.ts): how much of the panel's
// bottom it leaves free so that no toast covers its input.
// Run: node tests/widget/js/test_fit.mjs   (node >= 20, after `npm ci` in frontend/;
// exit code 1 on failure). It imports the built module, gmchat_nb/widget/static/chat.js.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CHAT_JS, newWindow } from "./dom.mjs";

const window = newWindow();
globalThis.window = window;
globalThis.document = window.document;

const { CHAT_KEEPS, TOAST_GAP, toastClearance } = await import(CHAT_JS.href);

// The right sidebar of a 1400 x 1000 window, 400 px wide, under the menu bar.
const PANEL = { left: 967, right: 1367, top: 28, bottom: 976 };
// JupyterLab's news toast: bottom right, 60 px tall, over the panel's right part.
const NEWS = { left: 1065, right: 1390, top: 900, bottom: 960 };

test("no toast, no room taken", () => {
  assert.equal(toastClearance(PANEL, []), 0);
});

test("a toast over the panel's bottom: its top to the panel's bottom, and a gap", () => {
  assert.equal(toastClearance(PANEL, [NEWS]), 976 - 900 + TOAST_GAP);
  assert.equal(toastClearance(PANEL, [NEWS], 0), 76);
  // fractional boxes round up: never a pixel short
  assert.equal(toastClearance(PANEL, [{ ...NEWS, top: 899.4 }], 0), 77);
});

test("stacked toasts: the highest one counts", () => {
  const second = { ...NEWS, top: 830, bottom: 890 };
  assert.equal(toastClearance(PANEL, [NEWS, second]), 976 - 830 + TOAST_GAP);
  assert.equal(toastClearance(PANEL, [second, NEWS]), 976 - 830 + TOAST_GAP);
});

test("a toast beside the panel, or one closing (an empty box), takes nothing", () => {
  const leftSidebar = { left: 33, right: 283, top: 28, bottom: 976 };
  assert.equal(toastClearance(leftSidebar, [NEWS]), 0);
  assert.equal(toastClearance(PANEL, [{ ...NEWS, left: 1367, right: 1690 }]), 0); // touching only
  assert.equal(toastClearance(PANEL, [{ ...NEWS, top: 960, bottom: 960 }]), 0);
  assert.equal(toastClearance(PANEL, [{ ...NEWS, left: 1100, right: 1100 }]), 0);
  assert.equal(toastClearance(PANEL, [{ ...NEWS, top: 980, bottom: 1000 }]), 0); // below it
});

test("a panel not shown (an empty box) takes nothing", () => {
  const hidden = { left: 0, right: 0, top: 0, bottom: 0 };
  assert.equal(toastClearance(hidden, [NEWS]), 0);
});

test("the chat keeps its header and input, however many toasts there are", () => {
  const tower = { ...NEWS, top: 40 };
  assert.equal(toastClearance(PANEL, [tower]), 976 - 28 - CHAT_KEEPS);
  const short = { ...PANEL, top: 900 };
  assert.equal(toastClearance(short, [NEWS]), 0); // 76 px tall: nothing to give
  // a toast reaching above the panel covers all of it: at most the panel's height is given
  assert.equal(toastClearance(PANEL, [{ ...NEWS, top: 0 }], TOAST_GAP, 0), 976 - 28);
});
