/**
 * Evidence: the panel under a finished turn with one row per query (its GraphQL behind "Show
 * GraphQL", "Copy as code") and, for a planned turn, the engine's calculations with the inputs
 * they read and their groups. A host that can write into a notebook (the JupyterLab side panel)
 * passes `CellActions`: each row then also has "Insert as cell" and a name with "→ DataFrame".
 */

import { button, h } from "./dom";
import { formatCell, maybeJson, plural, prettyJson } from "./format";
import { calculationResult, formatPath, hiddenInputs } from "./planned";
import type { Calculation, CalculationGroup, CalculationInput, EvidenceRow } from "./protocol";

/** Copies text for a "Copy as code" button: `status` says "copied"; a fallback goes under `fallbackParent`. */
export type CopyText = (text: string, status: HTMLElement, fallbackParent: HTMLElement) => void;

/**
 * What a host that holds notebooks offers the evidence rows (the side panel; the widget has none).
 * `insertCell` puts `code` into a new code cell below the active cell of the active notebook and
 * returns null, or says why it could not (no notebook open).
 */
export interface CellActions {
  /** Why no cell can be inserted now (no notebook open), or null when one can. */
  unavailable(): string | null;
  insertCell(code: string): string | null;
}

const PYTHON_NAME = /^[\p{L}_][\p{L}\p{N}_]*$/u;
const FRAME_RESULT = /^frame = /m;

/**
 * A cell that binds a query's DataFrame to `name`: the row's code (which ends with `frame = await
 * project.frame(...)` and `frame`) with its last line bound to the name. Null when the code has
 * no `frame = ` line to bind.
 */
export function frameCellCode(code: string, name: string): string | null {
  const text = code.replace(/\s+$/, "");
  if (!FRAME_RESULT.test(text)) return null;
  const lines = text.split("\n");
  if (lines[lines.length - 1]?.trim() === "frame") lines.pop();
  return [...lines, `${name} = frame`, name].join("\n");
}

/** The GraphQL document and its variables, as shown by "Show GraphQL". */
function graphqlText(row: EvidenceRow): string {
  const variables = maybeJson(row.variables);
  const doc = String(row.document || "").trim();
  const vars = variables === undefined || variables === null || variables === "" ? "" : prettyJson(variables, 8000);
  return vars ? `${doc}\n\n# variables\n${vars}` : doc;
}

interface GridCell {
  text: string;
  cls?: string;
}

/** A small grid: a header row and rows of cell texts (numbers right-aligned). */
function smallGrid(columns: readonly string[], rows: readonly GridCell[][], testid: string): HTMLTableElement {
  return h("table", { cls: "gmchat-grid gmchat-small-grid", testid }, [
    h("thead", {}, [h("tr", {}, columns.map((c) => h("th", { text: c, attrs: { scope: "col" } })))]),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", { cls: cell.cls || "", text: cell.text }))))),
  ]);
}

function objects<T>(value: unknown): T[] {
  return (Array.isArray(value) ? (value as unknown[]) : []).filter((item) => item && typeof item === "object") as T[];
}

/**
 * One calculation of the engine: `task_1:calculation:2 · sum = 117.25 EUR`, the inputs it read
 * (evidence id, path, value; "and N more" for the ones not listed) and its groups.
 */
function calculationEntry(calculation: Calculation): HTMLDivElement {
  const evidenceId = formatCell(calculation.evidence_id);
  const inputs = objects<CalculationInput>(calculation.inputs);
  const groups = objects<CalculationGroup>(calculation.groups);
  const hidden = hiddenInputs(calculation);
  const total = Math.max(inputs.length + hidden, inputs.length);
  return h("div", { cls: "gmchat-calc", testid: "gmchat-calculation", attrs: { "data-evidence-id": evidenceId } }, [
    h("div", { cls: "gmchat-calc-head" }, [
      h("code", { cls: "gmchat-evidence-id", text: evidenceId }),
      h("span", { cls: "gmchat-calc-op", testid: "gmchat-calc-op", text: formatCell(calculation.operation) || "calculation" }),
      "=",
      h("strong", { cls: "gmchat-calc-result", testid: "gmchat-calc-result", text: calculationResult(calculation) }),
      calculation.task_id ? h("span", { cls: "gmchat-task-badge", text: formatCell(calculation.task_id) }) : null,
    ]),
    inputs.length
      ? h("div", { cls: "gmchat-label", text: `Inputs (${total})` })
      : h("div", { cls: "gmchat-muted", text: total ? `${plural(total, "input")}, not listed` : "no inputs" }),
    inputs.length
      ? smallGrid(
          ["Evidence", "Path", "Value"],
          inputs.map((item) => [
            { text: formatCell(item.evidence_id), cls: "gmchat-mono" },
            { text: formatPath(item.path), cls: "gmchat-mono" },
            { text: formatCell(item.value), cls: "gmchat-num" },
          ]),
          "gmchat-calc-inputs",
        )
      : null,
    inputs.length && hidden ? h("div", { cls: "gmchat-muted", testid: "gmchat-calc-more", text: `and ${hidden} more` }) : null,
    groups.length ? h("div", { cls: "gmchat-label", text: "Groups" }) : null,
    groups.length
      ? smallGrid(
          ["Group", "Result", "Count"],
          groups.map((group) => [
            { text: formatCell(group.group) },
            { text: calculationResult(group), cls: "gmchat-num" },
            { text: formatCell(group.count), cls: "gmchat-num" },
          ]),
          "gmchat-calc-groups",
        )
      : null,
  ]);
}

/**
 * The evidence of a finished turn: one row per query, with its GraphQL and "Copy as code", and
 * (a planned turn) the engine's calculations with the inputs they used.
 */
export class EvidencePanel {
  readonly el: HTMLDetailsElement;
  readonly count: number;

  constructor(
    private readonly copyText: CopyText,
    rows: readonly EvidenceRow[],
    calculations: readonly Calculation[] = [],
    private readonly cells: CellActions | null = null,
  ) {
    this.count = rows.length;
    // A planned turn's queries have evidence ids (what calculations and the answer cite).
    const ids = rows.some((row) => row && row.evidence_id);
    const columns = [...(ids ? ["Evidence"] : []), "Manager", "Filters", "Rows", "Total", "Complete", ""];
    const body = h("tbody");
    for (const row of rows) this.addRow(body, row, columns.length, ids);
    const parts: string[] = [];
    if (rows.length || !calculations.length) parts.push(`${rows.length} ${rows.length === 1 ? "query" : "queries"}`);
    if (calculations.length) parts.push(plural(calculations.length, "calculation"));
    this.el = h("details", { cls: "gmchat-evidence", testid: "gmchat-evidence" }, [
      h("summary", { text: `Evidence \u00b7 ${parts.join(" \u00b7 ")}` }),
      rows.length
        ? h("div", { cls: "gmchat-table-scroll" }, [
            h("table", { cls: "gmchat-grid" }, [
              h("thead", {}, [h("tr", {}, columns.map((c) => h("th", { cls: c === "Filters" ? "gmchat-filters" : "", text: c, attrs: { scope: "col" } })))]),
              body,
            ]),
          ])
        : null,
      calculations.length
        ? h("div", { cls: "gmchat-calcs" }, [h("div", { cls: "gmchat-label", text: "Calculations" }), ...calculations.map(calculationEntry)])
        : null,
    ]);
  }

  private addRow(body: HTMLTableSectionElement, row: EvidenceRow, span: number, ids: boolean): void {
    const filters = maybeJson(row.filters);
    const filterText = filters === null || filters === undefined || filters === "" ? "\u2014" : formatCell(filters);
    const graphql = h("pre", { cls: "gmchat-graphql", testid: "gmchat-graphql", text: graphqlText(row) });
    const detail = h("tr", { cls: "gmchat-graphql-row", attrs: { hidden: true } }, [h("td", { attrs: { colspan: span } }, [graphql])]);
    const toggle = button("Show GraphQL", { cls: "gmchat-link-btn", aria: "Show the GraphQL of this query" });
    toggle.setAttribute("aria-expanded", "false");
    toggle.setAttribute("data-testid", "gmchat-graphql-toggle");
    toggle.addEventListener("click", () => {
      const open = detail.hidden;
      detail.hidden = !open;
      toggle.setAttribute("aria-expanded", String(open));
      toggle.textContent = open ? "Hide GraphQL" : "Show GraphQL";
    });
    const copied = h("span", { cls: "gmchat-copied", attrs: { role: "status" } });
    const copy = button("Copy as code", { cls: "gmchat-link-btn", testid: "gmchat-copy", aria: "Copy this query as Python code" });
    const actions = h("td", { cls: "gmchat-actions" }, [toggle, copy, copied]);
    copy.addEventListener("click", () => this.copyText(String(row.code || ""), copied, actions));
    if (this.cells) actions.append(this.cellControls(this.cells, row));
    body.append(
      h("tr", {}, [
        ids ? h("td", { cls: "gmchat-mono", testid: "gmchat-evidence-row-id", text: formatCell(row.evidence_id) }) : null,
        h("td", { text: formatCell(row.manager) }),
        h("td", { cls: "gmchat-mono gmchat-filters", text: filterText }),
        h("td", { cls: "gmchat-num", text: formatCell(row.rows) }),
        h("td", { cls: "gmchat-num", text: formatCell(row.total_count) }),
        h("td", { text: row.complete === true ? "yes" : row.complete === false ? "no" : "\u2014" }),
        actions,
      ]),
      detail,
    );
  }

  /** "Insert as cell", and a name with "→ DataFrame" (a cell binding the result to it). */
  private cellControls(cells: CellActions, row: EvidenceRow): HTMLElement {
    const code = typeof row.code === "string" ? row.code : "";
    const status = h("span", { cls: "gmchat-cell-status", testid: "gmchat-cell-status", attrs: { role: "status" } });
    const say = (text: string, bad: boolean): void => {
      status.textContent = text;
      status.classList.toggle("gmchat-bad", bad);
    };
    const insert = (source: string | null, done: string): void => {
      const unavailable = cells.unavailable();
      if (unavailable !== null) return say(unavailable, true);
      if (!code) return say("The server sent no code for this query (its evidence route is missing: update gmchat_nb on the server).", true);
      if (source === null) return say("This query's code does not end in a DataFrame to bind.", true);
      const refused = cells.insertCell(source);
      say(refused ?? done, refused !== null);
    };
    const name = h("input", {
      cls: "gmchat-frame-name",
      testid: "gmchat-evidence-frame-name",
      attrs: { type: "text", placeholder: "variable name (optional)", "aria-label": "Variable name for the DataFrame", spellcheck: "false" },
    });
    const toFrame = (): void => {
      const chosen = name.value.trim() || "gm_frame";
      if (!PYTHON_NAME.test(chosen)) return say("not a valid Python name", true);
      insert(frameCellCode(code, chosen), `inserted a cell binding ${chosen}`);
    };
    name.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        toFrame();
      }
    });
    return h("div", { cls: "gmchat-cell-actions" }, [
      button("Insert as cell", {
        cls: "gmchat-link-btn",
        testid: "gmchat-insert-cell",
        aria: "Insert this query's code as a cell below the active notebook cell",
        onClick: () => insert(code, "inserted below the active cell"),
      }),
      name,
      button("\u2192 DataFrame", {
        cls: "gmchat-link-btn",
        testid: "gmchat-evidence-to-frame",
        aria: "Insert a cell that binds this result to a DataFrame variable",
        onClick: toFrame,
      }),
      status,
    ]);
  }
}
