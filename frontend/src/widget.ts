/**
 * The anywidget entry point (`export default { render }`): a `ChatView` on a comm transport over
 * the widget's model. anywidget loads the bundle from a Blob URL, so build.mjs bundles every
 * import into this one module. The chart library (Vega) is not in it: the view's chart loader
 * asks the kernel for it (`chart_library`) when the first chart is drawn and imports the module
 * text it gets (build.mjs's second output, charts.js) from a Blob URL too.
 *
 * The pure helpers are named exports too, so the node tests in tests/widget/js/ import them
 * from the built module.
 */

import type { ChartLibrary, ChartLoader } from "./chart";
import { ChatView } from "./chat-view";
import { type AnyModel, CommTransport } from "./transport/comm";
import type { Transport } from "./transport/transport";

export * from "./format";
export * from "./guards";
export * from "./invisible";
export * from "./planned";
export * from "./replay";
export { ConfirmBox } from "./confirm";
export { conversationLabel } from "./conversations";
export {
  ALLOWED_TAGS,
  LINK_HOST_CLASS,
  MAX_NESTING,
  linkHost,
  markdownFragment,
  renderMarkdown,
  safeHref,
  sanitizedFragment,
} from "./markdown";
export { isServerMessage } from "./protocol";
export { SseParser } from "./transport/sse";
export { ChartView, DENIED_KEYS, MARK_TYPES, SCHEMA, chartDataTable, checkSpec } from "./chart";
export { ChartPicker } from "./chart-picker";
export { EVENT_RENDERERS } from "./turn";
export {
  KNOWLEDGE_TIMEOUT_MS,
  KnowledgeClient,
  entriesOf,
  entryBody,
  kindLabel,
  problemText,
  ranQuery,
  recallItems,
  recallSummary,
  scoreText,
  trustedLabel,
} from "./knowledge";
export { EntryForm, defaultName } from "./knowledge-forms";
export { KnowledgeView } from "./knowledge-view";
export { knowledgeOverHttp, refusalOf } from "./transport/server-knowledge";
export {
  DEFAULT_EXPIRY_DAYS,
  EXPIRY_CHOICES,
  NAME_MAX,
  createRequest,
  mcpConfig,
  mcpUrl,
  nameProblem,
  prefixText,
  problemText as agentTokenProblemText,
  scopesFor,
  scopesText,
  stateLabel,
  timeText,
  tokenOf,
  tokenTimes,
  tokensOf,
} from "./agent-tokens";
export { CreateTokenForm, secretBox } from "./agent-tokens-form";
export { AgentTokensView } from "./agent-tokens-view";
export { AgentTokensClient, NO_AGENT_TOKEN_ROUTES, agentTokenRefusal } from "./transport/server-agent-tokens";
export {
  CONTEXT_ERROR,
  CONTEXT_WARNING,
  UsageHeader,
  contextState,
  contextText,
  costDetails,
  costOf,
  formatUsd,
  isFree,
  percent,
  recordCost,
  sumCosts,
  usageSummary,
} from "./usage";
export {
  EXPORT_TIMEOUT_MS,
  ExportAction,
  FALLBACK_NAME,
  KernelNotebookExport,
  MAX_NUMBERED,
  NAME_LENGTH,
  NOTHING_TO_EXPORT,
  exportText,
  firstFreeName,
  notebookFileName,
  numberedName,
} from "./notebook-export";
export { NO_NOTEBOOK_ROUTE, dispositionName, notebookExporter, notebookRefusal, pathIn } from "./transport/server-notebook";
export { CHAT_KEEPS, TOAST_GAP, toastClearance } from "./fit";
export { ChatView, CommTransport };

/** How long a view waits for the kernel to send the chart library. */
export const CHART_LIBRARY_TIMEOUT_MS = 60_000;

/** Import an ES module from its text (a Blob URL: anywidget loads chat.js the same way). */
async function importModule(source: string): Promise<ChartLibrary> {
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  try {
    const module = (await import(url)) as Partial<ChartLibrary>;
    if (typeof module.drawChart !== "function") throw new Error("the chart library is not one this view knows");
    return module as ChartLibrary;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * The widget's chart loader: the first call asks the kernel for the library (`chart_library`)
 * and imports the module text it answers with; later calls get the same promise. A refusal
 * (`error` charts_unavailable) or no answer in time rejects it, and the next chart asks again.
 */
export function kernelChartLoader(transport: Transport, timeoutMs = CHART_LIBRARY_TIMEOUT_MS): ChartLoader {
  let loading: Promise<ChartLibrary> | null = null;
  return () => {
    if (loading) return loading;
    const asked = new Promise<string>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        stop();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error("the kernel did not send the chart library"));
      }, timeoutMs);
      const stop = transport.onMessage((msg) => {
        if (msg.type === "chart_library") {
          done();
          if (typeof msg.source === "string" && msg.source) resolve(msg.source);
          else reject(new Error("the kernel sent no chart library"));
        } else if (msg.type === "error" && msg.code === "charts_unavailable") {
          done();
          reject(new Error(String(msg.message || "the kernel has no chart library")));
        }
      });
      try {
        transport.send({ type: "chart_library" });
      } catch (error) {
        done();
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    const loaded = asked.then(importModule);
    loading = loaded;
    loaded.catch(() => {
      if (loading === loaded) loading = null;
    });
    return loaded;
  };
}

/**
 * Render one view. Sends `hello` (with its saved cursor after a reload); the kernel answers with
 * a `replay` or a `snapshot`.
 * @returns cleanup: removes listeners and timers
 */
function render({ model, el }: { model: AnyModel; el: HTMLElement }): () => void {
  const transport = new CommTransport(model);
  const view = new ChatView(transport, el, { loadCharts: kernelChartLoader(transport) });
  return () => view.dispose();
}

export default { render };
