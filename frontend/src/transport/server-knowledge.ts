/**
 * The side panel's knowledge requests over the server extension's routes (docs/server.md,
 * "Knowledge"), answered as the kernel answers the widget: one `knowledge` message per request,
 * its `request` id echoed.
 *
 * - `knowledge_list` -> `GET knowledge/?kind=&status=&search=` (`{items}`)
 * - `knowledge_save_turn` -> `POST knowledge/from-turn` with the conversation's and the turn's ids
 *   (the server takes the turn's calls from its journal)
 * - `knowledge_add` -> `POST knowledge/`; `knowledge_update` -> `PATCH knowledge/{id}`;
 *   `knowledge_remove` -> `DELETE knowledge/{id}` (204); `knowledge_accept` -> `POST knowledge/{id}/accept`
 *
 * A refusal's JSON `{type: "error", code, message, existing?}` becomes the answer's `error` as it
 * is; a server without these routes (an older gmchat_nb: a 404 that is not JSON) or one that cannot
 * be reached gets a sentence that says so.
 */

import type { JsonObject, KnowledgeMessage, KnowledgeProblem, KnowledgeRequest } from "../protocol";

/** Fetch `path` relative to the chat routes' URL, authenticated (server.ts's `Fetcher`). */
type Fetch = (path: string, init?: RequestInit) => Promise<Response>;

/** Where a turn of the view is on the server: its conversation and turn ids (null: unknown). */
export type TurnLocator = (index: number) => { conversationId: string; turnId: string } | null;

export const NO_KNOWLEDGE_ROUTES =
  "This Jupyter server's gmchat has no knowledge routes: update gmchat_nb in the environment that runs Jupyter, then restart it.";

function isObject(value: unknown): value is JsonObject {
  return Boolean(value) && typeof value === "object" && !Array.isArray(value);
}

/** The request's fields that are set (no `undefined` travels). */
function body(fields: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)));
}

function entryPath(id: string, tail = ""): string {
  return `knowledge/${encodeURIComponent(id)}${tail}`;
}

/** The route, method and body of a request (or the refusal when it cannot be sent). */
function route(msg: KnowledgeRequest, locate: TurnLocator): { path: string; init: RequestInit } | KnowledgeProblem {
  const json = (method: string, path: string, fields: Record<string, unknown>): { path: string; init: RequestInit } => ({
    path,
    init: { method, body: body(fields), headers: { "Content-Type": "application/json" } },
  });
  switch (msg.type) {
    case "knowledge_list": {
      const params = new URLSearchParams();
      for (const key of ["kind", "status", "search"] as const) {
        const value = msg[key];
        if (typeof value === "string" && value) params.set(key, value);
      }
      const query = params.toString();
      return { path: `knowledge/${query ? `?${query}` : ""}`, init: { method: "GET" } };
    }
    case "knowledge_save_turn": {
      const turn = locate(msg.turn);
      if (!turn) return { code: "not_found", message: "The panel does not know this turn on the server any more: open its conversation again." };
      const { name, question, scope, confirm_flagged } = msg;
      return json("POST", "knowledge/from-turn", { conversation_id: turn.conversationId, turn_id: turn.turnId, name, question, scope, confirm_flagged });
    }
    case "knowledge_add": {
      const { type: _type, request: _request, ...fields } = msg;
      return json("POST", "knowledge/", fields);
    }
    case "knowledge_update": {
      const { type: _type, request: _request, entry_id, ...fields } = msg;
      return json("PATCH", entryPath(entry_id), fields);
    }
    case "knowledge_remove":
      return { path: entryPath(msg.entry_id), init: { method: "DELETE" } };
    case "knowledge_accept":
      return json("POST", entryPath(msg.entry_id, "/accept"), { scope: msg.scope });
    default:
      return { code: "invalid", message: "Unknown knowledge request." };
  }
}

async function readBody(response: Response): Promise<unknown> {
  try {
    const text = await response.text();
    return text ? (JSON.parse(text) as unknown) : null;
  } catch {
    return null; // not JSON: not an answer of the knowledge routes
  }
}

/** What a refused request's answer says, in the view's error shape. */
export function refusalOf(status: number, answer: unknown): KnowledgeProblem {
  if (isObject(answer) && typeof answer.message === "string" && answer.message) {
    const problem: KnowledgeProblem = { code: typeof answer.code === "string" && answer.code ? answer.code : `http_${status}`, message: answer.message };
    if (typeof answer.existing === "string") problem.existing = answer.existing;
    return problem;
  }
  if (status === 404) return { code: "unavailable", message: NO_KNOWLEDGE_ROUTES };
  if (status === 403) {
    return { code: "forbidden", message: "The Jupyter server refused the knowledge request (403): log in again, or ask whoever runs it for permission." };
  }
  return { code: `http_${status}`, message: `The knowledge request failed (HTTP ${status}).` };
}

/** Send one knowledge request; its answer (never throws). */
export async function knowledgeOverHttp(fetcher: Fetch, msg: KnowledgeRequest, locate: TurnLocator): Promise<KnowledgeMessage> {
  const answer = (fields: Omit<KnowledgeMessage, "type" | "request">): KnowledgeMessage => ({ type: "knowledge", request: msg.request, ...fields });
  const target = route(msg, locate);
  if (!("path" in target)) return answer({ error: target });
  let response: Response;
  try {
    response = await fetcher(target.path, target.init);
  } catch (error) {
    const reason = error instanceof Error && error.message ? error.message : String(error);
    return answer({ error: { code: "unavailable", message: `Could not reach the Jupyter server: ${reason}` } });
  }
  const json = await readBody(response);
  if (!response.ok) return answer({ error: refusalOf(response.status, json) });
  if (msg.type === "knowledge_remove") return answer({ removed: msg.entry_id });
  if (msg.type === "knowledge_list") {
    if (!isObject(json) || !Array.isArray(json.items)) return answer({ error: { code: "unavailable", message: NO_KNOWLEDGE_ROUTES } });
    return answer({ items: json.items.filter(isObject) as unknown as KnowledgeMessage["items"] });
  }
  if (!isObject(json) || typeof json.id !== "string") return answer({ error: { code: "unavailable", message: NO_KNOWLEDGE_ROUTES } });
  return answer({ entry: json as unknown as KnowledgeMessage["entry"] });
}
