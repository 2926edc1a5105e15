/**
 * Tool cards: one tool step of a turn as a compact `<details>` card (its arguments, status,
 * duration, result or result table, a planned turn's task and evidence id, and the result's
 * suspicious-text flags).
 */

import { h } from "./dom";
import { formatCell, formatDuration, isQueryTool, prettyJson, querySummary, summarizeArgs, toolOutcome } from "./format";
import { flagReasonText, flagText, flagsLabel, resultFlags } from "./guards";
import type { ToolResultEvent } from "./protocol";
import type { TableView } from "./table";

export type ToolStatus = "running" | "ok" | "error" | "cancelled" | "stopped";

/** What a card is built from: a `tool_call` event, or a stand-in for a result whose call was not seen. */
export interface ToolCallInfo {
  id: string;
  name?: string;
  args?: unknown;
  task_id?: string | null;
}

/**
 * One tool step as a compact `<details>` card. Its duration is the kernel's measure of the tool's
 * own run (the result's `duration_ms`), not the time between two messages reaching the browser,
 * which would add the round's other tools and the kernel's own pauses.
 */
export class ToolCard {
  readonly id: string;
  readonly name: string;
  readonly el: HTMLDetailsElement;
  private status: ToolStatus = "running";
  private readonly statusEl: HTMLSpanElement;
  private readonly durationEl: HTMLSpanElement;
  private readonly resultEl: HTMLDivElement;
  private readonly flagsEl: HTMLDivElement;
  private flagsBadge: HTMLSpanElement | null = null;
  private readonly tableSlot: HTMLDivElement;
  private taskEl: HTMLSpanElement | null = null;
  private evidenceEl: HTMLElement | null = null;
  private readonly summaryEl: HTMLElement;

  constructor(call: ToolCallInfo) {
    this.id = String(call.id);
    this.name = String(call.name || "tool");
    this.statusEl = h("span", { cls: "gmchat-tool-status", text: "running\u2026" });
    this.durationEl = h("span", { cls: "gmchat-tool-duration", testid: "gmchat-tool-duration" });
    this.resultEl = h("div", { cls: "gmchat-tool-result" });
    this.flagsEl = h("div", { cls: "gmchat-tool-flags" });
    this.tableSlot = h("div", { cls: "gmchat-tool-table" });
    const summary = summarizeArgs(this.name, call.args);
    this.summaryEl = h("summary", {}, [
      h("span", { cls: "gmchat-tool-name", text: this.name }),
      h("span", { cls: "gmchat-tool-args", text: summary, attrs: { title: summary } }),
      this.statusEl,
      this.durationEl,
    ]);
    this.el = h(
      "details",
      { cls: "gmchat-tool", testid: "gmchat-tool", attrs: { "data-tool": this.name, "data-status": "running" } },
      [
        this.summaryEl,
        h("div", { cls: "gmchat-tool-body" }, [
          this.flagsEl,
          this.resultEl,
          this.tableSlot,
          h("div", { cls: "gmchat-label", text: "Arguments" }),
          h("pre", { cls: "gmchat-json", text: prettyJson(call.args ?? {}) }),
        ]),
      ],
    );
    this.setTask(call.task_id);
  }

  /** A planned turn's step: a badge naming its task before the tool's name (others get none). */
  setTask(taskId: unknown): void {
    if (typeof taskId !== "string" || !taskId || this.taskEl) return;
    this.taskEl = h("span", { cls: "gmchat-task-badge", testid: "gmchat-task-badge", text: taskId, attrs: { title: `Task ${taskId} of the plan` } });
    this.el.setAttribute("data-task", taskId);
    this.summaryEl.prepend(this.taskEl);
  }

  /** A planned query's evidence id (`task_1:query:1`), which the answer and calculations cite. */
  setEvidence(evidenceId: unknown): void {
    if (typeof evidenceId !== "string" || !evidenceId) return;
    if (!this.evidenceEl) {
      this.evidenceEl = h("code", { cls: "gmchat-evidence-id", testid: "gmchat-evidence-id", attrs: { title: "Evidence id" } });
      this.summaryEl.insertBefore(this.evidenceEl, this.durationEl);
    }
    this.evidenceEl.textContent = evidenceId;
  }

  private setStatus(status: ToolStatus, text?: string): void {
    this.status = status;
    this.el.setAttribute("data-status", status);
    this.statusEl.textContent = text || status;
    this.statusEl.className = `gmchat-tool-status gmchat-status-${status}`;
  }

  /** The tool's result arrived (with the kernel's `duration_ms` when the tool ran). */
  finish(event: ToolResultEvent): void {
    this.setTask(event.task_id);
    this.setEvidence(event.evidence_id);
    const duration = formatDuration(event.duration_ms);
    this.durationEl.textContent = duration;
    if (duration) this.durationEl.title = "time the tool ran in the kernel";
    const outcome = toolOutcome(event.result);
    const parts: Node[] = [];
    if (outcome.status === "error") {
      this.setStatus("error", `error \u00b7 ${outcome.code}`);
      parts.push(h("div", { cls: "gmchat-tool-error", attrs: { role: "note" } }, [h("code", { text: outcome.code }), ` ${outcome.message}`]));
    } else if (outcome.status === "cancelled") {
      this.setStatus("cancelled", `cancelled \u00b7 ${outcome.reason}`);
    } else if (isQueryTool(this.name)) {
      const summary = querySummary(event.result, event.frame);
      this.setStatus("ok", summary ? `ok \u00b7 ${summary}` : "ok");
      const result = event.result as { notes?: unknown } | null | undefined;
      const notes = result && Array.isArray(result.notes) ? (result.notes as unknown[]) : [];
      if (notes.length) parts.push(h("ul", { cls: "gmchat-notes" }, notes.map((note) => h("li", { text: formatCell(note) }))));
    } else {
      this.setStatus("ok", "ok");
      parts.push(h("div", { cls: "gmchat-label", text: "Result" }), h("pre", { cls: "gmchat-json", text: prettyJson(event.result, 6000) }));
    }
    this.resultEl.replaceChildren(...parts);
    this.setFlags(event.flags);
  }

  /**
   * Suspicious text in the result (its `flags`): a warning badge on the card, and in its body the
   * fields with their reasons and an excerpt. The card opens, so the list is in view.
   */
  private setFlags(flags: unknown): void {
    const items = resultFlags(flags);
    if (!items.length) return;
    const lines = items.map(flagText);
    if (!this.flagsBadge) {
      this.flagsBadge = h("span", { cls: "gmchat-flags-badge", testid: "flags" });
      this.summaryEl.insertBefore(this.flagsBadge, this.statusEl);
    }
    this.flagsBadge.textContent = flagsLabel(items.length);
    this.flagsBadge.title = lines.join("\n");
    this.el.setAttribute("data-flagged", String(items.length));
    this.flagsEl.replaceChildren(
      h("div", { cls: "gmchat-flags", testid: "flags-list", attrs: { role: "note" } }, [
        h("div", { cls: "gmchat-flags-title", text: "Suspicious text in this result: it is data, not instructions." }),
        h(
          "ul",
          {},
          items.map((item) =>
            h("li", { testid: "flag", attrs: { "data-path": item.path, "data-reasons": item.reasons.join(" ") } }, [
              h("code", { cls: "gmchat-flag-path", text: item.path }),
              h("span", { cls: "gmchat-flag-reasons", text: `: ${item.reasons.map(flagReasonText).join(", ")}` }),
              item.excerpt ? h("span", { cls: "gmchat-flag-excerpt", text: ` \u201c${item.excerpt}\u201d` }) : null,
            ]),
          ),
        ),
      ]),
    );
    this.el.open = true;
  }

  /** The turn ended while the tool was still running (stopped or failed). */
  abandon(): void {
    if (this.status === "running") this.setStatus("stopped", "stopped");
  }

  /** Show a query's result table; the card opens so the table is in view. */
  attachTable(view: TableView): void {
    this.tableSlot.replaceChildren(view.el);
    this.el.open = true;
  }
}
