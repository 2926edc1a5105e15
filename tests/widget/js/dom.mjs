// A DOM for the node tests of the chat widget's front end: jsdom, a dev dependency of frontend/
// (cd frontend && npm ci). DOMPurify sanitizes against the window of the element it renders into.

import { createRequire } from "node:module";

const FRONTEND = new URL("../../../frontend/package.json", import.meta.url);

/** A fresh jsdom window (its document has an empty body). */
export function newWindow() {
  let JSDOM;
  try {
    ({ JSDOM } = createRequire(FRONTEND)("jsdom"));
  } catch (error) {
    throw new Error(`jsdom is missing: run "npm ci" in frontend/ (${error.message})`);
  }
  return new JSDOM("<!doctype html><html><body></body></html>").window;
}

/** The built front end (gmchat_nb/widget/static/chat.js, written by frontend/build.mjs). */
export const CHAT_JS = new URL("../../../gmchat_nb/widget/static/chat.js", import.meta.url);
