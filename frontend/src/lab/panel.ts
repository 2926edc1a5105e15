/**
 * The side panel: a Lumino widget holding one `ChatView` on a `ServerTransport` (the server
 * extension's routes), created the first time the panel is shown. Its evidence rows insert cells
 * into the active notebook (`INotebookTracker`, when the front end has one). Its charts import the
 * chart library (Vega) the first time one is drawn: a dynamic import, which webpack makes a lazy
 * chunk of the labextension, so the panel's first load does not carry it. Its **Export as
 * notebook** fetches the conversation's notebook from the server and writes it beside the active
 * notebook through the contents API, then opens it (notebook-export.ts). It fits the sidebar at
 * any width (styles/panel.css), shows the server's project and provider in its header (from the
 * conversations route, as the widget shows its kernel's) and keeps its input above JupyterLab's
 * toasts (toasts.ts).
 *
 * What only a person may do — answer a confirmation, list, create and revoke agent tokens (the
 * header's **Agents**) — goes as the browser session: the login cookie and the XSRF header,
 * without the Jupyter token JupyterLab's page holds (`ServerConnection` sends it as
 * `Authorization: token …` when the page has one), since the server refuses a token-authenticated
 * request there.
 */

import type { JupyterFrontEnd } from "@jupyterlab/application";
import { URLExt } from "@jupyterlab/coreutils";
import { type INotebookTracker, NotebookActions } from "@jupyterlab/notebook";
import { ServerConnection } from "@jupyterlab/services";
import { Widget } from "@lumino/widgets";

import { mcpUrl } from "../agent-tokens";
import type { ChartLibrary } from "../chart";
import { ChatView } from "../chat-view";
import type { CellActions } from "../evidence";
import { AgentTokensClient } from "../transport/server-agent-tokens";
import { notebookExporter } from "../transport/server-notebook";
import { type Fetcher, ServerTransport } from "../transport/server";
import { labNotebookFiles } from "./notebook-export";
import { ToastClearance } from "./toasts";

export const PANEL_ID = "gmchat-panel";

export interface PanelOptions {
  app: JupyterFrontEnd;
  tracker: INotebookTracker | null;
  /** The chat routes below the server's base URL (the setting `url`). */
  url: Promise<string>;
}

/** "Insert as cell" into the notebook the user worked in last. */
export function notebookCells(tracker: INotebookTracker | null): CellActions {
  const unavailable = (): string | null => {
    if (!tracker) return "This Jupyter front end has no notebooks to insert into.";
    const panel = tracker.currentWidget;
    if (!panel || panel.isDisposed) return "No notebook is open: open one (or click into it), then insert again.";
    if (!panel.content.model) return "The notebook is still loading: try again in a moment.";
    return null;
  };
  return {
    unavailable,
    insertCell(code: string): string | null {
      const refused = unavailable();
      const notebook = tracker?.currentWidget?.content;
      if (refused !== null || !notebook) return refused ?? "No notebook is open.";
      NotebookActions.insertBelow(notebook);
      if (notebook.activeCell?.model.type !== "code") NotebookActions.changeCellType(notebook, "code");
      const cell = notebook.activeCell;
      if (!cell) return "The notebook did not take the cell.";
      cell.model.sharedModel.setSource(code);
      return null;
    },
  };
}

/** The chart library, loaded on first use (the browser caches the module). */
export function loadCharts(): Promise<ChartLibrary> {
  return import("../chart-library");
}

/** The gmchat side panel. */
export class ChatPanel extends Widget {
  private view: ChatView | null = null;
  private transport: ServerTransport | null = null;
  private toasts: ToastClearance | null = null;
  private starting = false;

  constructor(private readonly options: PanelOptions) {
    super();
    this.id = PANEL_ID;
    this.addClass("gmchat-panel");
    this.title.label = "gmchat";
    this.title.caption = "gmchat: ask about the project's data";
  }

  /** Connect the first time the panel shows (a panel never opened costs no requests). */
  protected override onAfterShow(): void {
    if (this.starting) return;
    this.starting = true;
    void this.options.url.then((url) => this.start(url));
  }

  private start(url: string): void {
    if (this.isDisposed) return;
    const settings = ServerConnection.makeSettings();
    const joined = URLExt.join(settings.baseUrl, url);
    const base = joined.endsWith("/") ? joined : `${joined}/`;
    // (the same server and base URL; no token: the session cookie and XSRF header only)
    const session = ServerConnection.makeSettings({ baseUrl: settings.baseUrl, wsUrl: settings.wsUrl, token: "" });
    const personFetch: Fetcher = (path, init) => ServerConnection.makeRequest(base + path, init ?? {}, session);
    const fetch: Fetcher = (path, init) => ServerConnection.makeRequest(base + path, init ?? {}, settings);
    this.transport = new ServerTransport({
      fetch,
      personFetch,
      storagePrefix: `gmchat:${base}:`,
      storage: globalThis.localStorage ?? null,
    });
    this.view = new ChatView(this.transport, this.node, {
      cellActions: notebookCells(this.options.tracker),
      loadCharts,
      agentTokens: { client: new AgentTokensClient(personFetch), mcpUrl: mcpUrl(settings.baseUrl) },
      exportNotebook: notebookExporter(fetch, labNotebookFiles(this.options.app)),
    });
    this.node.setAttribute("data-gmchat-url", base);
    this.toasts = new ToastClearance(this.node);
  }

  override dispose(): void {
    if (this.isDisposed) return;
    this.toasts?.dispose();
    this.view?.dispose();
    this.transport?.dispose();
    super.dispose();
  }
}
