/**
 * The turn view: one question and everything that answers it (the knowledge recalled for it, the
 * plan, tool cards and the charts under them, confirmations, notices, "Verified query: <name>"
 * over an answer that re-ran one, the streamed answer, errors, evidence, usage and **Save as
 * verified query**), brought up to date
 * from turn records and events. `EVENT_RENDERERS` says how each event type of core/events.py is
 * shown (tests/test_architecture.py checks that every public type has one here).
 */

import { type ChartLoader, ChartView } from "./chart";
import { ConfirmBox } from "./confirm";
import { button, h } from "./dom";
import { type CellActions, type CopyText, EvidencePanel } from "./evidence";
import { errorText, isObject, usageText } from "./format";
import { type KnowledgeClient, kindLabel, ranQuery, recallItems, recallSummary, scoreText, trustedLabel } from "./knowledge";
import { saveTurnForm } from "./knowledge-forms";
import { renderMarkdown } from "./markdown";
import { PlanPanel, partialBanner } from "./plan-panel";
import { isPartial, planCalculations } from "./planned";
import type {
  ChartEvent,
  ChatEvent,
  ConfirmMutationEvent,
  ErrorInfo,
  EventOf,
  EventType,
  EvidenceRow,
  Orchestration,
  RecallEvent,
  TableData,
  TurnRecord,
} from "./protocol";
import { type Send, TableView } from "./table";
import { type ToolCallInfo, ToolCard } from "./tool-card";

/** What a turn view needs from the view that holds it. */
export interface TurnHost {
  readonly send: Send;
  readonly copyText: CopyText;
  /** The answer of `turn` changed: re-render it once the current message is applied. */
  markDirty(turn: TurnView): void;
  startCountdown(box: ConfirmBox): void;
  stopCountdown(box: ConfirmBox): void;
  /** Every result table of the view, by key (`table_page` and `frame_bound` find theirs here). */
  readonly tables: Map<string, TableView>;
  /** Notebook actions of the evidence rows, when the host has notebooks (the side panel). */
  readonly cellActions?: CellActions | null;
  /** Loads the chart library when the first chart is drawn (null: charts show as text only). */
  readonly loadCharts?: ChartLoader | null;
  /** Knowledge requests (**Save as verified query**); null: the turn offers none. */
  readonly knowledge?: KnowledgeClient | null;
}

type EventRenderers = { readonly [K in EventType]: (turn: TurnView, event: EventOf<K>) => void };

// How a turn's view shows each event type of core/events.py (tests/test_architecture.py checks
// that every public type has one here).
export const EVENT_RENDERERS: EventRenderers = {
  text_chunk(turn, event) {
    turn.answerText += String(event.content ?? "");
    turn.chat.markDirty(turn);
  },
  tool_call(turn, event) {
    turn.toolCard(event);
  },
  tool_result(turn, event) {
    const card = turn.tools.get(String(event.id)) ?? turn.toolCard({ id: event.id, name: event.name, args: {} });
    card.finish(event);
    turn.noteEvidence(card, event.evidence_id);
    const box = turn.confirms.get(String(event.id));
    if (box) box.resolved(event.result);
  },
  confirm_mutation(turn, event) {
    turn.confirmBox(event);
  },
  done(turn, event) {
    turn.setUsage(event.usage);
    turn.setOrchestration(event.orchestration);
    turn.setTrusted(event.trusted);
  },
  error(turn, event) {
    turn.showError(event);
  },
  stream_reset(turn, event) {
    // the model request that was streaming failed and is asked again: its text is withdrawn
    turn.answerText = turn.answerText.slice(0, turn.answerMark);
    turn.chat.markDirty(turn);
    const reason = String(event.reason ?? "").trim();
    turn.note("reset", reason ? `The partial answer was withdrawn: ${reason}.` : "The partial answer was withdrawn.");
  },
  notice(turn, event) {
    turn.note(String(event.kind ?? "notice"), String(event.message ?? ""));
  },
  chart(turn, event) {
    turn.addChart(event);
  },
  recall(turn, event) {
    turn.showRecall(event);
  },
};

/** One question and everything that answers it. */
export class TurnView {
  readonly index: number;
  question: string;
  placeholder: boolean;
  answerText = "";
  /** Where the text of the model request now streaming begins (what a stream_reset withdraws). */
  answerMark = 0;
  readonly tools = new Map<string, ToolCard>();
  readonly confirms = new Map<string, ConfirmBox>();
  readonly el: HTMLElement;
  private lastSequence = -Infinity;
  private eventCount = 0;
  private running = true;
  private finished = false;
  private readonly pendingTables = new Map<string, TableData>(); // call_id -> table, before its card exists
  private readonly tables = new Map<string, TableView>(); // key -> TableView
  private readonly evidenceCards = new Map<string, ToolCard>(); // a planned query's evidence id -> its card
  private readonly charts = new Map<string, ChartView>(); // chart id -> its view
  private readonly chartAnchors = new Map<ToolCard, Element>(); // a query's card -> the last element under it
  private errorShown = false;
  private readonly seen: Record<string, unknown>[] = []; // the events applied (a finished turn's queries)
  private recallEl: HTMLElement | null = null;
  private saveButton: HTMLButtonElement | null = null;
  private evidenceRows: EvidenceRow[] = [];
  private evidenceKey = "";
  private orchestration: Orchestration | null = null;
  private readonly questionEl: HTMLDivElement;
  private readonly planSlot: HTMLDivElement;
  private readonly steps: HTMLDivElement;
  private readonly bannerSlot: HTMLDivElement;
  private readonly trustedSlot: HTMLDivElement;
  private readonly answer: HTMLDivElement;
  private readonly working: HTMLDivElement;
  private readonly errors: HTMLDivElement;
  private readonly evidenceSlot: HTMLDivElement;
  private readonly knowledgeSlot: HTMLDivElement;
  private readonly usage: HTMLSpanElement;

  /**
   * @param chat the view holding this turn
   * @param record the turn's record (index and question at least)
   * @param placeholder created from an `events` message before its record was seen
   */
  constructor(
    readonly chat: TurnHost,
    record: { index: number; question?: string },
    placeholder = false,
  ) {
    this.index = Number(record.index);
    this.question = String(record.question || "");
    this.placeholder = placeholder;
    this.questionEl = h("div", { cls: "gmchat-question", testid: "gmchat-question", text: this.question });
    this.planSlot = h("div", { cls: "gmchat-plan-slot" });
    this.steps = h("div", { cls: "gmchat-steps" });
    this.bannerSlot = h("div", { cls: "gmchat-banner-slot" });
    this.trustedSlot = h("div", { cls: "gmchat-trusted-slot" });
    this.answer = h("div", { cls: "gmchat-answer gmchat-md gmchat-streaming", testid: "gmchat-answer" });
    this.working = h("div", { cls: "gmchat-working", text: "Working\u2026", attrs: { "aria-hidden": "true" } });
    this.errors = h("div", { cls: "gmchat-turn-errors" });
    this.evidenceSlot = h("div", { cls: "gmchat-evidence-slot" });
    this.knowledgeSlot = h("div", { cls: "gmchat-turn-knowledge" });
    this.usage = h("span", { cls: "gmchat-usage", testid: "gmchat-usage" });
    this.el = h(
      "section",
      { cls: "gmchat-turn gmchat-running", testid: "gmchat-turn", attrs: { "data-index": this.index, "aria-label": `Turn ${this.index + 1}` } },
      [
        this.questionEl,
        h("div", { cls: "gmchat-reply" }, [
          this.planSlot,
          this.steps,
          // the trusted mark first: a partial answer's banner stands right above the answer
          this.trustedSlot,
          this.bannerSlot,
          this.answer,
          this.working,
          this.errors,
          this.evidenceSlot,
          this.knowledgeSlot,
          h("div", { cls: "gmchat-turn-footer" }, [this.usage]),
        ]),
      ],
    );
  }

  /** Bring the view up to a Turn record (snapshot, turn_start or turn_end). */
  sync(record: TurnRecord): void {
    if (this.placeholder && record.question) {
      this.question = String(record.question);
      this.questionEl.textContent = this.question;
      this.placeholder = false;
    }
    const events: unknown[] = Array.isArray(record.events) ? record.events : [];
    const sequenced = events.some((e) => isObject(e) && typeof e.sequence === "number");
    this.applyEvents(sequenced ? events : events.slice(this.eventCount));
    for (const table of Array.isArray(record.tables) ? record.tables : []) this.addTable(table);
    if (record.running === false) this.finish(record);
  }

  /** Apply events in order; one this view already has (by its `sequence`) is skipped. */
  applyEvents(events: readonly unknown[]): void {
    for (const event of events) {
      if (!isObject(event)) continue;
      if (typeof event.sequence === "number") {
        if (event.sequence <= this.lastSequence) continue;
        this.lastSequence = event.sequence;
      }
      this.eventCount++;
      this.seen.push(event);
      this.applyEvent(event);
    }
  }

  private applyEvent(event: Record<string, unknown>): void {
    // One renderer per public event type (EVENT_RENDERERS); a type this view does not know is
    // skipped, as the event contract asks of older clients.
    const type = event.type;
    if (typeof type !== "string" || !Object.hasOwn(EVENT_RENDERERS, type)) return;
    // where the text of the model request now streaming begins (what a stream_reset withdraws)
    if (type !== "text_chunk" && type !== "stream_reset") this.answerMark = this.answerText.length;
    // The table pairs each type with its renderer; TypeScript cannot follow that pairing through
    // an index, so the renderer is called with the event as the union type.
    const render = EVENT_RENDERERS[type as EventType] as (turn: TurnView, event: ChatEvent) => void;
    render(this, event as unknown as ChatEvent);
  }

  /** A short line among the steps: a retry, a fallback, a withdrawn answer, a guard. */
  note(kind: string, message: string): void {
    const name = kind.replace(/[^a-z_]/g, "");
    this.steps.append(h("div", { cls: `gmchat-notice gmchat-notice-${name}`, testid: "notice", text: message, attrs: { "data-kind": name } }));
  }

  toolCard(call: ToolCallInfo): ToolCard {
    const id = String(call.id);
    const existing = this.tools.get(id);
    if (existing) return existing;
    const card = new ToolCard(call);
    this.tools.set(id, card);
    this.steps.append(card.el);
    const table = this.pendingTables.get(id);
    if (table) {
      this.pendingTables.delete(id);
      this.addTable(table);
    }
    return card;
  }

  confirmBox(event: ConfirmMutationEvent): void {
    const id = String(event.id);
    if (this.confirms.has(id)) return;
    const box = new ConfirmBox(this.chat.send, event);
    this.confirms.set(id, box);
    this.steps.append(box.el);
    if (!this.running) box.close("closed");
    else this.chat.startCountdown(box);
  }

  /** A planned query's result names its evidence id: a chart may name the query by it. */
  noteEvidence(card: ToolCard, evidenceId: unknown): void {
    if (typeof evidenceId === "string" && evidenceId) this.evidenceCards.set(evidenceId, card);
  }

  /**
   * A `chart` event: the chart under the card of the query it draws (its `evidence_id` is the
   * query's call id, or a planned turn's evidence id), after any chart already there.
   */
  addChart(event: ChartEvent): void {
    const id = String(event.id);
    if (this.charts.has(id)) return;
    const view = new ChartView(event, this.chat.loadCharts ?? null);
    this.charts.set(id, view);
    const evidenceId = String(event.evidence_id ?? "");
    const card = this.tools.get(evidenceId) ?? this.evidenceCards.get(evidenceId);
    const anchor = card ? (this.chartAnchors.get(card) ?? card.el) : null;
    if (card && anchor && anchor.parentNode === this.steps) {
      anchor.after(view.el);
      this.chartAnchors.set(card, view.el);
    } else {
      this.steps.append(view.el);
    }
  }

  /**
   * The `recall` step, first among the steps: "Recalled 2 verified queries, 1 definition", which
   * opens to the entries (kind, name, score). An empty recall shows "Nothing recalled" (recall
   * ran and found nothing relevant; with recall off there is no event and no step).
   */
  showRecall(event: RecallEvent): void {
    const items = recallItems(event.items);
    const summary = recallSummary(items);
    const el: HTMLElement = items.length
      ? h("details", { cls: "gmchat-recall", testid: "gmchat-recall", attrs: { "data-count": items.length } }, [
          h("summary", { testid: "gmchat-recall-summary", text: summary }),
          h(
            "ul",
            { cls: "gmchat-recall-items" },
            items.map((item) =>
              h("li", { cls: "gmchat-recall-item", testid: "gmchat-recall-item", attrs: { "data-kind": item.kind ?? "", "data-id": item.id ?? "" } }, [
                h("span", { cls: "gmchat-knowledge-kind", text: kindLabel(item.kind) }),
                h("span", { cls: "gmchat-recall-name", testid: "gmchat-recall-name", text: item.name ?? "" }),
                h("span", { cls: "gmchat-recall-score", text: scoreText(item.score), attrs: { title: "Relevance (fused rank score)" } }),
              ]),
            ),
          ),
        ])
      : h("div", { cls: "gmchat-recall gmchat-recall-empty", testid: "gmchat-recall", attrs: { "data-count": 0 } }, [
          h("span", { testid: "gmchat-recall-summary", text: summary }),
        ]);
    if (this.recallEl) this.recallEl.replaceWith(el);
    else this.steps.prepend(el);
    this.recallEl = el;
  }

  /** `done.trusted`: the answer re-ran a verified query ("Verified query: <name>"). */
  setTrusted(trusted: unknown): void {
    const label = trustedLabel(trusted);
    if (!label) return;
    const name = isObject(trusted) ? String(trusted.name ?? "") : "";
    this.el.classList.add("gmchat-trusted-answer");
    this.trustedSlot.replaceChildren(
      h("div", {
        cls: "gmchat-trusted",
        testid: "gmchat-trusted",
        text: label,
        attrs: { title: `This answer re-ran the verified query \u201c${name}\u201d (its calls, with the values asked now).` },
      }),
    );
  }

  /** **Save as verified query** under a finished turn that ran a query (once per view). */
  private offerSave(): void {
    const client = this.chat.knowledge;
    if (!client || this.saveButton || this.placeholder || !ranQuery(this.seen)) return;
    const open = (): void => {
      const form = saveTurnForm(
        client,
        this.index,
        this.question,
        (entry) => {
          const name = String(entry?.name ?? "");
          this.knowledgeSlot.replaceChildren(
            h("div", { cls: "gmchat-knowledge-saved", testid: "gmchat-knowledge-saved", attrs: { role: "status" }, text: `Saved as verified query: ${name}` }),
          );
        },
        () => this.knowledgeSlot.replaceChildren(saveButton),
      );
      this.knowledgeSlot.replaceChildren(form.el);
      form.focus();
    };
    const saveButton = button("Save as verified query", { testid: "gmchat-save-query", aria: "Save this turn's queries as a verified query", onClick: open });
    this.saveButton = saveButton;
    this.knowledgeSlot.replaceChildren(saveButton);
  }

  /** A `table` message (or a record's table): attach it to its query card by call_id. */
  addTable(table: unknown): void {
    if (!isObject(table) || table.key === undefined) return;
    const data = table as unknown as TableData;
    const key = String(data.key);
    if (this.tables.has(key)) return;
    const card = this.tools.get(String(data.call_id));
    if (!card && !this.finished) {
      this.pendingTables.set(String(data.call_id), data);
      return;
    }
    const view = new TableView(this.chat.send, data, this.chat.loadCharts ?? null);
    this.tables.set(key, view);
    this.chat.tables.set(key, view);
    if (card) card.attachTable(view);
    else this.steps.append(view.el);
  }

  showError(error: ErrorInfo): void {
    if (this.errorShown) return;
    this.errorShown = true;
    this.el.classList.add("gmchat-failed");
    this.errors.append(
      h("div", { cls: "gmchat-error", testid: "gmchat-error", text: errorText(error), attrs: { role: "alert", "data-code": error.code || "" } }),
    );
  }

  setUsage(usage: unknown): void {
    this.usage.textContent = usageText(usage);
  }

  /** A planned turn's `orchestration`: the plan above the steps, a banner over a partial answer. */
  setOrchestration(orchestration: unknown): void {
    if (!isObject(orchestration)) return;
    const plan = orchestration as Orchestration;
    this.orchestration = plan;
    const partial = isPartial(plan);
    this.el.classList.toggle("gmchat-partial-answer", partial);
    this.planSlot.replaceChildren(new PlanPanel(plan).el);
    this.bannerSlot.replaceChildren(...(partial ? [partialBanner(plan)] : []));
    if (this.finished) this.renderEvidence();
  }

  /** The evidence panel: the record's queries and the plan's calculations (rebuilt when they change). */
  private renderEvidence(): void {
    const calculations = planCalculations(this.orchestration);
    const key = `${this.evidenceRows.length}:${calculations.length}`;
    if ((!this.evidenceRows.length && !calculations.length) || key === this.evidenceKey) return;
    this.evidenceKey = key;
    this.evidenceSlot.replaceChildren(new EvidencePanel(this.chat.copyText, this.evidenceRows, calculations, this.chat.cellActions ?? null).el);
  }

  /** The turn ended: final answer, usage, error and evidence from the record. */
  private finish(record: TurnRecord): void {
    this.running = false;
    this.finished = true;
    this.el.classList.remove("gmchat-running");
    this.answer.classList.remove("gmchat-streaming");
    this.working.remove();
    if (typeof record.answer === "string" && (record.answer || !this.answerText)) {
      if (record.answer !== this.answerText) {
        this.answerText = record.answer;
        this.chat.markDirty(this);
      }
    }
    if (record.usage && typeof record.usage === "object" && !this.usage.textContent) this.setUsage(record.usage);
    if (record.error && typeof record.error === "object") this.showError(record.error);
    for (const card of this.tools.values()) card.abandon();
    for (const box of this.confirms.values()) box.close("closed");
    for (const table of this.pendingTables.values()) this.addTable(table);
    this.pendingTables.clear();
    // The record's orchestration stands in for a `done` event this view did not get.
    if (!this.orchestration) this.setOrchestration(record.orchestration);
    const evidence = Array.isArray(record.evidence) ? record.evidence : [];
    if (evidence.length) this.evidenceRows = evidence;
    this.renderEvidence();
    this.offerSave();
  }

  /** Re-render the answer's markdown (called once per incoming message, not per chunk). */
  renderAnswer(): void {
    renderMarkdown(this.answer, this.answerText);
  }

  dispose(): void {
    for (const box of this.confirms.values()) this.chat.stopCountdown(box);
    for (const [key, table] of this.tables) {
      this.chat.tables.delete(key);
      table.dispose();
    }
    for (const chart of this.charts.values()) chart.dispose();
    this.el.remove();
  }
}
