/**
 * Pure formatting helpers: JSON and cell texts, tool-call summaries, durations, results, usage,
 * errors, sorting of result rows and display names. No DOM here.
 */

import type { ErrorInfo, FrameSummary, TableSort } from "./protocol";

/** A plain (non-array) object, as JSON from outside may or may not be. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** JSON on one line, cut to `max` characters with an ellipsis. */
export function compactJson(value: unknown, max = 120): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = String(value);
  return text.length > max ? `${text.slice(0, Math.max(1, max - 1))}\u2026` : text;
}

/** Pretty JSON (2-space indent), cut at `max` characters. */
export function prettyJson(value: unknown, max = 20000): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, null, 2);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = String(value);
  return text.length > max ? `${text.slice(0, max)}\n\u2026 (${text.length - max} more characters)` : text;
}

/** The text of a table cell: scalars as they are, nested lists and objects as compact JSON. */
export function formatCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value);
  return compactJson(value, 300);
}

/** True for the query tool and the "direct" per-manager query tools (`query_part`). */
export function isQueryTool(name: unknown): boolean {
  return name === "query" || (typeof name === "string" && name.startsWith("query_"));
}

function argText(value: unknown): string {
  if (typeof value === "string") return value.length > 60 ? `${value.slice(0, 59)}\u2026` : value;
  return compactJson(value, 80);
}

const LEAD_ARGUMENT: Readonly<Record<string, string>> = {
  query: "manager",
  mutate: "mutation",
  get_manager_schema: "manager",
  search_managers: "query",
};

/**
 * A one-line summary of a tool call's arguments, e.g. `Part · filters {"name__icontains":"bolt"}`.
 * The tool's main argument comes first without its key; `fields` (long, in the card's body) is left out.
 */
export function summarizeArgs(name: string, args: unknown, max = 160): string {
  if (args === null || args === undefined) return "";
  if (!isObject(args)) return compactJson(args, max);
  const parts: string[] = [];
  const rest: Record<string, unknown> = { ...args };
  if (name === "find_path" && "from_manager" in rest && "to_manager" in rest) {
    parts.push(`${argText(rest.from_manager)} \u2192 ${argText(rest.to_manager)}`);
    delete rest.from_manager;
    delete rest.to_manager;
  }
  const lead = (Object.hasOwn(LEAD_ARGUMENT, name) ? LEAD_ARGUMENT[name] : undefined) ?? (isQueryTool(name) ? "manager" : null);
  if (lead && lead in rest) {
    parts.push(name === "search_managers" ? JSON.stringify(String(rest[lead])) : argText(rest[lead]));
    delete rest[lead];
  }
  if (isQueryTool(name)) delete rest.fields;
  for (const [key, value] of Object.entries(rest)) parts.push(`${key} ${argText(value)}`);
  const text = parts.join(" \u00b7 ");
  return text.length > max ? `${text.slice(0, max - 1)}\u2026` : text;
}

/** A duration given in ms: `40 µs`, `3.4 ms`, `340 ms`, `2.4 s`, `1 min 5 s`. */
export function formatDuration(ms: unknown): string {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) return "";
  if (ms < 0.0005) return "<1 \u00b5s";
  if (ms < 0.9995) return `${Math.round(ms * 1000)} \u00b5s`;
  if (ms < 9.995) return `${ms.toFixed(1)} ms`;
  if (ms < 999.5) return `${Math.round(ms)} ms`;
  if (ms < 59950) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

export type ToolOutcome =
  | { status: "ok" }
  | { status: "error"; code: string; message: string }
  | { status: "cancelled"; reason: string };

/**
 * The status of a tool result: `ok`; `error` with the error's code and message; or `cancelled`
 * with its reason (a mutation the human rejected, `user_rejected`, or let expire,
 * `confirmation_timed_out`).
 */
export function toolOutcome(result: unknown): ToolOutcome {
  if (isObject(result) && result.status === "error") {
    return { status: "error", code: String(result.code || "error"), message: String(result.message || "") };
  }
  if (isObject(result) && result.status === "cancelled") {
    return { status: "cancelled", reason: String(result.reason || "cancelled") };
  }
  return { status: "ok" };
}

function finite(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/**
 * A short summary of a query result: `12 of 120 rows · more available`. The widget's kernel
 * sends the row count as `rows` (the rows travel as a paged table); other clients send `data`.
 */
export function querySummary(result: unknown, frame?: FrameSummary | null): string {
  if (!result || typeof result !== "object") return "";
  const r = result as Record<string, unknown>;
  let count: number | null = null;
  if (Array.isArray(r.data)) count = r.data.length;
  else if (finite(r.rows)) count = r.rows;
  else if (frame && finite(frame.rows)) count = frame.rows;
  if (count === null) return "";
  const total = finite(r.total_count) ? r.total_count : count;
  const complete = r.complete === true || (r.complete === undefined && !r.has_more);
  return `${count} of ${total} rows \u00b7 ${complete ? "complete" : "more available"}`;
}

/** `1200 in · 85 out tokens`, or "" without usage. */
export function usageText(usage: unknown): string {
  if (!usage || typeof usage !== "object") return "";
  const u = usage as Record<string, unknown>;
  const input = Number(u.input_tokens) || 0;
  const output = Number(u.output_tokens) || 0;
  return `${input} in \u00b7 ${output} out tokens`;
}

/** The text of an error: `message (code)`, plus `retry in N s` for rate limits. */
export function errorText(error: ErrorInfo | null | undefined): string {
  if (!error || typeof error !== "object") return "";
  const message = String(error.message || "Chat request failed.");
  const code = error.code ? ` (${error.code})` : "";
  const retry =
    error.code === "rate_limited" && Number.isFinite(Number(error.retry_after_seconds)) && error.retry_after_seconds !== null
      ? ` \u2014 retry in ${Math.ceil(Number(error.retry_after_seconds))} s`
      : "";
  return `${message}${code}${retry}`;
}

function isEmptyCell(value: unknown): boolean {
  return value === null || value === undefined || value === "";
}

/** Compare two cell values for sorting: empty last, numbers numerically, text naturally. */
export function compareCells(a: unknown, b: unknown): number {
  const emptyA = isEmptyCell(a);
  const emptyB = isEmptyCell(b);
  if (emptyA || emptyB) return emptyA === emptyB ? 0 : emptyA ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  return formatCell(a).localeCompare(formatCell(b), undefined, { numeric: true, sensitivity: "base" });
}

/** The value of `column` (its index in `columns`) in a row given as a list or an object. */
export function cellValue(row: unknown, columns: readonly string[], index: number): unknown {
  if (Array.isArray(row)) return row[index];
  if (row && typeof row === "object") {
    const column = columns[index];
    return column === undefined ? undefined : (row as Record<string, unknown>)[column];
  }
  return undefined;
}

/** A sorted copy of `rows`; empty values stay last in both directions. */
export function sortRows<T>(rows: readonly T[], columns: readonly string[], sort: TableSort): T[] {
  const index = columns.indexOf(sort.column);
  if (index < 0) return rows.slice();
  return rows
    .map((row, position) => ({ row, position, value: cellValue(row, columns, index) }))
    .sort((x, y) => {
      if (isEmptyCell(x.value) || isEmptyCell(y.value)) return compareCells(x.value, y.value) || x.position - y.position;
      const order = compareCells(x.value, y.value);
      return (sort.descending ? -order : order) || x.position - y.position;
    })
    .map((item) => item.row);
}

/** A display name for the snapshot's `project` / `provider` (a string or an object). */
export function displayName(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "object") {
    const named = value as Record<string, unknown>;
    for (const key of ["name", "label", "spec", "id", "model"]) {
      const candidate = named[key];
      if (typeof candidate === "string" && candidate) return candidate;
    }
    return compactJson(value, 60);
  }
  return String(value);
}

/** JSON text (a string holding JSON) as a value; anything else unchanged. */
export function maybeJson(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/** A count >= 0 from anything (0 when it is not a number). */
export function wholeNumber(value: unknown): number {
  const number = Number(value);
  return Number.isFinite(number) && number >= 0 ? Math.floor(number) : 0;
}

/** `1 task`, `2 tasks`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
