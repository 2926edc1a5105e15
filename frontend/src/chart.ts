/**
 * Charts of query results: `checkSpec` (what a spec may hold before it is drawn) and `ChartView`,
 * a chart event drawn with a table/chart toggle. The Vega libraries are not in this module nor in
 * the widget's chat.js: the host supplies a `ChartLoader` (the widget asks the kernel for
 * charts.js, the side panel imports a lazy chunk), called when the first chart is drawn.
 *
 * A spec comes from the kernel or the server, built by gmchat_nb/core/charts from the query's
 * rows, but it crosses a process boundary and may have been stored: it is checked here again,
 * with the deny-list of core/charts's `check_spec`, and a refused spec shows as a short text
 * ("chart refused: …"), never drawn. Titles, labels and values are text, never markup.
 */

import type { DrawnChart } from "./chart-library";
import { button, h } from "./dom";
import { formatCell, isObject } from "./format";
import type { ChartEvent } from "./protocol";

/** What the chart library module exports (chart-library.ts, built into the widget's charts.js). */
export interface ChartLibrary {
  drawChart(el: HTMLElement, spec: Record<string, unknown>): Promise<DrawnChart>;
}

/** How a host loads the chart library (once: the loader caches it). */
export type ChartLoader = () => Promise<ChartLibrary>;

/** The Vega-Lite schema every chart names (core/charts `SCHEMA`; a string, never fetched). */
export const SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json";

/**
 * Keys a spec may not hold anywhere, as core/charts/spec.py's `FORBIDDEN_KEYS` (here compared
 * without case, and with `test` and `param` too: a condition's test is an expression): data
 * from URLs or named datasets, expressions and what evaluates them (signals, params,
 * selections, calculate, filters, transforms, label expressions), links and images, loaders,
 * and embedding options smuggled in `usermeta`.
 */
export const DENIED_KEYS: ReadonlySet<string> = new Set(
  [
    "url",
    "href",
    "expr",
    "signal",
    "signals",
    "params",
    "param",
    "selection",
    "calculate",
    "labelExpr",
    "filter",
    "transform",
    "datasets",
    "image",
    "usermeta",
    "loader",
    "lookup",
    "sequence",
    "graticule",
    "sphere",
    "on",
    "update",
    "bind",
    "test",
  ].map((key) => key.toLowerCase()),
);

/** The deepest nesting a spec may have (core/charts `MAX_SPEC_DEPTH`) and the most values. */
export const MAX_SPEC_DEPTH = 16;
export const MAX_SPEC_NODES = 200_000;

/** Mark types a spec may draw (a histogram is drawn with bars). */
export const MARK_TYPES: ReadonlySet<string> = new Set(["bar", "line", "point", "area", "arc"]);

function markType(mark: unknown): string {
  return String(isObject(mark) ? mark.type : mark).slice(0, 40);
}

/**
 * Why a spec may not be drawn, or null when it may (core/charts's `check_spec`, and more): an
 * object naming the Vega-Lite v5 schema, its data inline (`data` is `{values: [...]}` only), no
 * key of `DENIED_KEYS` at any depth, a plain mark, and neither too deep nor too big.
 */
export function checkSpec(spec: unknown): string | null {
  if (!isObject(spec)) return "the spec is not an object";
  if (spec.$schema !== SCHEMA) return "it does not name the Vega-Lite v5 schema";
  const data = spec.data;
  if (!isObject(data) || Object.keys(data).join() !== "values" || !Array.isArray(data.values)) return "its data is not inline values only";
  if (!MARK_TYPES.has(markType(spec.mark))) return `its mark "${markType(spec.mark)}" is not one a chart draws`;
  let nodes = 0;
  const stack: [unknown, number][] = [[spec, 0]];
  while (stack.length) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (++nodes > MAX_SPEC_NODES) return "it is too big";
    if (depth > MAX_SPEC_DEPTH) return "it is nested too deep";
    if (Array.isArray(value)) {
      for (const item of value) stack.push([item, depth + 1]);
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        if (DENIED_KEYS.has(key.toLowerCase())) return `it holds "${key.slice(0, 40)}"`;
        stack.push([item, depth + 1]);
      }
    }
  }
  return null;
}

function titleText(title: unknown): string {
  if (Array.isArray(title)) return title.map((part) => formatCell(part)).join(" ");
  return typeof title === "string" || typeof title === "number" ? String(title) : "";
}

/**
 * The chart's data as a table: a column per field of its values, headed by the axis or legend
 * title of the channel that encodes it (the real column name; the values' fields are "x", "y"…).
 */
export function chartDataTable(spec: Record<string, unknown>, maxRows = 500): HTMLTableElement {
  const data = spec.data as { values: unknown[] };
  const encoding = isObject(spec.encoding) ? spec.encoding : {};
  const titles = new Map<string, string>();
  for (const channel of Object.values(encoding)) {
    if (isObject(channel) && typeof channel.field === "string" && !titles.has(channel.field)) {
      titles.set(channel.field, titleText(channel.title));
    }
  }
  const fields: string[] = [];
  for (const row of data.values.slice(0, maxRows)) {
    if (isObject(row)) for (const key of Object.keys(row)) if (!fields.includes(key) && fields.length < 50) fields.push(key);
  }
  const header = fields.map((field) => titles.get(field) || field);
  const rows = data.values.slice(0, maxRows).map((row) =>
    h(
      "tr",
      {},
      fields.map((field) => {
        const value = isObject(row) ? row[field] : undefined;
        return h("td", { cls: typeof value === "number" ? "gmchat-num" : "", text: formatCell(value) });
      }),
    ),
  );
  return h("table", { cls: "gmchat-grid gmchat-chart-table", testid: "gmchat-chart-table" }, [
    h("thead", {}, [h("tr", {}, header.map((text) => h("th", { text, attrs: { scope: "col" } })))]),
    h("tbody", {}, rows),
  ]);
}

/** A chart as an event or a `chart_options` answer carries it. */
export type ChartJson = Partial<Omit<ChartEvent, "type">> & { type?: string };

/**
 * One chart: its title, a Chart/Table toggle, the drawing (SVG, drawn once the library is
 * loaded) and the same data as a table. A refused spec shows why instead, and nothing is loaded.
 */
export class ChartView {
  readonly el: HTMLElement;
  readonly id: string;
  private drawn: DrawnChart | null = null;
  private disposed = false;
  private readonly canvas: HTMLDivElement;
  private readonly status: HTMLDivElement;

  constructor(chart: ChartJson, loader: ChartLoader | null | undefined) {
    this.id = String(chart.id ?? "");
    const specTitle = isObject(chart.spec) ? chart.spec.title : null;
    const title = typeof chart.title === "string" ? chart.title : typeof specTitle === "string" ? specTitle : "";
    this.canvas = h("div", { cls: "gmchat-chart-canvas", testid: "gmchat-chart-canvas" });
    this.status = h("div", { cls: "gmchat-chart-status", testid: "gmchat-chart-status", attrs: { role: "status" } });
    const marks = typeof chart.marks === "number" && Number.isFinite(chart.marks) ? chart.marks : null;
    this.el = h("figure", {
      cls: "gmchat-chart",
      testid: "gmchat-chart",
      attrs: { "data-chart": this.id, "data-evidence": chart.evidence_id ?? null, "data-marks": marks, "data-state": "drawing" },
    });
    const spec = chart.spec;
    const refused = checkSpec(spec);
    if (refused !== null) {
      this.setState("refused", `chart refused: ${refused}`);
      this.el.append(h("figcaption", { cls: "gmchat-chart-title", text: title }), this.status);
      return;
    }
    const checked = spec as Record<string, unknown>;
    const table = h("div", { cls: "gmchat-chart-data gmchat-table-scroll", attrs: { hidden: true } }, [chartDataTable(checked)]);
    const showChart = button("Chart", { cls: "gmchat-chart-show", testid: "gmchat-chart-show", aria: "Show the chart" });
    const showTable = button("Table", { cls: "gmchat-chart-show", testid: "gmchat-chart-table-show", aria: "Show the chart's data as a table" });
    const pick = (asTable: boolean): void => {
      table.hidden = !asTable;
      this.canvas.hidden = asTable;
      showChart.setAttribute("aria-pressed", String(!asTable));
      showTable.setAttribute("aria-pressed", String(asTable));
    };
    showChart.addEventListener("click", () => pick(false));
    showTable.addEventListener("click", () => pick(true));
    pick(false);
    this.el.append(
      h("figcaption", { cls: "gmchat-chart-head" }, [
        h("span", { cls: "gmchat-chart-title", testid: "gmchat-chart-title", text: title }),
        h("span", { cls: "gmchat-chart-toggle", attrs: { role: "group", "aria-label": "Show as" } }, [showChart, showTable]),
      ]),
      this.canvas,
      table,
      this.status,
    );
    this.canvas.setAttribute("aria-label", title || "Chart");
    if (!loader) {
      this.setState("failed", "chart unavailable: this view cannot draw charts");
      return;
    }
    this.status.textContent = "drawing the chart\u2026";
    void this.draw(loader, checked);
  }

  private async draw(loader: ChartLoader, spec: Record<string, unknown>): Promise<void> {
    try {
      const library = await loader();
      if (this.disposed) return;
      // (the title is the caption's, as text: not drawn again inside the chart)
      const { title: _title, ...drawing } = spec;
      const drawn = await library.drawChart(this.canvas, drawing);
      if (this.disposed) {
        drawn.finalize();
        return;
      }
      this.drawn = drawn;
      this.setState("drawn", "");
    } catch (error) {
      if (this.disposed) return;
      const reason = error instanceof Error && error.message ? error.message : String(error);
      this.setState("failed", `chart unavailable: ${reason}`);
    }
  }

  private setState(state: "drawing" | "drawn" | "refused" | "failed", text: string): void {
    this.el.setAttribute("data-state", state);
    this.status.textContent = text;
    this.status.classList.toggle("gmchat-bad", state === "refused" || state === "failed");
  }

  /** Stop the chart's listeners and timers; take it out of the page. */
  dispose(): void {
    this.disposed = true;
    const drawn = this.drawn;
    this.drawn = null;
    if (drawn) {
      try {
        drawn.finalize();
      } catch {
        // a finalize that fails leaves nothing to do
      }
    }
    this.el.remove();
  }
}
