/**
 * Planned turns, pure helpers: task states and reasons, the plan's coverage and the partial
 * answer's banner text, calculations and their inputs.
 *
 * A planned (orchestrated) turn's tool events carry `task_id` (and a query's result its
 * `evidence_id`); its `done` event carries `orchestration`: the plan's tasks, its coverage, the
 * unresolved tasks' reasons and the engine's calculations. Every field is optional and may come
 * from a model (objectives) or the data (group names): it is shown as text only.
 */

import { formatCell, isObject, plural, wholeNumber } from "./format";
import type { Calculation, Orchestration, PlanTask } from "./protocol";

const TASK_STATES = {
  pending: { symbol: "\u25cb", label: "pending" },
  running: { symbol: "\u2026", label: "running" },
  resolved: { symbol: "\u2713", label: "resolved" },
  blocked: { symbol: "\u2715", label: "blocked" },
  budget_exhausted: { symbol: "\u29d7", label: "budget exhausted" },
} as const;

export type TaskState = keyof typeof TASK_STATES | "unknown";

// The stable reasons of an unresolved task, in the words a reader of the answer needs.
const REASON_TEXTS: Readonly<Record<string, string>> = {
  invalid_plan: "no safe plan could be made for it",
  manager_unresolved: "no matching data found",
  dependency_blocked: "a task it depends on failed",
  budget_exhausted: "reached its execution limit",
  deadline_exceeded: "reached its time limit",
  provider_failed: "the model failed",
  synthesis_failed: "no grounded answer could be written from its data",
};

/** A task's status as one of the known states (for classes and attributes), else `unknown`. */
export function taskState(status: unknown): TaskState {
  return typeof status === "string" && Object.hasOwn(TASK_STATES, status) ? (status as keyof typeof TASK_STATES) : "unknown";
}

/** A task status in words, with a symbol that does not rely on colour: `✓ resolved`. */
export function taskStateText(status: unknown): string {
  const state = taskState(status);
  if (state !== "unknown") return `${TASK_STATES[state].symbol} ${TASK_STATES[state].label}`;
  return `? ${typeof status === "string" && status ? status : "unknown"}`;
}

/** Why a task is unresolved, in plain words (an unknown reason: "could not be completed"). */
export function reasonText(reason: unknown): string {
  return typeof reason === "string" && Object.hasOwn(REASON_TEXTS, reason) ? (REASON_TEXTS[reason] as string) : "could not be completed";
}

/** The plan's tasks that are objects (a malformed entry is left out). */
export function planTasks(orchestration: Orchestration | null | undefined): PlanTask[] {
  const tasks = orchestration && Array.isArray(orchestration.tasks) ? (orchestration.tasks as unknown[]) : [];
  return tasks.filter(isObject) as PlanTask[];
}

/** The plan's calculations that are objects. */
export function planCalculations(orchestration: Orchestration | null | undefined): Calculation[] {
  const items = orchestration && Array.isArray(orchestration.calculations) ? (orchestration.calculations as unknown[]) : [];
  return items.filter(isObject) as Calculation[];
}

function coverageOf(orchestration: Orchestration | null | undefined): { resolved: number; total: number } {
  const coverage = orchestration && typeof orchestration.coverage === "object" ? orchestration.coverage : null;
  const tasks = planTasks(orchestration);
  if (coverage && Number.isFinite(Number(coverage.total))) {
    return { resolved: wholeNumber(coverage.resolved), total: wholeNumber(coverage.total) };
  }
  return { resolved: tasks.filter((task) => task.status === "resolved").length, total: tasks.length };
}

/** The coverage of a plan: `1 of 2 tasks resolved` (its `coverage`, else counted from its tasks). */
export function coverageText(orchestration: Orchestration | null | undefined): string {
  const { resolved, total } = coverageOf(orchestration);
  return `${resolved} of ${plural(total, "task")} resolved`;
}

/** The banner of a partial answer: `Partial answer: 1 of 2 parts of the question could be answered.` */
export function partialText(orchestration: Orchestration | null | undefined): string {
  const { resolved, total } = coverageOf(orchestration);
  return `Partial answer: ${resolved} of ${plural(total, "part")} of the question could be answered.`;
}

/** True when the plan says the answer covers only part of the question. */
export function isPartial(orchestration: unknown): boolean {
  return Boolean(orchestration && typeof orchestration === "object" && (orchestration as Orchestration).status === "partial");
}

export interface UnresolvedTask {
  taskId: string;
  reason: string;
  objective: string;
}

/**
 * The unresolved tasks with their reason and objective: `unresolved` as the spec gives it,
 * completed from the task list (a task that is not resolved and not listed still counts).
 */
export function unresolvedTasks(orchestration: Orchestration | null | undefined): UnresolvedTask[] {
  const tasks = planTasks(orchestration);
  const byId = new Map(tasks.map((task) => [String(task.task_id ?? ""), task]));
  const listed = orchestration && Array.isArray(orchestration.unresolved) ? (orchestration.unresolved as unknown[]) : [];
  const out = new Map<string, UnresolvedTask>();
  for (const item of listed) {
    if (!item || typeof item !== "object") continue;
    const entry = item as { task_id?: unknown; reason?: unknown };
    const taskId = String(entry.task_id ?? "");
    const task = byId.get(taskId);
    out.set(taskId, { taskId, reason: String(entry.reason ?? task?.reason ?? ""), objective: String(task?.objective ?? "") });
  }
  for (const task of tasks) {
    const taskId = String(task.task_id ?? "");
    if (task.status === "resolved" || out.has(taskId) || !task.reason) continue;
    out.set(taskId, { taskId, reason: String(task.reason), objective: String(task.objective ?? "") });
  }
  return [...out.values()];
}

/** A JSON path as one line: `["data", 0, "unitPrice"]` is `data[0].unitPrice`. */
export function formatPath(path: unknown): string {
  if (!Array.isArray(path)) return formatCell(path);
  let out = "";
  for (const part of path as unknown[]) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out ? `.${formatCell(part)}` : formatCell(part);
  }
  return out;
}

/** A calculation's result as shown: its `text`, else its value and unit. */
export function calculationResult(calculation: { text?: unknown; value?: unknown; unit?: unknown } | null | undefined): string {
  if (!calculation || typeof calculation !== "object") return "";
  if (typeof calculation.text === "string" && calculation.text) return calculation.text;
  const value = formatCell(calculation.value);
  return calculation.unit ? `${value} ${formatCell(calculation.unit)}` : value;
}

/** How many of a calculation's inputs are not listed (`input_count` counts them all). */
export function hiddenInputs(calculation: Calculation | null | undefined): number {
  const shown = Array.isArray(calculation?.inputs) ? (calculation.inputs as unknown[]).length : 0;
  return Math.max(0, wholeNumber(calculation?.input_count) - shown);
}
