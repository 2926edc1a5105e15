/**
 * Agent tokens in the side panel, the pure part: a token of the `{url}agent-tokens/` routes
 * (docs/server.md) read from their JSON, its scopes, state and times as the person reads them,
 * the create request (the name checked as the server checks it, the expiry choices), the
 * agents' MCP URL (`{origin}{base_url}gmchat/mcp`, fixed whatever the chat's `url`) and the MCP
 * client configuration shown once with the secret. The drawer (agent-tokens-view.ts) and the
 * routes' client (transport/server-agent-tokens.ts) build on it.
 */

import { isObject } from "./format";

/** `read`: the read tools; `propose`: also `mutate`, which only ever proposes a change. */
export type AgentTokenScope = "read" | "propose";

/** One token as the routes list it (the secret is never part of it). */
export interface AgentToken {
  id: string;
  name: string;
  /** the secret's first 12 characters, to recognise it ("gmat_AbCdEfG") */
  prefix: string;
  scopes: string[];
  created_at: number | null;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
  /** "active", "expired" or "revoked" (another value as it came) */
  state: string;
}

/** A refusal of the routes (`{type: "error", code, message}`) or what went wrong reaching them. */
export interface AgentTokenProblem {
  code: string;
  message: string;
}

/** What `POST agent-tokens/` takes. */
export interface AgentTokenRequest {
  name: string;
  scopes: AgentTokenScope[];
  /** 1..365, or null: it never expires */
  expires_in_days: number | null;
}

/** The longest name the server takes. */
export const NAME_MAX = 100;

/** The expiry choices of the create form, in its order (null: never). */
export const EXPIRY_CHOICES: ReadonlyArray<{ days: number | null; label: string }> = [
  { days: 7, label: "7 days" },
  { days: 30, label: "30 days" },
  { days: 90, label: "90 days" },
  { days: 365, label: "365 days" },
  { days: null, label: "Never" },
];

/** The server's default, chosen in the form. */
export const DEFAULT_EXPIRY_DAYS = 90;

function epoch(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** A token read from the routes' JSON (null: not one; every field checked, nothing trusted). */
export function tokenOf(value: unknown): AgentToken | null {
  if (!isObject(value) || typeof value.id !== "string" || !value.id) return null;
  return {
    id: value.id,
    name: String(value.name ?? ""),
    prefix: String(value.prefix ?? ""),
    scopes: Array.isArray(value.scopes) ? value.scopes.filter((scope): scope is string => typeof scope === "string") : [],
    created_at: epoch(value.created_at),
    expires_at: epoch(value.expires_at),
    last_used_at: epoch(value.last_used_at),
    revoked_at: epoch(value.revoked_at),
    state: typeof value.state === "string" && value.state ? value.state : "unknown",
  };
}

/** The tokens of a list answer's `tokens` (what is not a token is left out). */
export function tokensOf(value: unknown): AgentToken[] {
  if (!Array.isArray(value)) return [];
  return value.map(tokenOf).filter((token): token is AgentToken => token !== null);
}

/** The scopes asked for: read, and propose when the person allowed it. */
export function scopesFor(mayPropose: boolean): AgentTokenScope[] {
  return mayPropose ? ["read", "propose"] : ["read"];
}

/** "Read" or "Read, propose changes" (an unknown scope as it came). */
export function scopesText(scopes: readonly string[]): string {
  if (!scopes.length) return "No scopes";
  const names = scopes.map((scope) => (scope === "read" ? "read" : scope === "propose" ? "propose changes" : scope));
  const text = names.join(", ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** "Active", "Expired", "Revoked" (another state as it came). */
export function stateLabel(state: string): string {
  return state ? state.charAt(0).toUpperCase() + state.slice(1) : "Unknown";
}

/** The recognisable start of the secret: "gmat_AbCdEfG…" ("" when there is none). */
export function prefixText(prefix: string): string {
  return prefix ? `${prefix}\u2026` : "";
}

function pad(value: number): string {
  return String(value).padStart(2, "0");
}

/** Epoch seconds as local "2026-12-06 16:33"; `absent` when there is no time. */
export function timeText(seconds: number | null, absent = "\u2014"): string {
  if (seconds === null || !Number.isFinite(seconds)) return absent;
  const date = new Date(seconds * 1000);
  if (Number.isNaN(date.getTime())) return absent;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** The line under a token's name: created, expires (or never), last used (or never). */
export function tokenTimes(token: AgentToken): string {
  const expires = token.expires_at === null ? "never expires" : `${token.state === "expired" ? "expired" : "expires"} ${timeText(token.expires_at)}`;
  const used = token.last_used_at === null ? "never used" : `last used ${timeText(token.last_used_at)}`;
  const revoked = token.revoked_at === null ? "" : ` \u00b7 revoked ${timeText(token.revoked_at)}`;
  return `Created ${timeText(token.created_at)} \u00b7 ${expires} \u00b7 ${used}${revoked}`;
}

/** Why a name cannot be sent (the server's rule: not blank, at most 100 characters), else null. */
export function nameProblem(name: string): string | null {
  if (!name.trim()) return "Give the token a name (what uses it, e.g. \u201cClaude Code on my laptop\u201d).";
  if ([...name].length > NAME_MAX) return `The name is too long: at most ${NAME_MAX} characters.`;
  return null;
}

/** The create request for the form's values (the name as typed, trimmed). */
export function createRequest(name: string, mayPropose: boolean, expiresInDays: number | null): AgentTokenRequest {
  return { name: name.trim(), scopes: scopesFor(mayPropose), expires_in_days: expiresInDays };
}

/** The agents' MCP endpoint below the server's base URL (`https://host/base/` -> `…/base/gmchat/mcp`). */
export function mcpUrl(baseUrl: string): string {
  return `${baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`}gmchat/mcp`;
}

/** The MCP client configuration for this server and secret (docs/mcp.md), as JSON text. */
export function mcpConfig(url: string, secret: string): string {
  const config = { mcpServers: { gmchat: { type: "http", url, headers: { Authorization: `Bearer ${secret}` } } } };
  return JSON.stringify(config, null, 2);
}

/** A problem as the person reads it (the server's sentence, else what went wrong). */
export function problemText(problem: AgentTokenProblem | null | undefined): string {
  const message = typeof problem?.message === "string" ? problem.message.trim() : "";
  if (message) return message;
  return problem?.code ? `The agent-token request failed (${problem.code}).` : "The agent-token request failed.";
}
