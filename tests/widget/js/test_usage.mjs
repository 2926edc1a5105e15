// The header's cost and context gauge (frontend/src/usage.ts): formatting, summing turns' costs,
// the gauge's states, older turns without a cost, and a ChatView keeping the header up to date
// from a snapshot, live turns and a replay.
// Run: node tests/widget/js/test_usage.mjs   (node >= 20, after `npm ci` in frontend/;
// exit code 1 on failure). It imports the built module, gmchat_nb/widget/static/chat.js.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CHAT_JS, newWindow } from "./dom.mjs";

const window = newWindow();
globalThis.window = window;
globalThis.document = window.document;

const {
  CONTEXT_ERROR,
  CONTEXT_WARNING,
  ChatView,
  UsageHeader,
  contextState,
  contextText,
  costDetails,
  costOf,
  formatUsd,
  percent,
  recordCost,
  sumCosts,
  usageSummary,
} = await import(CHAT_JS.href);

const TOKENS = { input_tokens: 7200, output_tokens: 100, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0 };

/** A done event's cost as pricing.turn_cost writes it. */
function cost({ usd = 0.0074, sources = ["override"], share = 0.73, window = 10000, tokens = TOKENS, models = ["scripted"], ...rest } = {}) {
  return {
    usd,
    currency: "USD",
    sources,
    unpriced: usd === null ? 1 : 0,
    requests: 1,
    tokens,
    estimated: false,
    models,
    context: { tokens: tokens.input_tokens + tokens.output_tokens, window, share },
    ...rest,
  };
}

/** A finished turn record whose done event carries `done` (no `cost` key when undefined). */
function record(index, costValue, { running = false } = {}) {
  const done = { type: "done", usage: { input_tokens: 1, output_tokens: 1 }, sequence: 2 };
  if (costValue !== undefined) done.cost = costValue;
  return {
    index,
    question: `q${index}`,
    events: [{ type: "text_chunk", content: "A.", sequence: 1 }, ...(running ? [] : [done])],
    answer: "A.",
    running,
  };
}

// ------------------------------------------------------------------ formatting

test("an unknown price is an em dash, never $0", () => {
  for (const usd of [null, undefined, NaN, -1, Infinity, "0.1"]) assert.equal(formatUsd(usd, ["unknown"]), "\u2014", String(usd));
  assert.equal(costOf({ usd: null, sources: ["unknown"] }).usd, null);
  assert.equal(costOf({ sources: ["override"] }).usd, null); // (no usd at all: unknown too)
});

test("amounts: tiny ones as <$0.0001, cents to four decimals, dollars to two", () => {
  assert.equal(formatUsd(0.00004, ["genai-prices 0.2.3"]), "<$0.0001");
  assert.equal(formatUsd(0.0000001, ["override"]), "<$0.0001");
  assert.equal(formatUsd(0.0001, ["override"]), "$0.0001");
  assert.equal(formatUsd(0.0042, ["genai-prices 0.2.3"]), "$0.0042");
  assert.equal(formatUsd(0.0074 + 0.0093, ["override"]), "$0.0167");
  assert.equal(formatUsd(0.25, ["override"]), "$0.25");
  assert.equal(formatUsd(0.1, ["override"]), "$0.10");
  assert.equal(formatUsd(0.99999, ["override"]), "$1.00");
  assert.equal(formatUsd(12.345, ["override"]), "$12.35");
  assert.equal(formatUsd(1234.5, ["override"]), "$1,234.50");
});

test("providers that charge nothing say so rather than a bare $0", () => {
  assert.equal(formatUsd(0, ["local"]), "$0.00 (local)");
  assert.equal(formatUsd(0, ["scripted"]), "$0.00 (scripted)");
  assert.equal(formatUsd(0, ["offline", "scripted"]), "$0.00 (offline, scripted)");
  // an override (or a mix) that prices something at 0 is a plain $0.00
  assert.equal(formatUsd(0, ["override"]), "$0.00");
  assert.equal(formatUsd(0, ["local", "override"]), "$0.00");
  assert.equal(formatUsd(0, []), "$0.00");
});

test("the tooltip lists tokens by kind, requests, models and price sources", () => {
  const details = costDetails(
    "Last turn",
    costOf(cost({ tokens: { ...TOKENS, cache_read_tokens: 1200, reasoning_tokens: 30 }, sources: ["genai-prices 0.2.3"], models: ["openai:gpt-4.1-mini"] })),
  );
  assert.equal(
    details,
    [
      "Last turn: $0.0074",
      "Tokens: 7,200 input, 100 output, 1,200 cache read, 0 cache write, 30 reasoning",
      "Requests: 1",
      "Models: openai:gpt-4.1-mini",
      "Prices: genai-prices 0.2.3",
    ].join("\n"),
  );
  const free = costDetails("Conversation", costOf(cost({ usd: 0, sources: ["local"], estimated: true })));
  assert.match(free, /^Conversation: \$0\.00 \(local\)\n/);
  assert.match(free, /\(estimated\)/);
  assert.match(free, /Prices: local \(no charge\)/);
  assert.match(costDetails("Turn", costOf(cost({ usd: null, sources: ["unknown"] }))), /Price unknown for 1 request$/);
});

// ------------------------------------------------------------------ summing

test("the conversation's cost adds the turns' costs; one unknown price makes it unknown", () => {
  const known = sumCosts([costOf(cost()), costOf(cost({ usd: 0.0093 }))]);
  assert.ok(Math.abs(known.usd - 0.0167) < 1e-12);
  assert.equal(known.turns, 2);
  assert.equal(known.requests, 2);
  assert.equal(known.tokens.input_tokens, 14400);
  assert.deepEqual(known.models, ["scripted"]);
  const unknown = sumCosts([costOf(cost()), costOf(cost({ usd: null, sources: ["unknown"] })), costOf(cost())]);
  assert.equal(unknown.usd, null);
  assert.equal(unknown.unpriced, 1);
  assert.deepEqual(unknown.sources, ["override", "unknown"]);
  assert.equal(formatUsd(unknown.usd, unknown.sources), "\u2014");
  // free turns stay free, and say so, when added up
  const free = sumCosts([costOf(cost({ usd: 0, sources: ["scripted"] })), costOf(cost({ usd: 0, sources: ["scripted"] }))]);
  assert.equal(formatUsd(free.usd, free.sources), "$0.00 (scripted)");
});

test("a turn's cost is its done event's; older turns and running ones have none", () => {
  assert.equal(recordCost(record(0, cost())).usd, 0.0074);
  assert.equal(recordCost(record(0, undefined)), null); // an older turn: done without cost
  assert.equal(recordCost(record(0, null)), null); // a turn that asked no model
  assert.equal(recordCost(record(0, cost(), { running: true })), null);
  assert.equal(recordCost({ index: 0 }), null);
  assert.equal(recordCost(null), null);
});

test("the summary: the last finished turn, the sum of turns with a cost, the last context", () => {
  assert.equal(usageSummary([]), null);
  assert.equal(usageSummary([record(0, undefined), record(1, undefined)]), null, "older turns only: nothing shown");
  const summary = usageSummary([record(2, cost({ usd: 0.0093, share: 0.92 })), record(0, undefined), record(1, cost()), record(3, undefined, { running: true })]);
  assert.equal(summary.last.index, 2);
  assert.equal(summary.last.cost.usd, 0.0093);
  assert.equal(summary.total.turns, 2);
  assert.equal(summary.uncounted, 1);
  assert.equal(summary.context.share, 0.92);
  const mixed = usageSummary([record(0, cost()), record(1, undefined)]);
  assert.equal(mixed.last.cost, null, "the last turn has no cost: it is not the one before it");
  assert.equal(mixed.context.share, 0.73);
});

// ------------------------------------------------------------------ the gauge

test("gauge states: neutral below 70%, a warning from 70%, an error from 90%, unknown without a window", () => {
  assert.equal(CONTEXT_WARNING, 0.7);
  assert.equal(CONTEXT_ERROR, 0.9);
  assert.equal(contextState(0), "ok");
  assert.equal(contextState(0.69), "ok");
  assert.equal(contextState(0.6999), "ok");
  assert.equal(contextState(0.7), "warning");
  assert.equal(contextState(0.73), "warning");
  assert.equal(contextState(0.8999), "warning");
  assert.equal(contextState(0.9), "error");
  assert.equal(contextState(1.3), "error");
  for (const share of [null, undefined, NaN, -0.1]) assert.equal(contextState(share), "unknown");
  assert.equal(percent(0.69), 69);
  assert.equal(percent(0.6999), 69);
  assert.equal(percent(0.7), 70);
  assert.equal(percent(0.29), 29);
  assert.equal(percent(0.9), 90);
  assert.equal(contextText(null).text, "context: \u2014");
  assert.equal(contextText({ tokens: 7300, window: null, share: null }).text, "context: \u2014");
  const warning = contextText({ tokens: 7300, window: 10000, share: 0.73 });
  assert.equal(warning.text, "context 73%");
  assert.equal(warning.spoken, "73% of the context window (filling up), 7,300 of 10,000 tokens");
});

/** The header element for these records. */
function header(records) {
  const usage = new UsageHeader();
  usage.update(records);
  const q = (id) => usage.el.querySelector(`[data-testid=${id}]`);
  return { usage, el: usage.el, turn: q("gmchat-cost-turn"), total: q("gmchat-cost-total"), gauge: q("gmchat-context"), value: q("gmchat-context-value") };
}

test("the header's gauge is a meter with text values, in its state, at 69, 70 and 90%", () => {
  for (const [share, state, now] of [
    [0.69, "ok", "69"],
    [0.7, "warning", "70"],
    [0.9, "error", "90"],
    [1.25, "error", "100"],
  ]) {
    const { el, gauge, value } = header([record(0, cost({ share, tokens: { ...TOKENS, input_tokens: share * 10000 - 100 } }))]);
    assert.equal(el.hidden, false);
    assert.equal(gauge.getAttribute("data-state"), state, String(share));
    assert.equal(gauge.getAttribute("role"), "meter");
    assert.equal(gauge.getAttribute("aria-valuemin"), "0");
    assert.equal(gauge.getAttribute("aria-valuemax"), "100");
    assert.equal(gauge.getAttribute("aria-valuenow"), now);
    assert.match(gauge.getAttribute("aria-valuetext"), new RegExp(`^${percent(share)}% of the context window`));
    assert.ok(gauge.getAttribute("aria-label"));
    assert.equal(value.textContent, `context ${percent(share)}%`);
    assert.equal(gauge.querySelector(".gmchat-context-fill").style.width, `${Math.min(percent(share), 100)}%`);
  }
});

test("an unknown window: an honest 'context: —', no meter", () => {
  const { gauge, value, turn } = header([record(0, cost({ usd: 0.0042, share: null, window: null, sources: ["genai-prices 0.2.3"] }))]);
  assert.equal(value.textContent, "context: \u2014");
  assert.equal(gauge.getAttribute("data-state"), "unknown");
  assert.equal(gauge.getAttribute("role"), null);
  assert.equal(gauge.getAttribute("aria-valuenow"), null);
  assert.match(gauge.title, /unknown/);
  assert.equal(gauge.querySelector(".gmchat-context-bar").hidden, true);
  assert.equal(turn.textContent, "$0.0042");
});

test("the header: the last turn's cost and the conversation's, with text tooltips", () => {
  const { el, turn, total } = header([record(0, cost()), record(1, cost({ usd: 0.0093, share: 0.92 }))]);
  assert.equal(turn.textContent, "$0.0093");
  assert.equal(total.textContent, "$0.0167");
  assert.match(turn.title, /^Last turn \(turn 2\): \$0\.0093\nTokens: 7,200 input, 100 output/);
  assert.match(total.title, /^Conversation \(2 turns\): \$0\.0167\n/);
  assert.match(total.title, /Requests: 2\nModels: scripted\nPrices: override/);
  assert.equal(el.querySelectorAll("*").length, el.querySelectorAll("span").length, "spans only: text, no markup");
  // a turn with an unknown price: that turn and the conversation are "—"
  const unknown = header([record(0, cost()), record(1, cost({ usd: null, sources: ["unknown"], share: null, window: null }))]);
  assert.equal(unknown.turn.textContent, "\u2014");
  assert.equal(unknown.total.textContent, "\u2014");
  // free: say so
  const free = header([record(0, cost({ usd: 0, sources: ["local"], models: ["ollama:llama3.2"] }))]);
  assert.equal(free.turn.textContent, "$0.00 (local)");
  assert.equal(free.total.textContent, "$0.00 (local)");
});

test("older turns without a cost show nothing; a mix counts what it has and says so", () => {
  assert.equal(header([]).el.hidden, true);
  assert.equal(header([record(0, undefined), record(1, null)]).el.hidden, true);
  const mixed = header([record(0, undefined), record(1, cost())]);
  assert.equal(mixed.el.hidden, false);
  assert.equal(mixed.total.textContent, "$0.0074");
  assert.match(mixed.total.title, /1 turn without a cost record not counted$/);
  // and back to nothing (a new conversation)
  mixed.usage.update([]);
  assert.equal(mixed.el.hidden, true);
});

test("a hostile model name or source stays text", () => {
  const { el, total } = header([record(0, cost({ models: ["<img src=x onerror=alert(1)>"], sources: ["<script>x</script>"] }))]);
  assert.equal(el.querySelector("img, script"), null);
  assert.match(total.title, /Models: <img src=x onerror=alert\(1\)>/);
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
}

test("a ChatView's header follows its snapshot, a live turn's done and a replay", () => {
  const transport = new FakeTransport();
  const host = document.createElement("div");
  document.body.append(host);
  const view = new ChatView(transport, host);
  const q = (id) => view.root.querySelector(`[data-testid=${id}]`);
  const cursor = (position) => ({ conversation_id: "c1", position, epoch: "e" });
  assert.equal(q("gmchat-usage-header").hidden, true);

  // a snapshot of an older turn (no cost) and one with a cost
  transport.emit({ type: "snapshot", turns: [record(0, undefined), record(1, cost())], busy: false, conversation_id: "c1", cursor: cursor(4) });
  assert.equal(q("gmchat-usage-header").hidden, false);
  assert.equal(q("gmchat-cost-turn").textContent, "$0.0074");
  assert.equal(q("gmchat-cost-total").textContent, "$0.0074");
  assert.equal(q("gmchat-context").getAttribute("data-state"), "warning");

  // a live turn: nothing changes until its done arrives
  transport.emit({ type: "turn_start", turn: { index: 2, question: "q2", running: true } });
  transport.emit({ type: "events", turn: 2, events: [{ type: "text_chunk", content: "B.", sequence: 1 }] });
  assert.equal(q("gmchat-cost-total").textContent, "$0.0074");
  transport.emit({ type: "events", turn: 2, events: [{ type: "done", usage: {}, cost: cost({ usd: 0.0093, share: 0.92 }), sequence: 2 }] });
  transport.emit({ type: "turn_end", turn: { index: 2, question: "q2", answer: "B.", running: false }, cursor: cursor(7) });
  assert.equal(q("gmchat-cost-turn").textContent, "$0.0093");
  assert.equal(q("gmchat-cost-total").textContent, "$0.0167");
  const gauge = q("gmchat-context");
  assert.equal(gauge.getAttribute("data-state"), "error");
  assert.equal(gauge.getAttribute("aria-valuenow"), "92");

  // a replay with a turn of an unknown price
  transport.emit({
    type: "replay",
    conversation_id: "c1",
    after: 7,
    cursor: cursor(9),
    turns: [record(3, cost({ usd: null, sources: ["unknown"], share: 0.5 }))],
    busy: false,
  });
  assert.equal(q("gmchat-cost-turn").textContent, "\u2014");
  assert.equal(q("gmchat-cost-total").textContent, "\u2014");
  assert.equal(q("gmchat-context").getAttribute("data-state"), "ok");

  // a new conversation: an empty snapshot hides it
  transport.emit({ type: "snapshot", turns: [], busy: false, conversation_id: "c2", cursor: { ...cursor(0), conversation_id: "c2" } });
  assert.equal(q("gmchat-usage-header").hidden, true);
  view.dispose();
});
