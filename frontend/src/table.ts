/**
 * Result tables: a query's rows with sortable headers, a pager, "→ DataFrame" and **Chart**. The
 * first page comes with the table; other pages and sorted pages are asked for (`table_page`), a
 * DataFrame is bound in the kernel on request (`to_frame`), and a chart of the rows is asked for
 * (`chart_request`, chart-picker.ts).
 */

import type { ChartLoader } from "./chart";
import { ChartPicker } from "./chart-picker";
import { button, h } from "./dom";
import { cellValue, formatCell, sortRows } from "./format";
import type { ChartOptionsMessage, ClientMessage, FrameBoundMessage, TableData, TablePageMessage, TableSort } from "./protocol";

export type Send = (msg: ClientMessage) => void;

/** A query's result table: first page, sortable headers, pager, "→ DataFrame" and Chart. */
export class TableView {
  readonly key: string;
  readonly el: HTMLDivElement;
  private columns: string[];
  private rows: unknown[];
  private readonly pageSize: number;
  private total: number;
  private readonly totalCount: number;
  private readonly complete: boolean;
  private offset = 0;
  private sort: TableSort | null = null;
  private pending: { offset: number } | null = null;
  private readonly head: HTMLTableRowElement;
  private readonly body: HTMLTableSectionElement;
  private readonly prev: HTMLButtonElement;
  private readonly next: HTMLButtonElement;
  private readonly range: HTMLSpanElement;
  private readonly nameInput: HTMLInputElement;
  private readonly frameButton: HTMLButtonElement;
  private readonly bound: HTMLSpanElement;
  private readonly chart: ChartPicker;

  /**
   * @param send sends the table's requests
   * @param table the table and its first page
   * @param charts loads the chart library (null: the host draws no charts)
   */
  constructor(
    private readonly send: Send,
    table: TableData,
    charts: ChartLoader | null = null,
  ) {
    this.key = String(table.key);
    this.rows = Array.isArray(table.rows) ? table.rows : [];
    const columns = Array.isArray(table.columns) ? table.columns.map(String) : [];
    this.columns = columns.length ? columns : this.inferColumns();
    this.pageSize = Number(table.page_size) > 0 ? Number(table.page_size) : Math.max(this.rows.length, 25);
    this.total = typeof table.total_rows === "number" && Number.isFinite(table.total_rows) ? table.total_rows : this.rows.length;
    this.totalCount = typeof table.total_count === "number" && Number.isFinite(table.total_count) ? table.total_count : this.total;
    this.complete = table.complete !== false;

    const status = `${this.total} of ${this.totalCount} rows \u00b7 ${this.complete ? "complete" : "more available"}`;
    this.head = h("tr");
    this.body = h("tbody");
    this.prev = button("Prev", { aria: "Previous page", onClick: () => this.goTo(this.offset - this.pageSize) });
    this.next = button("Next", { aria: "Next page", onClick: () => this.goTo(this.offset + this.pageSize) });
    this.range = h("span", { cls: "gmchat-range" });
    this.nameInput = h("input", {
      cls: "gmchat-frame-name",
      testid: "gmchat-frame-name",
      attrs: { type: "text", placeholder: "variable name (optional)", "aria-label": "Variable name for the DataFrame", spellcheck: "false" },
      on: {
        keydown: (e) => {
          if (e.key === "Enter") {
            e.preventDefault();
            this.toFrame();
          }
        },
      },
    });
    this.frameButton = button("\u2192 DataFrame", {
      testid: "gmchat-to-frame",
      aria: "Bind this result to a DataFrame variable",
      onClick: () => this.toFrame(),
    });
    this.bound = h("span", { cls: "gmchat-frame-bound", testid: "gmchat-frame-bound", attrs: { role: "status" } });
    this.chart = new ChartPicker(send, this.key, charts);
    this.el = h("div", { cls: "gmchat-table", testid: "gmchat-table", attrs: { "data-table": this.key } }, [
      h("div", { cls: "gmchat-table-status" }, [
        table.manager ? h("strong", { text: String(table.manager) }) : null,
        table.manager ? " \u00b7 " : null,
        status,
      ]),
      h("div", { cls: "gmchat-table-scroll" }, [h("table", { cls: "gmchat-grid" }, [h("thead", {}, [this.head]), this.body])]),
      h("div", { cls: "gmchat-table-bar" }, [
        h("div", { cls: "gmchat-pager", testid: "gmchat-table-page", attrs: { role: "group", "aria-label": "Pages" } }, [
          this.prev,
          this.range,
          this.next,
        ]),
        h("div", { cls: "gmchat-frame" }, [this.chart.toggleButton, this.nameInput, this.frameButton, this.bound]),
      ]),
      this.chart.el,
    ]);
    this.renderRows();
  }

  private inferColumns(): string[] {
    const first = this.rows[0];
    return first && typeof first === "object" && !Array.isArray(first) ? Object.keys(first) : [];
  }

  private renderHead(): void {
    const sort = this.sort;
    this.head.replaceChildren(
      ...this.columns.map((column, index) => {
        const active = sort !== null && sort.column === column;
        // A numeric column's header sits above its right-aligned numbers.
        const sample = this.rows.map((row) => cellValue(row, this.columns, index)).find((v) => v !== null && v !== undefined);
        const numeric = typeof sample === "number";
        const arrow = active ? (sort.descending ? " \u25bc" : " \u25b2") : "";
        const sortState = active ? (sort.descending ? "descending" : "ascending") : "none";
        return h("th", { cls: numeric ? "gmchat-num" : "", attrs: { scope: "col", "aria-sort": sortState } }, [
          button(`${column}${arrow}`, {
            cls: "gmchat-sort",
            aria: `Sort by ${column}`,
            onClick: () => this.sortBy(column),
          }),
        ]);
      }),
    );
  }

  private renderRows(): void {
    this.renderHead();
    const rows = this.rows.map((row) =>
      h(
        "tr",
        {},
        this.columns.map((_, index) => {
          const value = cellValue(row, this.columns, index);
          const text = formatCell(value);
          const cls = value === null || value === undefined ? "gmchat-null" : typeof value === "number" ? "gmchat-num" : "";
          const cut = text.length > 200;
          return h("td", { cls, text: cut ? `${text.slice(0, 199)}\u2026` : text, attrs: { title: cut ? text : null } });
        }),
      ),
    );
    this.body.replaceChildren(...rows);
    const first = this.rows.length ? this.offset + 1 : 0;
    this.range.textContent = `${first}\u2013${this.offset + this.rows.length} of ${this.total}`;
    this.prev.disabled = this.offset <= 0 || Boolean(this.pending);
    this.next.disabled = this.offset + this.pageSize >= this.total || Boolean(this.pending);
  }

  /** All rows are on the page: sort locally; otherwise ask the kernel for a sorted first page. */
  private sortBy(column: string): void {
    const descending = Boolean(this.sort && this.sort.column === column && !this.sort.descending);
    this.sort = { column, descending };
    if (this.offset === 0 && this.rows.length >= this.total) {
      this.rows = sortRows(this.rows, this.columns, this.sort);
      this.renderRows();
    } else this.request(0);
  }

  private goTo(offset: number): void {
    if (offset < 0 || offset >= this.total) return;
    this.request(offset);
  }

  private request(offset: number): void {
    const msg: ClientMessage = { type: "table_page", table: this.key, offset, limit: this.pageSize };
    if (this.sort) msg.sort = { column: this.sort.column, descending: this.sort.descending };
    this.pending = { offset };
    this.el.setAttribute("aria-busy", "true");
    this.renderHead();
    this.prev.disabled = true;
    this.next.disabled = true;
    this.send(msg);
  }

  /** A `table_page` answer; pages this view did not ask for are ignored. */
  onPage(msg: TablePageMessage): void {
    if (!this.pending) return;
    this.pending = null;
    this.el.removeAttribute("aria-busy");
    this.offset = typeof msg.offset === "number" && Number.isFinite(msg.offset) ? msg.offset : 0;
    this.rows = Array.isArray(msg.rows) ? msg.rows : [];
    if (typeof msg.total === "number" && Number.isFinite(msg.total)) this.total = msg.total;
    this.renderRows();
  }

  private toFrame(): void {
    const name = this.nameInput.value.trim();
    if (name && !/^[\p{L}_][\p{L}\p{N}_]*$/u.test(name)) {
      this.bound.textContent = "not a valid Python name";
      this.bound.classList.add("gmchat-bad");
      return;
    }
    const msg: ClientMessage = { type: "to_frame", table: this.key };
    if (name) msg.name = name;
    this.frameButton.disabled = true;
    this.bound.classList.remove("gmchat-bad");
    this.bound.textContent = "binding\u2026";
    this.send(msg);
  }

  /** A `frame_bound` answer: "bound to `name` (rows × columns)". */
  onFrameBound(msg: FrameBoundMessage): void {
    this.frameButton.disabled = false;
    this.bound.classList.remove("gmchat-bad");
    const shape = Array.isArray(msg.shape) ? msg.shape : [];
    this.bound.replaceChildren(
      "bound to ",
      h("code", { text: String(msg.name || "") }),
      shape.length === 2 ? ` (${shape[0]} \u00d7 ${shape[1]})` : "",
    );
  }

  /** A `chart_options` answer for this table. */
  onChartOptions(msg: ChartOptionsMessage): void {
    this.chart.onOptions(msg);
  }

  /** Finalize the table's chart (its turn's view goes). */
  dispose(): void {
    this.chart.dispose();
  }

  /** The kernel refused something: leave no control stuck in its waiting state. */
  unblock(): void {
    this.chart.unblock();
    if (this.frameButton.disabled) {
      this.frameButton.disabled = false;
      if (this.bound.textContent === "binding\u2026") this.bound.textContent = "";
    }
    if (this.pending) {
      this.pending = null;
      this.el.removeAttribute("aria-busy");
      this.renderRows();
    }
  }
}
