// Agent tokens in the side panel (frontend/src/agent-tokens.ts, agent-tokens-form.ts,
// agent-tokens-view.ts, transport/server-agent-tokens.ts): a token read from the routes' JSON and
// written as the person reads it, the create request, the MCP URL and configuration; the routes'
// client over a fetch that answers as the routes do (docs/server.md, "Agent tokens"), refusals as
// text; and the drawer in a ChatView: the Agents button only with agent tokens, listing, creating
// (the secret and configuration shown once, Done takes them out of the page), revoking (asked once
// more, inline), everything as text.
// Run: node tests/widget/js/test_agent_tokens.mjs   (node >= 20, after `npm ci` in frontend/;
// exit code 1 on failure). It imports the built module, gmchat_nb/widget/static/chat.js.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CHAT_JS, newWindow } from "./dom.mjs";

process.env.TZ = "UTC"; // (the times are shown in local time: UTC here, so the test can name them)

const window = newWindow();
globalThis.window = window;
globalThis.document = window.document;

const {
  AgentTokensClient,
  ChatView,
  DEFAULT_EXPIRY_DAYS,
  EXPIRY_CHOICES,
  NO_AGENT_TOKEN_ROUTES,
  agentTokenProblemText,
  agentTokenRefusal,
  createRequest,
  mcpConfig,
  mcpUrl,
  nameProblem,
  prefixText,
  scopesText,
  stateLabel,
  timeText,
  tokenOf,
  tokenTimes,
  tokensOf,
} = await import(CHAT_JS.href);

const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const SECRET = "gmat_" + "A".repeat(20) + "b-_" + "z".repeat(20);
const T0 = Date.UTC(2026, 11, 6, 16, 33) / 1000; // 2026-12-06 16:33 UTC
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

function token(fields = {}) {
  return {
    id: "at_1",
    name: "Claude Code",
    prefix: "gmat_AbCdEfG",
    scopes: ["read"],
    created_at: T0,
    expires_at: T0 + 90 * 86400,
    last_used_at: null,
    revoked_at: null,
    state: "active",
    ...fields,
  };
}

// ------------------------------------------------------------------ pure helpers

test("a token is read from the routes' JSON field by field; what is not one is left out", () => {
  assert.deepEqual(tokenOf(token()), token());
  const odd = tokenOf({ id: "at_2", name: 3, scopes: ["read", 7, "propose"], created_at: "yesterday", expires_at: Number.NaN, state: "" });
  assert.deepEqual(odd, {
    id: "at_2",
    name: "3",
    prefix: "",
    scopes: ["read", "propose"],
    created_at: null,
    expires_at: null,
    last_used_at: null,
    revoked_at: null,
    state: "unknown",
  });
  for (const absent of [null, "at_1", [], {}, { id: "" }, { id: 5 }]) assert.equal(tokenOf(absent), null, JSON.stringify(absent));
  assert.deepEqual(tokensOf([null, token(), { name: "no id" }, token({ id: "at_2" })]).map((t) => t.id), ["at_1", "at_2"]);
  assert.deepEqual(tokensOf({ tokens: [] }), []);
});

test("scopes, state, prefix and times read as the person reads them", () => {
  assert.equal(scopesText(["read"]), "Read");
  assert.equal(scopesText(["read", "propose"]), "Read, propose changes");
  assert.equal(scopesText(["read", "admin"]), "Read, admin");
  assert.equal(scopesText([]), "No scopes");
  assert.equal(stateLabel("active"), "Active");
  assert.equal(stateLabel("revoked"), "Revoked");
  assert.equal(stateLabel(""), "Unknown");
  assert.equal(prefixText("gmat_AbCdEfG"), "gmat_AbCdEfG\u2026");
  assert.equal(prefixText(""), "");
  assert.equal(timeText(T0), "2026-12-06 16:33");
  assert.equal(timeText(null), "\u2014");
  assert.equal(timeText(null, "never"), "never");
  assert.equal(tokenTimes(token()), "Created 2026-12-06 16:33 \u00b7 expires 2027-03-06 16:33 \u00b7 never used");
  assert.equal(
    tokenTimes(token({ expires_at: null, last_used_at: T0 + 60, revoked_at: T0 + 120, state: "revoked" })),
    "Created 2026-12-06 16:33 \u00b7 never expires \u00b7 last used 2026-12-06 16:34 \u00b7 revoked 2026-12-06 16:35",
  );
  assert.match(tokenTimes(token({ expires_at: T0 + 60, state: "expired" })), /expired 2026-12-06 16:34/);
});

test("the create request: a name the server takes, read or read+propose, the expiry in days or never", () => {
  assert.match(nameProblem(""), /Give the token a name/);
  assert.match(nameProblem(" \t\n"), /Give the token a name/);
  assert.equal(nameProblem("x".repeat(100)), null);
  assert.match(nameProblem("x".repeat(101)), /at most 100 characters/);
  assert.equal(nameProblem("\u{1F600}".repeat(100)), null, "a character is a character, not two UTF-16 units");
  assert.deepEqual(createRequest("  laptop  ", false, 90), { name: "laptop", scopes: ["read"], expires_in_days: 90 });
  assert.deepEqual(createRequest("ci", true, null), { name: "ci", scopes: ["read", "propose"], expires_in_days: null });
  assert.deepEqual(EXPIRY_CHOICES.map((choice) => choice.days), [7, 30, 90, 365, null]);
  assert.equal(DEFAULT_EXPIRY_DAYS, 90);
});

test("the MCP URL is below the server's base URL; the configuration carries it and the secret", () => {
  assert.equal(mcpUrl("http://127.0.0.1:8888/"), "http://127.0.0.1:8888/gmchat/mcp");
  assert.equal(mcpUrl("https://hub.example/user/alice/"), "https://hub.example/user/alice/gmchat/mcp");
  assert.equal(mcpUrl("https://hub.example/user/alice"), "https://hub.example/user/alice/gmchat/mcp");
  const config = JSON.parse(mcpConfig("https://hub.example/user/alice/gmchat/mcp", SECRET));
  assert.deepEqual(config, {
    mcpServers: { gmchat: { type: "http", url: "https://hub.example/user/alice/gmchat/mcp", headers: { Authorization: `Bearer ${SECRET}` } } },
  });
});

// ------------------------------------------------------------------ the routes' client

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

test("the client asks the contract's routes and reads their answers", async () => {
  const { calls, fetcher } = fakeFetch((path, init) => {
    if (init.method === "POST") return [201, { token: token({ name: JSON.parse(init.body).name }), secret: SECRET }];
    if (init.method === "DELETE") return [200, { token: token({ state: "revoked", revoked_at: T0 }) }];
    return [200, { tokens: [token(), "junk", token({ id: "at_0", state: "expired" })] }];
  });
  const client = new AgentTokensClient(fetcher);
  const listed = await client.list();
  assert.equal(listed.ok, true);
  assert.deepEqual(listed.value.map((t) => t.id), ["at_1", "at_0"]);
  assert.deepEqual(calls.at(-1), { path: "agent-tokens/", method: "GET", body: undefined });

  const created = await client.create(createRequest("laptop", true, 7));
  assert.equal(created.ok, true);
  assert.equal(created.value.secret, SECRET);
  assert.equal(created.value.token.name, "laptop");
  assert.deepEqual(calls.at(-1), { path: "agent-tokens/", method: "POST", body: { name: "laptop", scopes: ["read", "propose"], expires_in_days: 7 } });

  const revoked = await client.revoke("at/1 x");
  assert.equal(revoked.ok, true);
  assert.equal(revoked.value.state, "revoked");
  assert.deepEqual(calls.at(-1), { path: "agent-tokens/at%2F1%20x", method: "DELETE", body: undefined });
});

test("refusals are the server's sentences; a missing route, a login page or no server say so", async () => {
  const forbidden = { type: "error", code: "forbidden", message: "Agent tokens are made from a person's browser session." };
  const answer = await new AgentTokensClient(fakeFetch(() => [403, forbidden]).fetcher).list();
  assert.deepEqual(answer, { ok: false, error: { code: "forbidden", message: forbidden.message } });
  const invalid = await new AgentTokensClient(fakeFetch(() => [400, { type: "error", code: "invalid", message: "The name is blank." }]).fetcher).create(createRequest("x", false, 90));
  assert.deepEqual(invalid.error, { code: "invalid", message: "The name is blank." });
  const missing = await new AgentTokensClient(fakeFetch(() => [404, "<html>404 Not Found</html>"]).fetcher).revoke("at_1");
  assert.deepEqual(missing.error, { code: "unavailable", message: NO_AGENT_TOKEN_ROUTES });
  assert.equal(agentTokenRefusal(404, { type: "error", code: "not_found", message: "No agent token at_9." }).code, "not_found");
  assert.match(agentTokenRefusal(403, null).message, /only your own browser session/);
  assert.equal(agentTokenRefusal(500, null).message, "The agent-token request failed (HTTP 500).");
  const login = await new AgentTokensClient(fakeFetch(() => [200, "<html>login</html>"]).fetcher).list();
  assert.equal(login.error.code, "unavailable");
  assert.match(login.error.message, /not an agent-token answer/);
  const down = await new AgentTokensClient(async () => {
    throw new TypeError("Failed to fetch");
  }).list();
  assert.deepEqual(down.error, { code: "unreachable", message: "Could not reach the Jupyter server: Failed to fetch" });
  assert.equal(agentTokenProblemText({ code: "x", message: " " }), "The agent-token request failed (x).");
});

// ------------------------------------------------------------------ the drawer in a ChatView

class FakeTransport {
  constructor() {
    this.sent = [];
  }
  storageKey() {
    return null;
  }
  send(msg) {
    this.sent.push(msg);
  }
  onMessage() {
    return () => undefined;
  }
}

/** The routes' behaviour over an in-memory list: newest first, revoked ones kept, refusals as JSON. */
function routes() {
  const tokens = [];
  let next = 0;
  const state = { tokens, refuseRevoke: null };
  const { calls, fetcher } = fakeFetch((path, init) => {
    if (init.method === "POST") {
      const body = JSON.parse(init.body);
      if (body.name === "taken") return [400, { type: "error", code: "invalid", message: "A token named \u201ctaken\u201d already exists." }];
      const made = token({ id: `at_${++next}`, name: body.name, scopes: body.scopes, expires_at: body.expires_in_days === null ? null : T0 + body.expires_in_days * 86400 });
      tokens.unshift(made);
      return [201, { token: made, secret: `${SECRET}${next}` }];
    }
    if (init.method === "DELETE") {
      if (state.refuseRevoke) return state.refuseRevoke;
      const found = tokens.find((t) => `agent-tokens/${t.id}` === path);
      if (!found) return [404, { type: "error", code: "not_found", message: "No such agent token." }];
      Object.assign(found, { state: "revoked", revoked_at: T0 + 60 });
      return [200, { token: found }];
    }
    return [200, { tokens }];
  });
  return { state, calls, client: new AgentTokensClient(fetcher) };
}

function newView(agentTokens) {
  const host = document.createElement("div");
  document.body.append(host);
  const view = new ChatView(new FakeTransport(), host, agentTokens ? { agentTokens } : {});
  const q = (id, root = view.root) => root.querySelector(`[data-testid=${id}]`);
  const qa = (id, root = view.root) => [...root.querySelectorAll(`[data-testid=${id}]`)];
  return { view, q, qa };
}

/** Wait until `check()` holds (the client's answers are promises), at most ~200 turns of the loop. */
async function until(check, what) {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await tick();
  }
  assert.fail(`never: ${what}`);
}

test("only a host with agent tokens (the side panel) shows Agents; the widget shows none", () => {
  const widget = newView(null);
  assert.equal(widget.q("gmchat-agents-toggle"), null);
  assert.equal(widget.q("gmchat-agents"), null);
  widget.view.dispose();
  const panel = newView({ client: routes().client, mcpUrl: "http://127.0.0.1:8888/gmchat/mcp" });
  assert.equal(panel.q("gmchat-agents-toggle").textContent, "Agents");
  assert.equal(panel.q("gmchat-agents").hidden, true);
  panel.view.dispose();
});

test("create a token: the secret and configuration shown once, then listed; Done takes the secret away", async () => {
  const server = routes();
  const url = "https://hub.example/user/alice/gmchat/mcp";
  const { view, q, qa } = newView({ client: server.client, mcpUrl: url });
  const toggle = q("gmchat-agents-toggle");
  toggle.click();
  assert.equal(toggle.getAttribute("aria-expanded"), "true");
  assert.equal(q("gmchat-agents").hidden, false);
  await until(() => q("gmchat-agents-list-status").textContent.startsWith("No agent tokens yet"), "the empty list");

  q("gmchat-agents-create").click();
  const form = q("gmchat-agents-form");
  assert.equal(q("gmchat-agents-expiry").value, "90");
  assert.equal(q("gmchat-agents-propose").checked, false);
  q("gmchat-agents-create-submit").click();
  await tick();
  assert.match(q("gmchat-agents-form-error").textContent, /Give the token a name/);
  assert.equal(server.calls.filter((c) => c.method === "POST").length, 0, "a blank name is not sent");

  q("gmchat-agents-name").value = "taken";
  form.requestSubmit();
  await until(() => q("gmchat-agents-form-error").textContent.includes("already exists"), "the server's refusal");
  assert.equal(q("gmchat-agents-form-error").getAttribute("data-code"), "invalid");

  q("gmchat-agents-name").value = HOSTILE;
  q("gmchat-agents-propose").checked = true;
  q("gmchat-agents-expiry").value = "never";
  form.requestSubmit();
  await until(() => q("gmchat-agents-secret") !== null, "the secret");
  assert.deepEqual(server.calls.at(-2), { path: "agent-tokens/", method: "POST", body: { name: HOSTILE, scopes: ["read", "propose"], expires_in_days: null } });
  assert.equal(q("gmchat-agents-form"), null, "the form makes way for the secret");
  assert.equal(q("gmchat-agents-secret-value").textContent, `${SECRET}1`);
  assert.match(q("gmchat-agents-secret-warning").textContent, /will not be shown again/);
  assert.deepEqual(JSON.parse(q("gmchat-agents-config").textContent), {
    mcpServers: { gmchat: { type: "http", url, headers: { Authorization: `Bearer ${SECRET}1` } } },
  });
  await until(() => qa("gmchat-agents-token").length === 1, "the new token listed");
  const row = q("gmchat-agents-token");
  assert.equal(q("gmchat-agents-token-name", row).textContent, HOSTILE);
  assert.equal(row.querySelector("img"), null, "a name is text, never markup");
  assert.equal(q("gmchat-agents-token-state", row).textContent, "Active");
  assert.equal(q("gmchat-agents-token-scopes", row).textContent, "Read, propose changes");
  assert.equal(q("gmchat-agents-token-prefix", row).textContent, "gmat_AbCdEfG\u2026");
  assert.match(q("gmchat-agents-token-times", row).textContent, /never expires \u00b7 never used/);
  assert.equal(q("gmchat-agents-list-status").textContent, "1 token, 1 active");
  assert.ok(!row.textContent.includes(SECRET), "the list never holds the secret");

  // no clipboard here (jsdom): the secret is left selected in a text box to copy by hand
  q("gmchat-agents-copy-secret").click();
  await until(() => q("gmchat-agents-secret-copied").textContent !== "", "the copy's status");
  assert.equal(q("gmchat-agents-secret-copied").textContent, "select and copy (Ctrl+C)");
  assert.equal(q("gmchat-agents-secret").querySelector("textarea").value, `${SECRET}1`);

  q("gmchat-agents-done").click();
  assert.equal(q("gmchat-agents-secret"), null);
  assert.ok(!document.body.innerHTML.includes(SECRET), "after Done the secret is nowhere in the page");
  assert.equal(view.root.querySelector("textarea.gmchat-copy-area"), null, "nor in the copy box");
  assert.equal(window.__pwned, undefined);

  // a second token's secret, then the drawer closed: closing takes the secret away too
  q("gmchat-agents-create").click();
  q("gmchat-agents-name").value = "ci";
  q("gmchat-agents-form").requestSubmit();
  await until(() => q("gmchat-agents-secret") !== null, "the second secret");
  toggle.click();
  assert.equal(toggle.getAttribute("aria-expanded"), "false");
  assert.ok(!document.body.innerHTML.includes(SECRET), "a closed drawer holds no secret");
  view.dispose();
});

test("revoke asks once more inline; Keep keeps it, Revoke revokes it; a refusal shows as text", async () => {
  const server = routes();
  server.state.tokens.push(token({ id: "at_7", name: "laptop" }), token({ id: "at_6", name: "old", state: "expired" }));
  const { view, q, qa } = newView({ client: server.client, mcpUrl: "http://127.0.0.1:8888/gmchat/mcp" });
  q("gmchat-agents-toggle").click();
  await until(() => qa("gmchat-agents-token").length === 2, "two tokens");
  assert.equal(q("gmchat-agents-list-status").textContent, "2 tokens, 1 active");
  const [active, expired] = qa("gmchat-agents-token");
  assert.equal(q("gmchat-agents-revoke", expired), null, "an expired token has nothing to revoke");

  q("gmchat-agents-revoke", active).click();
  assert.match(q("gmchat-agents-revoke-question", active).textContent, /Revoke \u201claptop\u201d\? Agents using it are refused/);
  q("gmchat-agents-revoke-keep", active).click();
  assert.equal(q("gmchat-agents-revoke-question", active), null);
  assert.equal(server.calls.filter((c) => c.method === "DELETE").length, 0, "Keep sends nothing");

  server.state.refuseRevoke = [403, { type: "error", code: "forbidden", message: "Only your browser session may revoke." }];
  q("gmchat-agents-revoke", active).click();
  q("gmchat-agents-revoke-confirm", active).click();
  await until(() => q("gmchat-agents-revoke-error", active)?.textContent === "Only your browser session may revoke.", "the refusal");

  server.state.refuseRevoke = null;
  q("gmchat-agents-revoke-confirm", active).click();
  await until(() => q("gmchat-agents-token").getAttribute("data-state") === "revoked", "the token revoked");
  const row = q("gmchat-agents-token");
  assert.equal(q("gmchat-agents-token-state", row).textContent, "Revoked");
  assert.equal(q("gmchat-agents-revoke", row), null);
  assert.match(q("gmchat-agents-token-times", row).textContent, /revoked 2026-12-06 16:34/);
  assert.equal(server.calls.filter((c) => c.method === "DELETE").at(-1).path, "agent-tokens/at_7");
  view.dispose();
});

test("a list the server refuses or cannot answer says why, as text", async () => {
  const forbidden = { type: "error", code: "forbidden", message: `Not with a token ${HOSTILE}` };
  const { view, q } = newView({ client: new AgentTokensClient(fakeFetch(() => [403, forbidden]).fetcher), mcpUrl: "x" });
  q("gmchat-agents-toggle").click();
  const status = q("gmchat-agents-list-status");
  await until(() => status.getAttribute("data-state") === "error", "the refusal");
  assert.equal(status.textContent, forbidden.message);
  assert.equal(status.getAttribute("data-code"), "forbidden");
  assert.equal(status.querySelector("img"), null);
  view.dispose();
  const old = newView({ client: new AgentTokensClient(fakeFetch(() => [404, "<html>Not Found</html>"]).fetcher), mcpUrl: "x" });
  old.q("gmchat-agents-toggle").click();
  await until(() => old.q("gmchat-agents-list-status").textContent === NO_AGENT_TOKEN_ROUTES, "no routes");
  old.view.dispose();
});

test("one drawer at a time: Agents closes Knowledge and Knowledge closes Agents", () => {
  const { view, q } = newView({ client: routes().client, mcpUrl: "x" });
  q("gmchat-knowledge-toggle").click();
  assert.equal(q("gmchat-knowledge").hidden, false);
  q("gmchat-agents-toggle").click();
  assert.equal(q("gmchat-agents").hidden, false);
  assert.equal(q("gmchat-knowledge").hidden, true);
  assert.equal(q("gmchat-knowledge-toggle").getAttribute("aria-expanded"), "false");
  q("gmchat-knowledge-toggle").click();
  assert.equal(q("gmchat-agents").hidden, true);
  assert.equal(q("gmchat-agents-toggle").getAttribute("aria-expanded"), "false");
  view.dispose();
});
