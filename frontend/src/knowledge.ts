/**
 * Knowledge in the view, the pure part: the recall step's text ("Recalled 2 verified queries,
 * 1 definition"), a trusted answer's label ("Verified query: <name>"), whether a finished turn ran
 * a query worth saving, entries and refusals as text, and `KnowledgeClient`, which pairs each
 * knowledge request with its answer by the `request` id (the kernel and the server transport echo
 * it). The forms and the knowledge view (knowledge-forms.ts, knowledge-view.ts) build on it.
 */

import { isObject } from "./format";
import type {
  KnowledgeEntry,
  KnowledgeMessage,
  KnowledgeProblem,
  KnowledgeRequest,
  RecallItem,
} from "./protocol";

/** The kinds in the order a summary names them: [label, one, many]. */
const KINDS: ReadonlyArray<readonly [string, string, string, string]> = [
  ["verified_query", "Verified query", "verified query", "verified queries"],
  ["definition", "Definition", "definition", "definitions"],
  ["note", "Note", "note", "notes"],
];

/** "Verified query", "Definition", "Note" (another kind as it came). */
export function kindLabel(kind: unknown): string {
  const known = KINDS.find(([name]) => name === kind);
  return known ? known[1] : String(kind ?? "entry");
}

/** The recall event's items that are objects, each with its fields as the view shows them. */
export function recallItems(value: unknown): RecallItem[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isObject).map((item) => ({
    kind: String(item.kind ?? ""),
    id: String(item.id ?? ""),
    name: String(item.name ?? ""),
    score: typeof item.score === "number" && Number.isFinite(item.score) ? item.score : undefined,
  }));
}

/**
 * The recall step's line: "Recalled 2 verified queries, 1 definition" (kinds in a fixed order),
 * "Nothing recalled" when recall ran and found nothing relevant.
 */
export function recallSummary(items: readonly RecallItem[]): string {
  if (!items.length) return "Nothing recalled";
  const parts: string[] = [];
  for (const [kind, , one, many] of KINDS) {
    const count = items.filter((item) => item.kind === kind).length;
    if (count) parts.push(`${count} ${count === 1 ? one : many}`);
  }
  const other = items.filter((item) => !KINDS.some(([kind]) => kind === item.kind)).length;
  if (other) parts.push(`${other} ${other === 1 ? "entry" : "entries"}`);
  return `Recalled ${parts.join(", ")}`;
}

/** A recall score as shown beside its entry ("0.033"; "" when there is none). */
export function scoreText(score: unknown): string {
  return typeof score === "number" && Number.isFinite(score) ? score.toFixed(3) : "";
}

/** "Verified query: <name>" for a `done.trusted`, else null (absent, or no name to show). */
export function trustedLabel(trusted: unknown): string | null {
  if (!isObject(trusted)) return null;
  const name = typeof trusted.name === "string" ? trusted.name.trim() : "";
  return name ? `Verified query: ${name}` : null;
}

/**
 * Whether a turn's events hold a `query` that returned data (not an error): what **Save as
 * verified query** saves (core/knowledge/from_turn.py keeps the same calls).
 */
export function ranQuery(events: readonly unknown[]): boolean {
  const calls = new Set<string>();
  for (const event of events) {
    if (!isObject(event) || event.name !== "query") continue;
    if (event.type === "tool_call") calls.add(String(event.id));
    else if (event.type === "tool_result" && calls.has(String(event.id))) {
      const result = event.result;
      if (!(isObject(result) && (result.status === "error" || result.status === "cancelled"))) return true;
    }
  }
  return false;
}

/** The entries of an answer's `items` that have an id. */
export function entriesOf(value: unknown): KnowledgeEntry[] {
  if (!Array.isArray(value)) return [];
  return value.filter((item): item is KnowledgeEntry => isObject(item) && typeof item.id === "string" && item.id !== "");
}

/** What an entry says beside its name: a verified query's question, a definition's or note's text. */
export function entryBody(entry: KnowledgeEntry): string {
  return String((entry.kind === "verified_query" ? entry.question : entry.text) ?? "");
}

/** A refusal as the person reads it (the server's sentence, else what went wrong). */
export function problemText(problem: KnowledgeProblem | null | undefined): string {
  const message = typeof problem?.message === "string" ? problem.message.trim() : "";
  if (message) return message;
  return problem?.code ? `The knowledge request failed (${problem.code}).` : "The knowledge request failed.";
}

/** How long a request waits for its answer before it says there was none. */
export const KNOWLEDGE_TIMEOUT_MS = 30_000;

/** A knowledge request without its `request` id (the client adds one). */
export type KnowledgeAsk = KnowledgeRequest extends infer R ? (R extends unknown ? Omit<R, "request"> : never) : never;

/** The answer to a request: the `knowledge` message, `error` set when it was refused. */
export type KnowledgeAnswer = KnowledgeMessage;

/**
 * Sends knowledge requests and hands each its answer. `send` may throw (the view cannot reach
 * the kernel or server): the answer is then an `unavailable` error, as it is when none comes in
 * `timeoutMs` (an older kernel that does not know the request answers a plain `error`).
 */
export class KnowledgeClient {
  private next = 0;
  private readonly pending = new Map<string, { resolve: (answer: KnowledgeAnswer) => void; timer: ReturnType<typeof setTimeout> }>();
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly send: (msg: KnowledgeRequest) => void,
    private readonly timeoutMs = KNOWLEDGE_TIMEOUT_MS,
  ) {}

  /** Ask; the promise never rejects (a failure is an answer with `error`). */
  ask(request: KnowledgeAsk): Promise<KnowledgeAnswer> {
    const id = `k${++this.next}-${Date.now().toString(36)}`;
    return new Promise<KnowledgeAnswer>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ type: "knowledge", request: id, error: { code: "no_answer", message: "No answer to the knowledge request: is the kernel (or server) running this version of gmchat_nb?" } });
      }, this.timeoutMs);
      this.pending.set(id, { resolve, timer });
      try {
        this.send({ ...request, request: id } as KnowledgeRequest);
      } catch (error) {
        const reason = error instanceof Error && error.message ? error.message : String(error);
        this.settle({ type: "knowledge", request: id, error: { code: "unavailable", message: `Could not send the knowledge request: ${reason}` } });
      }
    });
  }

  /** An answer arrived: the request that asked gets it; a write tells the listeners. */
  receive(msg: KnowledgeMessage): void {
    if (this.settle(msg) && !msg.error && msg.items === undefined) for (const listener of [...this.listeners]) listener();
  }

  /** Call `listener` after every successful write (the knowledge view lists again). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Answer every waiting request with `unavailable` (the view is going away). */
  dispose(): void {
    for (const [id, { resolve, timer }] of this.pending) {
      clearTimeout(timer);
      resolve({ type: "knowledge", request: id, error: { code: "unavailable", message: "The view was closed." } });
    }
    this.pending.clear();
    this.listeners.clear();
  }

  private settle(msg: KnowledgeMessage): boolean {
    const id = typeof msg.request === "string" ? msg.request : "";
    const waiting = this.pending.get(id);
    if (!waiting) return false;
    this.pending.delete(id);
    clearTimeout(waiting.timer);
    waiting.resolve(msg);
    return true;
  }
}
