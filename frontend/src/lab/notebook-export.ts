/**
 * Where the side panel's **Export as notebook** writes (transport/server-notebook.ts does the
 * rest): JupyterLab's contents API, in the folder of the document the shell shows (the active
 * notebook), else at the root, and the document manager's `docmanager:open` to open it.
 */

import type { JupyterFrontEnd } from "@jupyterlab/application";
import { PathExt } from "@jupyterlab/coreutils";

import type { NotebookFiles } from "../transport/server-notebook";

export const OPEN_DOCUMENT = "docmanager:open";

/** The folder of the document the shell shows (its contents path, no drive), else "" (the root). */
export function activeFolder(app: JupyterFrontEnd): string {
  // (a document widget has a context with its path; a launcher or terminal has none)
  const widget = app.shell.currentWidget as unknown as { context?: { path?: unknown } } | null;
  const path = widget?.context?.path;
  return typeof path === "string" && path ? PathExt.dirname(app.serviceManager.contents.localPath(path)) : "";
}

/** The contents API as the exporter's files. */
export function labNotebookFiles(app: JupyterFrontEnd): NotebookFiles {
  const contents = app.serviceManager.contents;
  return {
    folder: () => activeFolder(app),
    async exists(path: string): Promise<boolean> {
      try {
        await contents.get(path, { content: false });
        return true;
      } catch (error) {
        // (a ServerConnection.ResponseError: only a 404 says the name is free)
        if ((error as { response?: { status?: unknown } } | null)?.response?.status === 404) return false;
        throw error;
      }
    },
    async save(path: string, notebook: Record<string, unknown>): Promise<void> {
      await contents.save(path, { type: "notebook", format: "json", content: notebook });
    },
    async open(path: string): Promise<void> {
      await app.commands.execute(OPEN_DOCUMENT, { path });
    },
  };
}
