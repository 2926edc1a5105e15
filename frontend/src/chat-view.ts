/**
 * The app: one rendered chat view (header, conversation picker, the log of turns, the composer)
 * over a `Transport`. It sends `hello` (with its saved cursor after a reload), builds itself from
 * the `snapshot` (or `replay`) answer, then applies `turn_start`, `events`, `table`, `turn_end`,
 * `table_page`, `frame_bound`, `chart_options`, `conversations`, `knowledge` (the answers to its
 * knowledge requests: knowledge.ts, the header's knowledge view) and `error` as they arrive. A host
 * that reaches the agent-token routes (the side panel) adds the header's **Agents** drawer
 * (agent-tokens-view.ts). **Export as notebook** (notebook-export.ts) asks the kernel, or the
 * host's exporter (the side panel's). Every
 * view keeps its own state, and its cursor and turns in sessionStorage so a reload replays (see
 * replay.ts).
 */

import { type AgentTokensOptions, AgentTokensView } from "./agent-tokens-view";
import type { ChartLoader } from "./chart";
import type { ConfirmBox } from "./confirm";
import { ConversationPicker } from "./conversations";
import type { CellActions } from "./evidence";
import { button, h } from "./dom";
import { displayName, errorText } from "./format";
import { KnowledgeClient } from "./knowledge";
import { KnowledgeView } from "./knowledge-view";
import { ExportAction, type NotebookExporter } from "./notebook-export";
import type { ClientMessage, ErrorInfo, ReplayMessage, ServerMessage, SnapshotMessage, TurnRecord } from "./protocol";
import {
  type StoredView,
  type ViewCursor,
  cursorOf,
  helloMessage,
  loadView,
  quietly,
  recordMessage,
  replayAnswers,
  saveView,
} from "./replay";
import type { TableView } from "./table";
import type { Transport } from "./transport/transport";
import { type TurnHost, TurnView } from "./turn";
import { UsageHeader } from "./usage";

const PIN_SLACK_PX = 32;

/** What a host adds to the view (all optional: the notebook widget passes none). */
export interface ChatViewOptions {
  /** Evidence rows get "Insert as cell" and "→ DataFrame" (the JupyterLab side panel). */
  cellActions?: CellActions | null;
  /**
   * Loads the chart library (Vega) the first time a chart is drawn, and caches it: the widget asks
   * the kernel for charts.js, the side panel imports a lazy chunk. Without one, charts show their
   * title and data table only.
   */
  loadCharts?: ChartLoader | null;
  /**
   * The person's agent tokens (the side panel, which reaches the `{url}agent-tokens/` routes with
   * the browser session): the header gets **Agents**. Without it (the notebook widget) no button.
   */
  agentTokens?: AgentTokensOptions | null;
  /**
   * Writes **Export as notebook**'s file (the side panel: beside the active notebook, through
   * JupyterLab's contents). Without one (the notebook widget) the kernel writes it.
   */
  exportNotebook?: NotebookExporter | null;
}

function isRecord(value: unknown): value is TurnRecord {
  return Boolean(value) && typeof value === "object";
}

/** One rendered view of the chat. */
export class ChatView implements TurnHost {
  readonly tables = new Map<string, TableView>(); // table key -> TableView
  readonly root: HTMLDivElement;
  readonly cellActions: CellActions | null;
  readonly loadCharts: ChartLoader | null;
  /** Knowledge requests of this view and its turns (answers come back as `knowledge`). */
  readonly knowledge: KnowledgeClient;
  private readonly knowledgeView: KnowledgeView;
  private readonly agentsView: AgentTokensView | null;
  private readonly exportAction: ExportAction;
  private readonly turns = new Map<number, TurnView>(); // index -> TurnView
  private readonly dirty = new Set<TurnView>();
  private readonly countdowns = new Set<ConfirmBox>();
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private ticker: ReturnType<typeof setInterval> | null = null;
  private ready = false;
  private busy = false;
  private pinned = true;
  private conversationId: string | null = null;
  private pendingAsk: string | null = null;
  private disposed = false;
  private records = new Map<number, TurnRecord>(); // index -> the turn record as rendered (what a reload restores)
  private cursor: ViewCursor | null = null; // what this view has, for a replay
  private readonly syncs = { snapshot: 0, replay: 0 };
  private readonly widgetKey: string | null;
  private readonly storage: Storage | null;
  private restored: StoredView | null; // rendered when a replay confirms it
  private readonly stopListening: () => void;
  private readonly stopWatching: (() => void) | null;
  private readonly inputWidth: ResizeObserver | null;
  private readonly projectEl: HTMLSpanElement;
  private readonly providerEl: HTMLSpanElement;
  private readonly usage = new UsageHeader();
  private readonly picker: ConversationPicker;
  private readonly log: HTMLDivElement;
  private readonly empty: HTMLDivElement;
  private readonly notice: HTMLDivElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;

  /**
   * @param transport what carries the messages (the view never sees more of it)
   * @param host the element the view renders into
   * @param options what the host adds (see `ChatViewOptions`)
   */
  constructor(
    private readonly transport: Transport,
    private readonly host: HTMLElement,
    options: ChatViewOptions = {},
  ) {
    this.cellActions = options.cellActions ?? null;
    this.loadCharts = options.loadCharts ?? null;
    this.widgetKey = transport.storageKey();
    this.storage = quietly(() => globalThis.sessionStorage ?? null, null);
    this.restored = loadView(this.storage, this.widgetKey);

    this.projectEl = h("span", { cls: "gmchat-project", testid: "gmchat-project" });
    this.providerEl = h("span", { cls: "gmchat-provider", testid: "gmchat-provider", attrs: { title: "Provider" } });
    this.picker = new ConversationPicker(this.send, () => this.conversationId);
    this.knowledge = new KnowledgeClient((msg) => this.transport.send(msg));
    const knowledgeButton = button("Knowledge", {
      testid: "gmchat-knowledge-toggle",
      aria: "Knowledge: verified queries, definitions and notes",
      onClick: () => this.knowledgeView.toggle(),
    });
    knowledgeButton.setAttribute("aria-expanded", "false");
    this.knowledgeView = new KnowledgeView(this.knowledge, (open) => {
      knowledgeButton.setAttribute("aria-expanded", String(open));
      if (open && this.agentsView?.isOpen) this.agentsView.toggle(false); // one drawer at a time: a sidebar is short
    });
    this.agentsView = options.agentTokens
      ? new AgentTokensView(options.agentTokens, this.copyText, (open) => {
          if (open && this.knowledgeView.isOpen) this.knowledgeView.toggle(false);
        })
      : null;
    const exportTarget = () => ({ conversationId: this.conversationId, title: this.picker.titleOf(this.conversationId) });
    this.exportAction = new ExportAction(options.exportNotebook, (msg) => this.transport.send(msg), exportTarget);
    this.log = h("div", {
      cls: "gmchat-log",
      attrs: { role: "log", "aria-live": "polite", "aria-label": "Chat messages", tabindex: "0" },
      on: { scroll: () => this.updatePinned() },
    });
    this.empty = h("div", { cls: "gmchat-empty", text: "Ask a question about the project's data." });
    this.log.append(this.empty);
    this.notice = h("div", { cls: "gmchat-notice" });
    this.input = h("textarea", {
      cls: "gmchat-input",
      testid: "gmchat-input",
      attrs: {
        rows: "2",
        placeholder: "Ask about the data\u2026 (Enter to send, Shift+Enter for a new line)",
        "aria-label": "Message",
        spellcheck: "true",
      },
      on: { keydown: (e) => this.onKeyDown(e), input: () => this.autoGrow() },
    });
    this.sendButton = button("Send", { cls: "gmchat-primary", testid: "gmchat-send", aria: "Send message", onClick: () => this.submit() });
    this.stopButton = button("Stop", {
      testid: "gmchat-stop",
      aria: "Stop the running turn",
      disabled: true,
      onClick: () => this.send({ type: "stop" }),
    });
    this.root = h(
      "div",
      { cls: "gmchat", testid: "gmchat-root", attrs: { "data-lm-suppress-shortcuts": "true", "data-busy": "false" } },
      [
        h("div", { cls: "gmchat-header" }, [
          h("div", { cls: "gmchat-header-main" }, [
            h("div", { cls: "gmchat-title" }, [h("span", { cls: "gmchat-brand", text: "gmchat" }), this.projectEl, this.providerEl]),
            this.usage.el,
          ]),
          h("div", { cls: "gmchat-controls" }, [
            button("New", { testid: "gmchat-new", aria: "New conversation", onClick: () => this.send({ type: "new_conversation" }) }),
            this.picker.el,
            button("Clear", { testid: "gmchat-clear", aria: "Clear the conversation", onClick: () => this.send({ type: "clear" }) }),
            this.exportAction.button,
            knowledgeButton,
            this.agentsView?.toggleButton,
          ]),
        ]),
        this.exportAction.status,
        this.knowledgeView.el,
        this.agentsView?.el,
        this.log,
        this.notice,
        h("div", { cls: "gmchat-composer" }, [this.input, h("div", { cls: "gmchat-composer-buttons" }, [this.sendButton, this.stopButton])]),
      ],
    );
    this.picker.set([], null);
    this.host.append(this.root);
    // A narrower input wraps its text and placeholder onto more lines: it grows to show them.
    let width = -1;
    this.inputWidth =
      typeof ResizeObserver === "undefined"
        ? null
        : new ResizeObserver(([entry]) => {
            const now = Math.round(entry?.contentRect.width ?? 0);
            if (now !== width && now > 0) this.autoGrow();
            width = now;
          });
    this.inputWidth?.observe(this.input);

    this.stopListening = transport.onMessage((msg) => this.receive(msg));
    this.stopWatching = transport.onReconnect ? transport.onReconnect(() => this.send(helloMessage(this.cursor), true)) : null;
    this.send(helloMessage(this.restored?.cursor));
  }

  /* ---------- messages ---------- */

  /** Send a message (never throws; `quiet`: no notice when it fails). */
  readonly send = (msg: ClientMessage, quiet = false): void => {
    try {
      this.transport.send(msg);
    } catch (error) {
      if (quiet) return;
      const reason = error instanceof Error && error.message ? error.message : String(error);
      this.showNotice({ message: `Could not reach the kernel: ${reason}`, code: "send_failed" });
    }
  };

  /** Dispatch one message; one bad message must not break the view. */
  private receive(msg: ServerMessage): void {
    if (this.disposed || !msg || typeof msg !== "object") return;
    const wasPinned = this.pinned;
    try {
      this.dispatch(msg);
    } catch (error) {
      console.error("gmchat: could not apply message", msg.type, error);
    }
    this.flush();
    if (wasPinned) this.scrollToBottom();
  }

  private dispatch(msg: ServerMessage): void {
    if (msg.type === "error") {
      this.kernelError(msg);
      return;
    }
    switch (msg.type) {
      case "snapshot":
        return this.applySnapshot(msg);
      case "replay":
        return this.applyReplay(msg);
      case "conversations":
        return this.picker.set(msg.items, msg.current);
      case "frame_bound":
        return this.tables.get(String(msg.table))?.onFrameBound(msg);
      case "table_page":
        return this.tables.get(String(msg.table))?.onPage(msg);
      case "chart_options":
        return this.tables.get(String(msg.table))?.onChartOptions(msg);
      case "chart_library":
        return; // the chart loader's answer (widget.ts)
      case "knowledge":
        return this.knowledge.receive(msg);
      case "notebook_exported":
        return this.exportAction.receive(msg);
      default:
        break;
    }
    if (!this.ready) return; // the snapshot (or replay) this view asked for will contain it
    recordMessage(this.records, msg);
    switch (msg.type) {
      case "turn_start":
        this.pendingAsk = null;
        this.clearNotice();
        this.syncTurn(msg.turn);
        this.setBusy(true);
        break;
      case "events": {
        const events: unknown[] = Array.isArray(msg.events) ? msg.events : [];
        const turn = this.turnFor(msg.turn);
        if (turn) turn.applyEvents(events);
        if (events.some((e) => Boolean(e) && (e as { type?: unknown }).type === "done")) this.updateUsage();
        break;
      }
      case "table":
        this.turnFor(msg.turn)?.addTable(msg.table);
        break;
      case "turn_end":
        if (isRecord(msg.turn)) this.syncTurn({ ...msg.turn, running: false });
        this.setBusy(false);
        this.updateUsage();
        // This view saw the whole turn live: it is complete through the turn's cursor.
        this.setCursor(cursorOf(msg.cursor));
        break;
      default:
        break;
    }
  }

  /** Rebuild from a snapshot, keeping the DOM (and its open cards, pages, inputs) of turns that did not change. */
  private applySnapshot(snapshot: SnapshotMessage): void {
    if (!this.ready) this.pinned = true;
    this.ready = true;
    this.projectEl.textContent = displayName(snapshot.project);
    this.providerEl.textContent = displayName(snapshot.provider);
    const conversation = snapshot.conversation_id ?? null;
    if (conversation !== this.conversationId) {
      for (const turn of this.turns.values()) turn.dispose();
      this.turns.clear();
      this.conversationId = conversation;
    }
    const records: unknown[] = Array.isArray(snapshot.turns) ? snapshot.turns : [];
    const indexOf = (record: TurnRecord, position: number): number =>
      Number.isFinite(Number(record.index)) ? Number(record.index) : position;
    const seen = new Set<number>();
    records.forEach((record, position) => {
      if (!isRecord(record)) return;
      const index = indexOf(record, position);
      seen.add(index);
      this.syncTurn({ ...record, index });
    });
    for (const [index, turn] of [...this.turns]) {
      if (!seen.has(index)) {
        turn.dispose();
        this.turns.delete(index);
      }
    }
    this.setBusy(Boolean(snapshot.busy));
    this.picker.apply(snapshot.conversations, conversation);
    this.updateEmpty();
    this.records = new Map(records.filter(isRecord).map((r, i) => [indexOf(r, i), r]));
    this.updateUsage();
    this.restored = null;
    this.noteSync("snapshot");
    this.setCursor(cursorOf(snapshot.cursor));
  }

  /**
   * Bring the view up to date from a replay: the turns that changed after its cursor, whole
   * (a turn it partly has skips the events it has, by their per-turn `sequence`). A new view
   * (a reload) first renders the turns it saved, which the replay's cursor refers to.
   */
  private applyReplay(replay: ReplayMessage): void {
    // Every view of a widget gets every answer: a view takes only a replay of its own cursor
    // (a view that holds another cursor asks with it, and gets its own replay or a snapshot).
    if (!this.ready) {
      const restored = this.restored;
      if (!restored || !replayAnswers(restored.cursor, replay)) return;
      this.restored = null;
      this.pinned = true;
      this.conversationId = restored.cursor.conversationId;
      for (const record of restored.turns) {
        this.records.set(record.index, record);
        this.syncTurn(record);
      }
    } else if (!replayAnswers(this.cursor, replay)) {
      return;
    }
    this.ready = true;
    if (typeof replay.conversation_id === "string") this.conversationId = replay.conversation_id;
    this.projectEl.textContent = displayName(replay.project);
    this.providerEl.textContent = displayName(replay.provider);
    let running: TurnView | null = null;
    const records: unknown[] = Array.isArray(replay.turns) ? replay.turns : [];
    for (const record of records) {
      if (!isRecord(record) || !Number.isSafeInteger(record.index)) continue;
      this.records.set(record.index, record);
      const turn = this.syncTurn(record);
      if (record.running) running = turn;
    }
    const pending = replay.pending_confirmation;
    if (running && pending && typeof pending === "object") running.confirmBox(pending);
    this.setBusy(Boolean(replay.busy));
    this.picker.apply(replay.conversations, this.conversationId);
    this.updateEmpty();
    this.updateUsage();
    this.noteSync("replay");
    this.setCursor(cursorOf(replay.cursor));
  }

  /** Count how this view was brought up to date (tests and debugging read the attributes). */
  private noteSync(kind: "snapshot" | "replay"): void {
    this.syncs[kind]++;
    this.root.setAttribute("data-sync", kind);
    this.root.setAttribute(`data-${kind}s`, String(this.syncs[kind]));
  }

  /** Remember what this view has, and save it (with its turns) for a reload of this tab. */
  private setCursor(cursor: ViewCursor | null): void {
    if (!cursor) return;
    this.cursor = cursor;
    this.root.setAttribute("data-position", String(cursor.position));
    const turns = [...this.records.values()].sort((a, b) => a.index - b.index);
    saveView(this.storage, this.widgetKey, cursor, turns);
  }

  /** Create or update the view of a Turn record. */
  private syncTurn(record: unknown): TurnView | null {
    if (!isRecord(record)) return null;
    const index = Number(record.index);
    if (!Number.isFinite(index)) return null;
    let turn = this.turns.get(index) ?? null;
    if (turn && !turn.placeholder && record.question !== undefined && String(record.question) !== turn.question) {
      turn.dispose();
      this.turns.delete(index);
      turn = null;
    }
    if (!turn) {
      turn = new TurnView(this, { ...record, index });
      this.turns.set(index, turn);
      this.insertTurn(turn);
    }
    turn.sync(record);
    return turn;
  }

  /** The turn with `index`; a placeholder when its record has not arrived (it will). */
  private turnFor(index: unknown): TurnView | null {
    const key = Number(index);
    if (!Number.isFinite(key)) return null;
    let turn = this.turns.get(key);
    if (!turn) {
      turn = new TurnView(this, { index: key, question: "" }, true);
      this.turns.set(key, turn);
      this.insertTurn(turn);
    }
    return turn;
  }

  private insertTurn(turn: TurnView): void {
    const after = [...this.turns.values()]
      .filter((t) => t !== turn && t.index > turn.index && t.el.parentNode === this.log)
      .sort((a, b) => a.index - b.index)[0];
    if (after) this.log.insertBefore(turn.el, after.el);
    else this.log.append(turn.el);
    this.updateEmpty();
  }

  /** The header's cost and context gauge, from the turn records (what a reload restores too). */
  private updateUsage(): void {
    this.usage.update([...this.records].map(([index, record]) => ({ ...record, index })));
  }

  private updateEmpty(): void {
    this.empty.hidden = this.turns.size > 0;
  }

  markDirty(turn: TurnView): void {
    this.dirty.add(turn);
  }

  /** Re-render the answers that changed during the last message. */
  private flush(): void {
    for (const turn of this.dirty) turn.renderAnswer();
    this.dirty.clear();
  }

  private setBusy(busy: boolean): void {
    this.busy = busy;
    this.root.setAttribute("data-busy", String(busy));
    this.stopButton.disabled = !busy;
    this.sendButton.disabled = busy;
  }

  private kernelError(msg: ErrorInfo): void {
    // (the charts waiting for the library say so themselves)
    if (msg.code !== "charts_unavailable") this.showNotice(msg);
    if (msg.call_id) {
      // a decision the server did not take: its card says so (and may be answered again)
      for (const turn of this.turns.values()) {
        turn.confirms.get(msg.call_id)?.notDecided(errorText(msg), msg.code === "server_unreachable");
      }
    }
    for (const table of this.tables.values()) table.unblock();
    if (this.pendingAsk !== null && !this.input.value) {
      this.input.value = this.pendingAsk; // the question was refused: give it back
      this.autoGrow();
    }
    this.pendingAsk = null;
  }

  private showNotice(error: ErrorInfo): void {
    const dismiss = button("\u00d7", { cls: "gmchat-dismiss", aria: "Dismiss", onClick: () => this.clearNotice() });
    this.notice.replaceChildren(
      h("div", { cls: "gmchat-error", testid: "gmchat-error", attrs: { role: "alert", "data-code": error.code || "" } }, [
        h("span", { text: errorText(error) }),
        dismiss,
      ]),
    );
  }

  private clearNotice(): void {
    this.notice.replaceChildren();
  }

  /* ---------- composing ---------- */

  private onKeyDown(event: KeyboardEvent): void {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    this.submit();
  }

  private submit(): void {
    const text = this.input.value.trim();
    if (!text || this.busy) return;
    this.pendingAsk = this.input.value;
    this.input.value = "";
    this.autoGrow();
    this.pinned = true;
    this.send({ type: "ask", text });
  }

  /** As tall as its text (at most 200 px) or, empty, its placeholder, whole. */
  private autoGrow(): void {
    this.input.style.height = "auto";
    const text = Math.max(this.input.scrollHeight, this.placeholderHeight());
    const border = this.input.offsetHeight - this.input.clientHeight; // (the height includes it)
    const height = Math.min(text + border, 200);
    if (text > 0) this.input.style.height = `${height}px`;
  }

  /** The height the empty input's placeholder takes on its lines (0 with text in it). */
  private placeholderHeight(): number {
    if (this.input.value || !this.input.placeholder) return 0;
    this.input.value = this.input.placeholder;
    const height = this.input.scrollHeight;
    this.input.value = "";
    return height;
  }

  /* ---------- scrolling ---------- */

  private updatePinned(): void {
    const log = this.log;
    this.pinned = log.scrollHeight - log.scrollTop - log.clientHeight < PIN_SLACK_PX;
  }

  private scrollToBottom(): void {
    this.log.scrollTop = this.log.scrollHeight;
    this.pinned = true;
  }

  /* ---------- timers ---------- */

  startCountdown(box: ConfirmBox): void {
    if (!box.tick(Date.now())) return;
    this.countdowns.add(box);
    if (this.ticker === null) {
      this.ticker = setInterval(() => {
        const now = Date.now();
        for (const b of [...this.countdowns]) if (!b.tick(now)) this.countdowns.delete(b);
        if (!this.countdowns.size) this.stopTicker();
      }, 250);
    }
  }

  stopCountdown(box: ConfirmBox): void {
    this.countdowns.delete(box);
    if (!this.countdowns.size) this.stopTicker();
  }

  private stopTicker(): void {
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
  }

  private later(fn: () => void, ms: number): void {
    if (this.disposed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.disposed) fn();
    }, ms);
    this.timers.add(timer);
  }

  /**
   * Copy text to the clipboard: `navigator.clipboard`, else a selected textarea with
   * `execCommand("copy")`; the textarea stays visible (selected) when both fail.
   * @param status where "copied" shows
   * @param fallbackParent where a fallback textarea goes
   */
  readonly copyText = async (text: string, status: HTMLElement, fallbackParent: HTMLElement): Promise<void> => {
    const done = (message: string): void => {
      status.textContent = message;
      this.later(() => {
        if (status.textContent === message) status.textContent = "";
      }, 2000);
    };
    try {
      // (navigator.clipboard is missing outside secure contexts, whatever the DOM types say)
      const clipboard = navigator.clipboard as Clipboard | undefined;
      if (clipboard && typeof clipboard.writeText === "function") {
        await clipboard.writeText(text);
        done("copied");
        return;
      }
    } catch {
      // denied (no focus, no permission, insecure context): fall back below
    }
    const area = h("textarea", { cls: "gmchat-copy-area", attrs: { readonly: true, "aria-label": "Code to copy", rows: "6" } });
    area.value = text;
    const parent = fallbackParent && fallbackParent.isConnected ? fallbackParent : this.notice;
    parent.querySelector(".gmchat-copy-area")?.remove();
    parent.append(area);
    area.focus();
    area.select();
    let ok = false;
    try {
      // execCommand is deprecated but is the one fallback where the Clipboard API is refused.
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    if (ok) {
      area.remove();
      done("copied");
    } else {
      status.textContent = "select and copy (Ctrl+C)";
    }
  };

  /** Remove listeners and timers; take the view's DOM out of the element. */
  dispose(): void {
    this.disposed = true;
    this.stopWatching?.();
    this.inputWidth?.disconnect();
    this.stopListening();
    this.stopTicker();
    this.knowledge.dispose();
    this.exportAction.dispose();
    this.knowledgeView.dispose();
    this.agentsView?.toggle(false); // (a secret still shown leaves the page)
    this.countdowns.clear();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.root.remove();
  }
}
