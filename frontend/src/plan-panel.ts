/**
 * The plan panel of a planned turn (each task with its state, managers, dependencies and reason)
 * and the banner above a partial answer (how much of the question it covers, why the rest is
 * missing).
 */

import { h } from "./dom";
import { formatCell, plural } from "./format";
import { coverageText, isPartial, partialText, planTasks, reasonText, taskState, taskStateText, unresolvedTasks } from "./planned";
import type { Orchestration, PlanTask } from "./protocol";

function texts(value: unknown): string[] {
  return (Array.isArray(value) ? (value as unknown[]) : []).map(formatCell).filter(Boolean);
}

function planTask(task: PlanTask, reasons: Map<string, string>): HTMLLIElement {
  const taskId = formatCell(task.task_id);
  const state = taskState(task.status);
  const managers = texts(task.managers);
  const after = texts(task.depends_on);
  const reason = task.reason || (state !== "resolved" ? reasons.get(taskId) : "");
  return h("li", { cls: "gmchat-plan-task", testid: "gmchat-plan-task", attrs: { "data-task": taskId, "data-status": state } }, [
    h("div", { cls: "gmchat-plan-task-head" }, [
      h("span", { cls: `gmchat-task-state gmchat-task-${state}`, testid: "gmchat-task-state", text: taskStateText(task.status) }),
      h("code", { cls: "gmchat-task-id", text: taskId }),
      h("span", { cls: "gmchat-task-objective", testid: "gmchat-task-objective", text: formatCell(task.objective) }),
    ]),
    h("div", { cls: "gmchat-task-meta" }, [
      h("span", { text: managers.length ? `managers: ${managers.join(", ")}` : "no manager found" }),
      after.length ? h("span", { text: `after ${after.join(", ")}` }) : null,
    ]),
    reason
      ? h("div", { cls: "gmchat-task-reason", testid: "gmchat-task-reason", text: `${reasonText(reason)} (${formatCell(reason)})` })
      : null,
  ]);
}

/** A planned turn's plan: each task with its state, managers, dependencies and reason. */
export class PlanPanel {
  readonly el: HTMLDetailsElement;

  /** @param orchestration the `done` event's `orchestration` */
  constructor(orchestration: Orchestration) {
    const tasks = planTasks(orchestration);
    const reasons = new Map(unresolvedTasks(orchestration).map((item) => [item.taskId, item.reason]));
    const partial = isPartial(orchestration);
    const requests = orchestration.requests && typeof orchestration.requests === "object" ? orchestration.requests : null;
    const requestText = requests
      ? Object.entries(requests)
          .map(([role, n]) => `${role} ${formatCell(n)}`)
          .join(" \u00b7 ")
      : "";
    this.el = h(
      "details",
      {
        cls: "gmchat-plan",
        testid: "gmchat-plan",
        // A partial plan opens: what could not be answered is why the reader looks at it.
        attrs: { "data-status": partial ? "partial" : "complete", open: partial },
      },
      [
        h("summary", {}, [
          h("span", { cls: "gmchat-plan-title", text: "Plan" }),
          h("span", { text: plural(tasks.length, "task") }),
          h("span", { cls: "gmchat-plan-coverage", testid: "gmchat-plan-coverage", text: coverageText(orchestration) }),
          partial ? h("span", { cls: "gmchat-plan-partial", text: "partial" }) : null,
        ]),
        h("ol", { cls: "gmchat-plan-tasks" }, tasks.map((task) => planTask(task, reasons))),
        requestText ? h("div", { cls: "gmchat-muted gmchat-plan-requests", text: `model requests: ${requestText}` }) : null,
      ],
    );
  }
}

/** Above a partial answer: how much of the question it covers and why the rest is missing. */
export function partialBanner(orchestration: Orchestration): HTMLDivElement {
  const missing = unresolvedTasks(orchestration);
  return h("div", { cls: "gmchat-partial", testid: "gmchat-partial", attrs: { role: "note" } }, [
    h("strong", { text: partialText(orchestration) }),
    missing.length
      ? h(
          "ul",
          {},
          missing.map((item) =>
            h("li", {}, [h("code", { text: item.taskId }), item.objective ? ` ${item.objective}` : "", `: ${reasonText(item.reason)}`]),
          ),
        )
      : null,
  ]);
}
