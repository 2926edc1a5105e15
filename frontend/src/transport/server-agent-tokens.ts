/**
 * The side panel's agent-token requests over the server extension's routes (docs/server.md,
 * "Agent tokens"), below the chat's url:
 *
 * - `list()` -> `GET agent-tokens/` (`{tokens}`, newest first, revoked and expired ones included)
 * - `create()` -> `POST agent-tokens/` (`{token, secret}`: the secret is in this answer only)
 * - `revoke()` -> `DELETE agent-tokens/{id}` (`{token}`, now revoked)
 *
 * Only a person's browser session may use these routes: the panel's fetch for them sends the
 * session cookie and the XSRF header and no Jupyter token (lab/panel.ts). A refusal's JSON
 * `{type: "error", code, message}` becomes the answer's `error` as it is; a server without these
 * routes (an older gmchat_nb: a 404 that is not JSON) or one that cannot be reached gets a sentence
 * that says so. Nothing here throws.
 */

import { type AgentToken, type AgentTokenProblem, type AgentTokenRequest, tokenOf, tokensOf } from "../agent-tokens";
import { isObject } from "../format";

/** Fetch `path` relative to the chat routes' URL (server.ts's `Fetcher`). */
type Fetch = (path: string, init?: RequestInit) => Promise<Response>;

/** What a request got: its value, or the problem to show. */
export type AgentTokenAnswer<T> = { ok: true; value: T } | { ok: false; error: AgentTokenProblem };

export const NO_AGENT_TOKEN_ROUTES =
  "This Jupyter server's gmchat has no agent-token routes: update gmchat_nb in the environment that runs Jupyter, then restart it.";

async function readBody(response: Response): Promise<unknown> {
  try {
    const text = await response.text();
    return text ? (JSON.parse(text) as unknown) : null;
  } catch {
    return null; // not JSON: not an answer of the agent-token routes
  }
}

/** What a refused request's answer says. */
export function agentTokenRefusal(status: number, answer: unknown): AgentTokenProblem {
  if (isObject(answer) && typeof answer.message === "string" && answer.message.trim()) {
    return { code: typeof answer.code === "string" && answer.code ? answer.code : `http_${status}`, message: answer.message };
  }
  if (status === 404) return { code: "unavailable", message: NO_AGENT_TOKEN_ROUTES };
  if (status === 403) {
    return {
      code: "forbidden",
      message: "The Jupyter server refused the agent-token request (403): only your own browser session may manage agent tokens; log in again in this browser.",
    };
  }
  return { code: `http_${status}`, message: `The agent-token request failed (HTTP ${status}).` };
}

function unexpected(status: number): AgentTokenProblem {
  return { code: "unavailable", message: `The Jupyter server's answer (HTTP ${status}) is not an agent-token answer: ${NO_AGENT_TOKEN_ROUTES}` };
}

/** The agent-token routes of one server (see the module). */
export class AgentTokensClient {
  constructor(private readonly fetcher: Fetch) {}

  /** The person's tokens, newest first. */
  async list(): Promise<AgentTokenAnswer<AgentToken[]>> {
    return this.request({ method: "GET" }, "", (json, status) =>
      isObject(json) && Array.isArray(json.tokens) ? { ok: true, value: tokensOf(json.tokens) } : { ok: false, error: unexpected(status) },
    );
  }

  /** Create a token; its secret comes with it, this once. */
  async create(request: AgentTokenRequest): Promise<AgentTokenAnswer<{ token: AgentToken; secret: string }>> {
    const init = { method: "POST", body: JSON.stringify(request), headers: { "Content-Type": "application/json" } };
    return this.request(init, "", (json, status) => {
      const token = isObject(json) ? tokenOf(json.token) : null;
      const secret = isObject(json) && typeof json.secret === "string" ? json.secret : "";
      return token && secret ? { ok: true, value: { token, secret } } : { ok: false, error: unexpected(status) };
    });
  }

  /** Revoke a token: agents using it are refused from now on. */
  async revoke(id: string): Promise<AgentTokenAnswer<AgentToken>> {
    return this.request({ method: "DELETE" }, encodeURIComponent(id), (json, status) => {
      const token = isObject(json) ? tokenOf(json.token) : null;
      return token ? { ok: true, value: token } : { ok: false, error: unexpected(status) };
    });
  }

  private async request<T>(init: RequestInit, tail: string, read: (json: unknown, status: number) => AgentTokenAnswer<T>): Promise<AgentTokenAnswer<T>> {
    let response: Response;
    try {
      response = await this.fetcher(`agent-tokens/${tail}`, init);
    } catch (error) {
      const reason = error instanceof Error && error.message ? error.message : String(error);
      return { ok: false, error: { code: "unreachable", message: `Could not reach the Jupyter server: ${reason}` } };
    }
    const json = await readBody(response);
    if (!response.ok) return { ok: false, error: agentTokenRefusal(response.status, json) };
    return read(json, response.status);
  }
}
