/**
 * What the conversation costs, in the header: the last turn's cost and the conversation's (the
 * sum of its turns' `done.cost.usd`), with a text tooltip of tokens by kind, requests, models and
 * price sources, and a context gauge (the share of the model's context window the next request
 * will carry). Pure helpers read and format a `done` event's `cost` (core/providers/pricing.py's
 * `turn_cost`); `UsageHeader` is the element, rebuilt from the view's turn records whenever a
 * turn ends, a snapshot or a replay arrives, or a reload restores them.
 *
 * An unknown price is "—", never $0; providers that cost nothing say so ("$0.00 (local)"); turns
 * without a `cost` (older turns, turns that asked no model) add nothing and show nothing.
 */

import { h } from "./dom";
import { isObject } from "./format";
import type { TurnRecord } from "./protocol";

/** Price sources that mean "no charge": the model runs here, or there is no model. */
export const FREE_SOURCES: readonly string[] = ["local", "offline", "scripted"];
/** The gauge warns from this share of the context window on ... */
export const CONTEXT_WARNING = 0.7;
/** ... and is in its error state from this one. */
export const CONTEXT_ERROR = 0.9;
/** The token kinds a cost counts, in the order the tooltip lists them. */
export const TOKEN_KINDS: readonly (readonly [string, string])[] = [
  ["input_tokens", "input"],
  ["output_tokens", "output"],
  ["cache_read_tokens", "cache read"],
  ["cache_write_tokens", "cache write"],
  ["reasoning_tokens", "reasoning"],
];
const UNKNOWN = "\u2014";

/** The context the next request carries: its tokens, the model's window and their share (null: unknown). */
export interface ContextFill {
  tokens: number;
  window: number | null;
  share: number | null;
}

/** A turn's cost, checked: every field present, an unknown price as `usd: null`. */
export interface TurnCost {
  usd: number | null;
  sources: string[];
  requests: number;
  unpriced: number;
  tokens: Record<string, number>;
  estimated: boolean;
  models: string[];
  context: ContextFill | null;
}

/** Several turns' costs added up (`usd` null when any turn's price is unknown). */
export interface CostSum extends TurnCost {
  turns: number;
}

export type ContextState = "ok" | "warning" | "error" | "unknown";

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string" && item !== "") : [];
}

function contextOf(value: unknown): ContextFill | null {
  if (!isObject(value)) return null;
  const window = typeof value.window === "number" && Number.isFinite(value.window) && value.window > 0 ? value.window : null;
  const share = typeof value.share === "number" && Number.isFinite(value.share) && value.share >= 0 && window !== null ? value.share : null;
  return { tokens: count(value.tokens), window, share };
}

/** A `done` event's `cost`, checked; null when there is none (an older turn, no model asked). */
export function costOf(value: unknown): TurnCost | null {
  if (!isObject(value)) return null;
  const usd = typeof value.usd === "number" && Number.isFinite(value.usd) && value.usd >= 0 ? value.usd : null;
  const given = isObject(value.tokens) ? value.tokens : {};
  const tokens: Record<string, number> = {};
  for (const [kind] of TOKEN_KINDS) tokens[kind] = count(given[kind]);
  return {
    usd,
    sources: strings(value.sources),
    requests: count(value.requests),
    unpriced: count(value.unpriced),
    tokens,
    estimated: value.estimated === true,
    models: strings(value.models),
    context: contextOf(value.context),
  };
}

/** The cost of a turn record: its `done` event's (the last one), or null. */
export function recordCost(record: TurnRecord | null | undefined): TurnCost | null {
  const events: unknown[] = record && Array.isArray(record.events) ? record.events : [];
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (isObject(event) && event.type === "done") return costOf(event.cost);
  }
  return null;
}

/** Whether every source is one that charges nothing (and there is at least one). */
export function isFree(sources: readonly string[]): boolean {
  return sources.length > 0 && sources.every((source) => FREE_SOURCES.includes(source));
}

/**
 * A cost as text: "—" when unknown, `$0.00 (local)` for providers that charge nothing,
 * `<$0.0001` for a tiny amount, `$0.0042` below a dollar (up to four decimals), `$1,234.50`.
 */
export function formatUsd(usd: number | null | undefined, sources: readonly string[] = []): string {
  if (typeof usd !== "number" || !Number.isFinite(usd) || usd < 0) return UNKNOWN;
  if (usd === 0) return isFree(sources) ? `$0.00 (${sources.join(", ")})` : "$0.00";
  if (usd < 0.0001) return "<$0.0001";
  if (usd < 1) {
    const text = usd.toFixed(4).replace(/0{1,2}$/, "");
    return text === "1.00" ? "$1.00" : `$${text}`;
  }
  return `$${usd.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

/** Add up turns' costs: an unknown price anywhere makes the sum unknown; the context is the last turn's. */
export function sumCosts(costs: readonly (TurnCost | null | undefined)[]): CostSum {
  const sum: CostSum = {
    usd: 0,
    sources: [],
    requests: 0,
    unpriced: 0,
    tokens: Object.fromEntries(TOKEN_KINDS.map(([kind]) => [kind, 0])),
    estimated: false,
    models: [],
    context: null,
    turns: 0,
  };
  for (const cost of costs) {
    if (!cost) continue;
    sum.turns++;
    sum.usd = sum.usd === null || cost.usd === null ? null : sum.usd + cost.usd;
    for (const source of cost.sources) if (!sum.sources.includes(source)) sum.sources.push(source);
    for (const model of cost.models) if (!sum.models.includes(model)) sum.models.push(model);
    sum.requests += cost.requests;
    sum.unpriced += cost.unpriced;
    for (const [kind] of TOKEN_KINDS) sum.tokens[kind] = (sum.tokens[kind] ?? 0) + (cost.tokens[kind] ?? 0);
    sum.estimated ||= cost.estimated;
    sum.context = cost.context;
  }
  sum.sources.sort();
  return sum;
}

/** The gauge's state for a share of the context window: ok, warning (>= 70%), error (>= 90%), unknown. */
export function contextState(share: number | null | undefined): ContextState {
  if (typeof share !== "number" || !Number.isFinite(share) || share < 0) return "unknown";
  if (share >= CONTEXT_ERROR) return "error";
  if (share >= CONTEXT_WARNING) return "warning";
  return "ok";
}

/** A share as a whole percent, rounded down (69.9% is 69%, below the warning as its state is). */
export function percent(share: number): number {
  return Math.floor(share * 100 + 1e-9);
}

function tokensText(n: number): string {
  return n.toLocaleString("en-US");
}

/** The tooltip text of a cost: tokens by kind, requests, models and price sources. */
export function costDetails(title: string, cost: TurnCost | CostSum): string {
  const lines = [`${title}: ${formatUsd(cost.usd, cost.sources)}`];
  lines.push(`Tokens: ${TOKEN_KINDS.map(([kind, name]) => `${tokensText(cost.tokens[kind] ?? 0)} ${name}`).join(", ")}${cost.estimated ? " (estimated)" : ""}`);
  lines.push(`Requests: ${cost.requests}`);
  lines.push(`Models: ${cost.models.join(", ") || UNKNOWN}`);
  const free = isFree(cost.sources) ? " (no charge)" : "";
  lines.push(`Prices: ${cost.sources.join(", ") || UNKNOWN}${free}`);
  if (cost.unpriced) lines.push(`Price unknown for ${cost.unpriced} request${cost.unpriced === 1 ? "" : "s"}`);
  return lines.join("\n");
}

/** The text the gauge shows and says (`aria-valuetext`), and its tooltip. */
export function contextText(context: ContextFill | null): { text: string; spoken: string; title: string } {
  if (!context || context.share === null || context.window === null) {
    return {
      text: `context: ${UNKNOWN}`,
      spoken: "context window unknown",
      title: "The model's context window is unknown, so how full it is cannot be said (the prices setting's context_window names it).",
    };
  }
  const pct = percent(context.share);
  const state = contextState(context.share);
  const warning = state === "error" ? " (nearly full)" : state === "warning" ? " (filling up)" : "";
  const of = `${tokensText(context.tokens)} of ${tokensText(context.window)} tokens`;
  return {
    text: `context ${pct}%`,
    spoken: `${pct}% of the context window${warning}, ${of}`,
    title: `The next request carries about ${of} of the model's context window: ${pct}%${warning}.`,
  };
}

/** What the header shows for a view's turn records. */
export interface UsageSummary {
  /** the last finished turn's index and cost (null cost: it has none) */
  last: { index: number; cost: TurnCost | null } | null;
  /** the turns with a cost, added up */
  total: CostSum;
  /** finished turns without a cost (older turns, turns that asked no model) */
  uncounted: number;
  /** the context of the last turn with a cost */
  context: ContextFill | null;
}

/** Sum a view's turn records (any order). Null when none has a cost: the header shows nothing. */
export function usageSummary(records: Iterable<TurnRecord>): UsageSummary | null {
  const finished = [...records]
    .filter((record) => isObject(record) && Number.isFinite(Number(record.index)) && record.running !== true)
    .sort((a, b) => Number(a.index) - Number(b.index));
  const costs = finished.map(recordCost);
  const total = sumCosts(costs);
  if (!total.turns) return null;
  const lastRecord = finished[finished.length - 1];
  return {
    last: lastRecord ? { index: Number(lastRecord.index), cost: costs[costs.length - 1] ?? null } : null,
    total,
    uncounted: costs.length - total.turns,
    context: total.context,
  };
}

/** The header's cost and context gauge (hidden while no turn has a cost). */
export class UsageHeader {
  readonly el: HTMLDivElement;
  private readonly turnEl: HTMLSpanElement;
  private readonly totalEl: HTMLSpanElement;
  private readonly gauge: HTMLSpanElement;
  private readonly fill: HTMLSpanElement;
  private readonly bar: HTMLSpanElement;
  private readonly gaugeText: HTMLSpanElement;

  constructor() {
    this.turnEl = h("span", { cls: "gmchat-cost-value", testid: "gmchat-cost-turn" });
    this.totalEl = h("span", { cls: "gmchat-cost-value", testid: "gmchat-cost-total" });
    this.fill = h("span", { cls: "gmchat-context-fill" });
    this.bar = h("span", { cls: "gmchat-context-bar", attrs: { "aria-hidden": "true" } }, [this.fill]);
    this.gaugeText = h("span", { cls: "gmchat-context-value", testid: "gmchat-context-value" });
    this.gauge = h("span", { cls: "gmchat-context", testid: "gmchat-context" }, [this.bar, this.gaugeText]);
    this.el = h("div", { cls: "gmchat-usage-header", testid: "gmchat-usage-header", attrs: { hidden: true } }, [
      h("span", { cls: "gmchat-cost", testid: "gmchat-cost" }, [
        h("span", { cls: "gmchat-cost-label", text: "turn" }),
        this.turnEl,
        h("span", { cls: "gmchat-cost-sep", text: "\u00b7", attrs: { "aria-hidden": "true" } }),
        h("span", { cls: "gmchat-cost-label", text: "total" }),
        this.totalEl,
      ]),
      this.gauge,
    ]);
  }

  /** Show what `records` (the view's turn records) cost; hide when none has a cost. */
  update(records: Iterable<TurnRecord>): void {
    const summary = usageSummary(records);
    this.el.hidden = summary === null;
    if (!summary) return;
    const last = summary.last;
    const turnCost = last?.cost ?? null;
    this.turnEl.textContent = turnCost ? formatUsd(turnCost.usd, turnCost.sources) : UNKNOWN;
    const turnName = last ? `Last turn (turn ${last.index + 1})` : "Last turn";
    this.turnEl.title = turnCost
      ? costDetails(turnName, turnCost)
      : `${turnName}: ${UNKNOWN}\nNo cost was recorded for it (it asked no model, failed, or is older than cost records).`;
    const total = summary.total;
    const counted = `${total.turns} turn${total.turns === 1 ? "" : "s"}`;
    let totalTitle = costDetails(`Conversation (${counted})`, total);
    if (summary.uncounted) totalTitle += `\n${summary.uncounted} turn${summary.uncounted === 1 ? "" : "s"} without a cost record not counted`;
    this.totalEl.textContent = formatUsd(total.usd, total.sources);
    this.totalEl.title = totalTitle;
    this.updateGauge(summary.context);
  }

  private updateGauge(context: ContextFill | null): void {
    const gauge = this.gauge;
    const { text, spoken, title } = contextText(context);
    const share = context?.share ?? null;
    const state = contextState(share);
    gauge.setAttribute("data-state", state);
    gauge.title = title;
    this.gaugeText.textContent = text;
    this.bar.hidden = share === null;
    if (share === null) {
      for (const name of ["role", "aria-valuemin", "aria-valuemax", "aria-valuenow", "aria-valuetext", "aria-label"]) gauge.removeAttribute(name);
      this.fill.style.width = "0%";
      return;
    }
    const pct = percent(share);
    gauge.setAttribute("role", "meter");
    gauge.setAttribute("aria-label", "Context window used");
    gauge.setAttribute("aria-valuemin", "0");
    gauge.setAttribute("aria-valuemax", "100");
    gauge.setAttribute("aria-valuenow", String(Math.min(pct, 100)));
    gauge.setAttribute("aria-valuetext", spoken);
    this.fill.style.width = `${Math.min(pct, 100)}%`;
  }
}
