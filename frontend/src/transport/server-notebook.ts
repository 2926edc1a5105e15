/**
 * The side panel's **Export as notebook** over the server extension: the conversation as a
 * notebook from `GET conversations/{id}/notebook` (`application/x-ipynb+json`), written where the
 * host's `NotebookFiles` say (JupyterLab's contents API: lab/notebook-export.ts) under the first
 * name that is free (`Title.ipynb`, `Title 1.ipynb` …: nothing is written over), then opened.
 *
 * The name is the route's `Content-Disposition` filename (gmchat_nb/chat_export.py's
 * `notebook_filename` of the conversation's title, as the widget's kernel names it), checked
 * again by the same rule (`notebookFileName`), else made from the title the view knows.
 * Refusals come back as the outcome's `error`, in words: the route's own JSON, a server without
 * the route (an older gmchat_nb), one out of reach, an answer that is not a notebook, a folder
 * that cannot be written.
 */

import { type ExportOutcome, type ExportTarget, type NotebookExporter, NOTHING_TO_EXPORT, firstFreeName, notebookFileName } from "../notebook-export";
import type { ErrorInfo, JsonObject } from "../protocol";

/** Fetch `path` relative to the chat routes' URL, authenticated (server.ts's `Fetcher`). */
type Fetch = (path: string, init?: RequestInit) => Promise<Response>;

/** Where the host keeps files (JupyterLab's contents), by their paths below its root. */
export interface NotebookFiles {
  /** The folder the notebook goes into ("" is the root). */
  folder(): string;
  /** Whether `path` exists (throws when that cannot be told). */
  exists(path: string): Promise<boolean>;
  /** Write `notebook` (nbformat JSON) at `path`. */
  save(path: string, notebook: JsonObject): Promise<void>;
  /** Open `path` for the person. */
  open(path: string): Promise<void>;
}

export const NO_NOTEBOOK_ROUTE =
  "This Jupyter server's gmchat cannot export notebooks: update gmchat_nb in the environment that runs Jupyter, then restart it.";

function isObject(value: unknown): value is JsonObject {
  return Boolean(value) && typeof value === "object" && !Array.isArray(value);
}

function reasonOf(error: unknown): string {
  return error instanceof Error && error.message ? error.message : String(error);
}

/**
 * The file name a `Content-Disposition` header gives, without its folder (`filename*=UTF-8''…`
 * first, then `filename="…"`); "" when it gives none.
 */
export function dispositionName(header: string | null | undefined): string {
  if (!header) return "";
  let name = "";
  const extended = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(header);
  if (extended?.[1]) {
    try {
      name = decodeURIComponent(extended[1].trim());
    } catch {
      name = "";
    }
  }
  if (!name) {
    const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/.exec(header);
    name = (plain?.[1] ?? plain?.[2] ?? "").replace(/\\(.)/g, "$1");
  }
  return name.split(/[/\\]/).pop() ?? "";
}

/** `name` in `folder` (a contents path: "" is the root, no leading slash). */
export function pathIn(folder: string, name: string): string {
  const clean = folder.replace(/^\/+|\/+$/g, "");
  return clean ? `${clean}/${name}` : name;
}

/** What a refused request's answer says, in the view's error shape. */
export function notebookRefusal(status: number, answer: unknown): ErrorInfo {
  if (isObject(answer)) {
    const events = Array.isArray(answer.events) ? answer.events.filter(isObject) : [];
    const said = events[0] ?? answer;
    const message = typeof said.message === "string" ? said.message : "";
    const code = typeof said.code === "string" ? said.code : typeof said.error === "string" ? said.error : "";
    if (message) return { code: code || `http_${status}`, message };
  }
  if (status === 404) return { code: "unavailable", message: NO_NOTEBOOK_ROUTE };
  if (status === 403) {
    return { code: "forbidden", message: "The Jupyter server refused the export (403): log in again, or ask whoever runs it for permission." };
  }
  return { code: `http_${status}`, message: `Exporting the conversation failed (HTTP ${status}).` };
}

function parsed(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : null;
  } catch {
    return null;
  }
}

/** The conversation's notebook and the name the route gives it, or why not. */
async function fetchNotebook(fetcher: Fetch, conversationId: string): Promise<{ notebook: JsonObject; filename: string } | { error: ErrorInfo }> {
  let response: Response;
  let text: string;
  try {
    response = await fetcher(`conversations/${encodeURIComponent(conversationId)}/notebook`, { method: "GET" });
    text = await response.text();
  } catch (error) {
    return { error: { code: "unavailable", message: `Could not reach the Jupyter server: ${reasonOf(error)}` } };
  }
  const body = parsed(text);
  if (!response.ok) return { error: notebookRefusal(response.status, body) };
  if (!isObject(body) || !Array.isArray(body.cells) || typeof body.nbformat !== "number") {
    return { error: { code: "unavailable", message: `The server's answer is not a notebook. ${NO_NOTEBOOK_ROUTE}` } };
  }
  return { notebook: body, filename: dispositionName(response.headers.get("Content-Disposition")) };
}

/** The side panel's exporter: fetch the notebook, write it under a free name, open it. */
export function notebookExporter(fetcher: Fetch, files: NotebookFiles): NotebookExporter {
  return async ({ conversationId, title }: ExportTarget): Promise<ExportOutcome> => {
    if (!conversationId) return { error: { code: "empty", message: NOTHING_TO_EXPORT } };
    const fetched = await fetchNotebook(fetcher, conversationId);
    if ("error" in fetched) return fetched;
    // (the server's name, made from the title as it is now; checked again as any title would be)
    const name = notebookFileName(fetched.filename.replace(/\.ipynb$/i, "") || title);
    let folder = "";
    let path = "";
    try {
      folder = files.folder();
      path = pathIn(folder, await firstFreeName(name, (candidate) => files.exists(pathIn(folder, candidate))));
      await files.save(path, fetched.notebook);
    } catch (error) {
      const where = path || pathIn(folder, name);
      return { error: { code: "not_written", message: `Could not write ${where}: ${reasonOf(error)}` } };
    }
    try {
      await files.open(path);
    } catch (error) {
      return { error: { code: "not_opened", message: `The notebook was written to ${path} but could not be opened: ${reasonOf(error)}` } };
    }
    return { path };
  };
}
