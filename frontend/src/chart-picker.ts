/**
 * A result table's chart: the table's **Chart** button opens it and asks for the suggested chart
 * (`chart_request` {table}); the answer (`chart_options`) brings the columns, marks and aggregates
 * a chart of these rows may use, which become the mark, x, y, colour and aggregate pickers, and
 * the chart drawn (a `ChartView`) or why there is none. Changing a picker asks again with the
 * intent (and the `limit` the last chart was drawn with) and redraws.
 */

import { type ChartLoader, ChartView } from "./chart";
import { button, h } from "./dom";
import { errorText, isObject } from "./format";
import type { ChartIntent, ChartOptionsMessage, ClientMessage } from "./protocol";

type Send = (msg: ClientMessage) => void;

/** The pickers, in the order they show; `none`: the picker may be left empty. */
const PICKERS = [
  { field: "mark", label: "Mark", none: false },
  { field: "x", label: "X", none: false },
  { field: "y", label: "Y", none: true },
  { field: "color", label: "Colour", none: true },
  { field: "aggregate", label: "Aggregate", none: true },
] as const;

type PickerField = (typeof PICKERS)[number]["field"];

const NONE = "";

function texts(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item) => typeof item === "string") : [];
}

/** The chart part of a result table (hidden until its Chart button opens it). */
export class ChartPicker {
  readonly el: HTMLDivElement;
  readonly toggleButton: HTMLButtonElement;
  private readonly selects = new Map<PickerField, HTMLSelectElement>();
  private readonly controls: HTMLDivElement;
  private readonly status: HTMLDivElement;
  private readonly slot: HTMLDivElement;
  private chart: ChartView | null = null;
  private asked = false;
  private pending = false;
  private optionsKey = "";
  private limit: number | null = null; // the applied intent's: kept when a picker changes

  constructor(
    private readonly send: Send,
    private readonly table: string,
    private readonly loader: ChartLoader | null,
  ) {
    this.toggleButton = button("Chart", {
      testid: "gmchat-chart-button",
      aria: "Chart this result",
      onClick: () => this.toggle(),
    });
    this.toggleButton.setAttribute("aria-expanded", "false");
    this.controls = h("div", { cls: "gmchat-chart-pickers", testid: "gmchat-chart-pickers", attrs: { role: "group", "aria-label": "Chart settings" } });
    this.status = h("div", { cls: "gmchat-chart-status", testid: "gmchat-chart-picker-status", attrs: { role: "status" } });
    this.slot = h("div", { cls: "gmchat-chart-slot" });
    this.el = h("div", { cls: "gmchat-table-chart", testid: "gmchat-table-chart", attrs: { hidden: true } }, [this.controls, this.status, this.slot]);
  }

  /** The Chart button: show (the first time: ask for the suggested chart) or hide the chart. */
  toggle(): void {
    const open = this.el.hidden;
    this.el.hidden = !open;
    this.toggleButton.setAttribute("aria-expanded", String(open));
    if (open && !this.asked) this.request(null);
  }

  private request(intent: ChartIntent | null): void {
    this.asked = true;
    this.pending = true;
    this.el.setAttribute("aria-busy", "true");
    for (const select of this.selects.values()) select.disabled = true;
    this.status.classList.remove("gmchat-bad");
    this.status.textContent = intent ? "drawing\u2026" : "suggesting a chart\u2026";
    const msg: ClientMessage = { type: "chart_request", table: this.table };
    if (intent) msg.intent = intent;
    this.send(msg);
  }

  /** The intent the pickers say (empty pickers left out). */
  private intent(): ChartIntent {
    const intent: Record<string, string> = {};
    for (const { field } of PICKERS) {
      const value = this.selects.get(field)?.value ?? NONE;
      if (value !== NONE) intent[field] = value;
    }
    // (a suggested chart of many categories keeps its largest: the same when a picker changes)
    return (this.limit === null ? intent : { ...intent, limit: this.limit }) as ChartIntent;
  }

  /** A `chart_options` answer: the pickers (built once), the chart or why there is none. */
  onOptions(msg: ChartOptionsMessage): void {
    this.pending = false;
    this.el.removeAttribute("aria-busy");
    this.buildPickers(msg);
    const chart = isObject(msg.chart) ? msg.chart : null;
    const intent = isObject(msg.intent) ? msg.intent : chart && isObject(chart.intent) ? chart.intent : null;
    if (intent) {
      this.setPickers(intent as Record<string, unknown>);
      this.limit = typeof intent.limit === "number" && Number.isSafeInteger(intent.limit) && intent.limit > 0 ? intent.limit : null;
    }
    for (const select of this.selects.values()) select.disabled = false;
    this.chart?.dispose();
    this.chart = null;
    const error = isObject(msg.error) ? msg.error : null;
    if (error) {
      this.status.classList.add("gmchat-bad");
      this.status.textContent = errorText(error);
    } else if (chart) {
      this.status.classList.remove("gmchat-bad");
      this.status.textContent = "";
      this.chart = new ChartView(chart, this.loader);
      this.slot.append(this.chart.el);
    } else {
      this.status.classList.remove("gmchat-bad");
      this.status.textContent = "No chart suits these columns by itself: pick a mark and the columns.";
    }
  }

  private buildPickers(msg: ChartOptionsMessage): void {
    const columns = (Array.isArray(msg.columns) ? msg.columns : []).filter(isObject).map((column) => ({
      name: String(column.name ?? ""),
      kind: String(column.kind ?? ""),
    }));
    const choices: Record<PickerField, { value: string; label: string; disabled: boolean }[]> = {
      mark: texts(msg.marks).map((mark) => ({ value: mark, label: mark, disabled: false })),
      x: [],
      y: [],
      color: [],
      aggregate: texts(msg.aggregates).map((name) => ({ value: name, label: name, disabled: false })),
    };
    for (const column of columns) {
      // a to-many column ("list") cannot be charted: shown, not chosen
      const choice = { value: column.name, label: column.kind === "list" ? `${column.name} (list)` : column.name, disabled: column.kind === "list" };
      choices.x.push(choice);
      choices.y.push(choice);
      choices.color.push(choice);
    }
    const key = JSON.stringify(choices);
    if (key === this.optionsKey) return;
    this.optionsKey = key;
    const keep: Record<string, unknown> | null = this.selects.size ? { ...this.intent() } : null;
    this.selects.clear();
    this.controls.replaceChildren(
      ...PICKERS.map(({ field, label, none }) => {
        const select = h(
          "select",
          {
            cls: "gmchat-chart-select",
            testid: `gmchat-chart-${field}`,
            attrs: { "aria-label": `Chart ${label.toLowerCase()}` },
            on: { change: () => this.request(this.intent()) },
          },
          [
            none ? h("option", { text: "\u2014", attrs: { value: NONE } }) : null,
            ...choices[field].map((choice) => h("option", { text: choice.label, attrs: { value: choice.value, disabled: choice.disabled } })),
          ],
        );
        this.selects.set(field, select);
        return h("label", { cls: "gmchat-chart-picker" }, [h("span", { text: label }), select]);
      }),
    );
    if (keep) this.setPickers(keep);
  }

  private setPickers(intent: Record<string, unknown>): void {
    for (const { field, none } of PICKERS) {
      const select = this.selects.get(field);
      if (!select) continue;
      const value = intent[field];
      const wanted = typeof value === "string" ? value : NONE;
      if ([...select.options].some((option) => option.value === wanted)) select.value = wanted;
      else if (none) select.value = NONE;
    }
  }

  /** The other side refused something: leave no picker waiting. */
  unblock(): void {
    if (!this.pending) return;
    this.pending = false;
    this.el.removeAttribute("aria-busy");
    for (const select of this.selects.values()) select.disabled = false;
    if (this.status.textContent?.endsWith("\u2026")) this.status.textContent = "";
  }

  dispose(): void {
    this.chart?.dispose();
    this.chart = null;
  }
}
