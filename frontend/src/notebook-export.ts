/**
 * **Export as notebook**: the header's button, its status line ("Exported to <path>", or why not,
 * as text) and the file's name. Who writes the file depends on the host:
 *
 * - the notebook widget asks its kernel (`export_notebook`, answered by `notebook_exported`): the
 *   kernel writes the conversation with `Chat.to_notebook(path)` into its working directory
 *   (`KernelNotebookExport`);
 * - the JupyterLab side panel passes a `NotebookExporter` (`ChatViewOptions.exportNotebook`) that
 *   fetches the notebook from the server and writes it through JupyterLab's contents API
 *   (transport/server-notebook.ts, lab/notebook-export.ts).
 *
 * Either way the name comes from the conversation's title by gmchat_nb/chat_export.py's
 * `notebook_filename` (the kernel's, and the server's in the route's `Content-Disposition`;
 * `notebookFileName` here is the same rule, for a title the view holds), and an existing file is
 * never written over: the first of `Title.ipynb`, `Title 1.ipynb`, `Title 2.ipynb` … that does not
 * exist is taken (`numberedName`).
 */

import { button, h } from "./dom";
import { errorText } from "./format";
import type { ErrorInfo, NotebookExportedMessage } from "./protocol";

/** At most this many characters (code points) of the title make the name. */
export const NAME_LENGTH = 80;
/** The name of a conversation whose title leaves nothing to name it by. */
export const FALLBACK_NAME = "conversation";
/** How many numbered names are tried before the export gives up. */
export const MAX_NUMBERED = 1000;
/** How long the view waits for the kernel's `notebook_exported`. */
export const EXPORT_TIMEOUT_MS = 60_000;
export const NOTHING_TO_EXPORT = "Nothing to export yet: ask a question first.";

// Path separators, quotes, the characters Windows reserves, control characters (C0, DEL, C1),
// invisible formatting characters (Cf: a right-to-left override could disguise the name) and
// lone surrogates (which cannot be written as UTF-8): each becomes a space.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f/\\"'`<>:|?*]|\p{Cf}|[\ud800-\udfff]/gu;
// Runs of whitespace (Python's `str.split()`: the Unicode space separators, line and paragraph
// separators) become one space.
const SPACES = /[ \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/gu;
const EDGES = /^[ .]+|[ .]+$/gu; // (no hidden file, no trailing dot Windows drops)
const TRAILING = /[ .]+$/u;

/**
 * The file name a conversation titled `title` is exported under, as
 * gmchat_nb/chat_export.py's `notebook_filename` makes it (the server's route names its
 * attachment so; a test holds the two equal): the title (NFC) without path separators, quotes,
 * reserved, control or invisible formatting characters, whitespace collapsed, no spaces or dots
 * at its ends, at most `NAME_LENGTH` characters, then `.ipynb`; `conversation.ipynb` when
 * nothing is left.
 */
export function notebookFileName(title: unknown): string {
  const text = (typeof title === "string" ? title : "").normalize("NFC").replace(UNSAFE, " ");
  const collapsed = text.replace(SPACES, " ").replace(EDGES, "");
  const stem = Array.from(collapsed).slice(0, NAME_LENGTH).join("").replace(TRAILING, "");
  return `${stem || FALLBACK_NAME}.ipynb`;
}

/** `name` numbered: `Title.ipynb` for 0, `Title 1.ipynb`, `Title 2.ipynb` … after. */
export function numberedName(name: string, number: number): string {
  if (number <= 0) return name;
  const dot = name.lastIndexOf(".");
  return dot > 0 ? `${name.slice(0, dot)} ${number}${name.slice(dot)}` : `${name} ${number}`;
}

/**
 * The first of `name`'s numbered names (`numberedName`) that `exists` says is free; throws when
 * the first `MAX_NUMBERED` are all taken.
 */
export async function firstFreeName(name: string, exists: (candidate: string) => Promise<boolean>, limit = MAX_NUMBERED): Promise<string> {
  for (let number = 0; number < limit; number++) {
    const candidate = numberedName(name, number);
    if (!(await exists(candidate))) return candidate;
  }
  throw new Error(`${numberedName(name, 1)} to ${numberedName(name, limit - 1)} all exist: rename or move some of them`);
}

/** What is exported: the conversation the view shows, and its title (empty when unknown). */
export interface ExportTarget {
  conversationId: string | null;
  title: string;
}

/** Where the notebook was written (as its host names it), or why it was not. */
export type ExportOutcome = { path: string; error?: undefined } | { path?: undefined; error: ErrorInfo };

/** Exports a conversation as a notebook; never rejects (a failure is an outcome with `error`). */
export type NotebookExporter = (target: ExportTarget) => Promise<ExportOutcome>;

/** The text the status line shows for an outcome. */
export function exportText(outcome: ExportOutcome): string {
  return outcome.error ? `Export failed: ${errorText(outcome.error)}` : `Exported to ${outcome.path}`;
}

/** The widget's exporter: the kernel writes the file and answers `notebook_exported`. */
export class KernelNotebookExport {
  private next = 0;
  private readonly pending = new Map<string, { resolve: (outcome: ExportOutcome) => void; timer: ReturnType<typeof setTimeout> }>();

  /** @param send sends `export_notebook` (it may throw: the view cannot reach the kernel) */
  constructor(
    private readonly send: (msg: { type: "export_notebook"; request: string }) => void,
    private readonly timeoutMs = EXPORT_TIMEOUT_MS,
  ) {}

  readonly export: NotebookExporter = () => {
    const request = `x${++this.next}-${Date.now().toString(36)}`;
    return new Promise<ExportOutcome>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(request);
        resolve({ error: { code: "no_answer", message: "The kernel did not answer: is it running this version of gmchat_nb?" } });
      }, this.timeoutMs);
      this.pending.set(request, { resolve, timer });
      try {
        this.send({ type: "export_notebook", request });
      } catch (error) {
        const reason = error instanceof Error && error.message ? error.message : String(error);
        this.settle(request, { error: { code: "unavailable", message: `Could not reach the kernel: ${reason}` } });
      }
    });
  };

  /** The kernel's answer: the export that asked gets it (others are ignored). */
  receive(msg: NotebookExportedMessage): void {
    const request = typeof msg.request === "string" ? msg.request : "";
    if (msg.error && typeof msg.error === "object") this.settle(request, { error: msg.error });
    else if (typeof msg.path === "string" && msg.path) this.settle(request, { path: msg.path });
    else this.settle(request, { error: { code: "failed", message: "The kernel's answer named no file." } });
  }

  /** Answer every waiting export (the view is going away). */
  dispose(): void {
    for (const request of [...this.pending.keys()]) this.settle(request, { error: { code: "unavailable", message: "The view was closed." } });
  }

  private settle(request: string, outcome: ExportOutcome): void {
    const waiting = this.pending.get(request);
    if (!waiting) return;
    this.pending.delete(request);
    clearTimeout(waiting.timer);
    waiting.resolve(outcome);
  }
}

/**
 * The header's **Export as notebook** button and the status line under the header. Without a
 * host's exporter it asks the kernel (`KernelNotebookExport`), whose answers `receive` takes.
 */
export class ExportAction {
  readonly button: HTMLButtonElement;
  readonly status: HTMLDivElement;
  private readonly kernel: KernelNotebookExport | null;
  private readonly exporter: NotebookExporter;
  private running = false;

  /**
   * @param hostExporter the host's exporter (the side panel's), or null: the kernel writes it
   * @param send sends `export_notebook` to the kernel (used without a host's exporter)
   * @param target the conversation to export, read when the button is pressed
   */
  constructor(
    hostExporter: NotebookExporter | null | undefined,
    send: (msg: { type: "export_notebook"; request: string }) => void,
    private readonly target: () => ExportTarget,
  ) {
    this.kernel = hostExporter ? null : new KernelNotebookExport(send);
    this.exporter = hostExporter ?? (this.kernel as KernelNotebookExport).export;
    this.button = button("Export as notebook", {
      testid: "gmchat-export",
      title: "Export this conversation as a notebook that re-runs its queries",
      onClick: () => void this.run(),
    });
    this.status = h("div", { cls: "gmchat-export-status", testid: "gmchat-export-status", attrs: { role: "status", "aria-live": "polite" } });
    this.status.hidden = true;
  }

  /** Export the conversation the view shows; the status line says where it went, or why not. */
  async run(): Promise<void> {
    if (this.running) return;
    // (no check of the conversation here: a widget's view learns its conversation only from a
    // snapshot, its kernel always knows; the side panel's exporter checks for itself)
    const target = this.target();
    this.running = true;
    this.button.disabled = true;
    this.status.hidden = false;
    this.status.setAttribute("data-state", "running");
    this.status.textContent = "Exporting\u2026";
    let outcome: ExportOutcome;
    try {
      outcome = await this.exporter(target);
    } catch (error) {
      // (an exporter should answer with an outcome; one that throws still gets its say)
      const reason = error instanceof Error && error.message ? error.message : String(error);
      outcome = { error: { code: "failed", message: reason } };
    }
    this.running = false;
    this.button.disabled = false;
    this.show(outcome);
  }

  /** The kernel's `notebook_exported`. */
  receive(msg: NotebookExportedMessage): void {
    this.kernel?.receive(msg);
  }

  dispose(): void {
    this.kernel?.dispose();
  }

  private show(outcome: ExportOutcome): void {
    this.status.hidden = false;
    this.status.setAttribute("data-state", outcome.error ? "error" : "done");
    this.status.textContent = exportText(outcome);
  }
}
