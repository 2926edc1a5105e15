/**
 * The knowledge view: a drawer under the header (its **Knowledge** button) that lists what the
 * assistant knows of the project for this person — each entry's kind, name, status and scope,
 * with a verified query's question or a definition's or note's text — searches it, edits and
 * deletes entries (delete asks once more, inline), accepts suggestions, and adds definitions and
 * notes. Everything goes through the view's `KnowledgeClient`, so the widget's kernel and the side
 * panel's server answer it the same way; after any write the list is asked for again.
 */

import { button, h } from "./dom";
import { type EntryForm, definitionForm, editForm, noteForm } from "./knowledge-forms";
import { type KnowledgeClient, entriesOf, entryBody, kindLabel, problemText } from "./knowledge";
import type { KnowledgeEntry } from "./protocol";

/** How long the search waits after the last key before it asks. */
export const SEARCH_DELAY_MS = 250;

/** The drawer (see the module). */
export class KnowledgeView {
  readonly el: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly formSlot: HTMLDivElement;
  private readonly listStatus: HTMLDivElement;
  private readonly list: HTMLUListElement;
  private readonly stopListening: () => void;
  private asked = 0; // the newest list request: older answers are dropped
  private searchTimer: ReturnType<typeof setTimeout> | null = null;
  private opened = false;

  /** @param onToggle told when the drawer opens or closes (the header button's aria-expanded) */
  constructor(
    private readonly client: KnowledgeClient,
    private readonly onToggle: (open: boolean) => void = () => undefined,
  ) {
    this.search = h("input", {
      cls: "gmchat-knowledge-search",
      testid: "gmchat-knowledge-search",
      attrs: { type: "search", placeholder: "Search knowledge\u2026", "aria-label": "Search knowledge" },
      on: { input: () => this.searchSoon() },
    });
    this.formSlot = h("div", { cls: "gmchat-knowledge-form-slot" });
    this.listStatus = h("div", { cls: "gmchat-knowledge-list-status", testid: "gmchat-knowledge-list-status", attrs: { role: "status" } });
    this.list = h("ul", { cls: "gmchat-knowledge-list", testid: "gmchat-knowledge-list", attrs: { "aria-label": "Knowledge entries" } });
    this.el = h(
      "section",
      { cls: "gmchat-knowledge", testid: "gmchat-knowledge", attrs: { "aria-label": "Knowledge", hidden: true } },
      [
        h("div", { cls: "gmchat-knowledge-head" }, [
          h("span", { cls: "gmchat-knowledge-title", text: "Knowledge" }),
          this.search,
          button("Add definition", { testid: "gmchat-knowledge-add-definition", onClick: () => this.showForm(definitionForm(this.client, () => this.closeForm(), () => this.closeForm())) }),
          button("Add note", { testid: "gmchat-knowledge-add-note", onClick: () => this.showForm(noteForm(this.client, () => this.closeForm(), () => this.closeForm())) }),
          button("\u00d7", { cls: "gmchat-dismiss", testid: "gmchat-knowledge-close", aria: "Close the knowledge view", onClick: () => this.toggle(false) }),
        ]),
        this.formSlot,
        this.listStatus,
        this.list,
      ],
    );
    // (a write anywhere in this view — a turn saved, an entry added — shows in the list)
    this.stopListening = client.onChange(() => {
      if (this.opened) void this.refresh();
    });
  }

  get isOpen(): boolean {
    return this.opened;
  }

  /** Open (listing the entries) or close the drawer; `open` omitted: the other way round. */
  toggle(open = !this.opened): void {
    this.opened = open;
    this.el.hidden = !open;
    this.onToggle(open);
    if (open) {
      void this.refresh();
      this.search.focus();
    } else {
      this.closeForm();
    }
  }

  /** Ask for the entries (narrowed by the search) and show them. */
  async refresh(): Promise<void> {
    const asked = ++this.asked;
    const search = this.search.value.trim();
    this.el.setAttribute("aria-busy", "true");
    const answer = await this.client.ask(search ? { type: "knowledge_list", search } : { type: "knowledge_list" });
    if (asked !== this.asked) return; // a newer search is on its way
    this.el.removeAttribute("aria-busy");
    if (answer.error) {
      this.listStatus.setAttribute("data-state", "error");
      this.listStatus.textContent = problemText(answer.error);
      return;
    }
    const entries = entriesOf(answer.items);
    this.listStatus.removeAttribute("data-state");
    this.listStatus.textContent = entries.length
      ? `${entries.length} ${entries.length === 1 ? "entry" : "entries"}`
      : search
        ? `Nothing matches \u201c${search}\u201d.`
        : "No knowledge yet: save a turn as a verified query, or add a definition.";
    this.list.replaceChildren(...entries.map((entry) => this.row(entry)));
    this.el.setAttribute("data-entries", String(entries.length));
  }

  private searchSoon(): void {
    if (this.searchTimer !== null) clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => {
      this.searchTimer = null;
      void this.refresh();
    }, SEARCH_DELAY_MS);
  }

  private showForm(form: EntryForm): void {
    this.formSlot.replaceChildren(form.el);
    form.focus();
  }

  private closeForm(): void {
    this.formSlot.replaceChildren();
  }

  /** One entry: what it is, its actions, and a slot for its edit form or delete question. */
  private row(entry: KnowledgeEntry): HTMLLIElement {
    const name = String(entry.name ?? "");
    const status = String(entry.status ?? "");
    const scope = String(entry.scope ?? "");
    const slot = h("div", { cls: "gmchat-knowledge-row-slot" });
    const actions = h("div", { cls: "gmchat-knowledge-actions" });
    const done = (): void => slot.replaceChildren();
    if (status === "suggested") {
      actions.append(
        button("Accept", {
          cls: "gmchat-primary",
          testid: "gmchat-knowledge-accept",
          aria: `Accept the suggestion ${name}`,
          onClick: () => void this.accept(entry, slot),
        }),
      );
    }
    actions.append(
      button("Edit", {
        testid: "gmchat-knowledge-edit",
        aria: `Edit ${name}`,
        onClick: () => {
          const form = editForm(this.client, entry, done, done);
          slot.replaceChildren(form.el);
          form.focus();
        },
      }),
      button("Delete", { cls: "gmchat-danger", testid: "gmchat-knowledge-delete", aria: `Delete ${name}`, onClick: () => this.askDelete(entry, slot) }),
    );
    const body = entryBody(entry);
    return h(
      "li",
      {
        cls: "gmchat-knowledge-entry",
        testid: "gmchat-knowledge-entry",
        attrs: { "data-id": entry.id, "data-kind": String(entry.kind ?? ""), "data-status": status, "data-scope": scope },
      },
      [
        h("div", { cls: "gmchat-knowledge-entry-line" }, [
          h("span", { cls: "gmchat-knowledge-kind", testid: "gmchat-knowledge-entry-kind", text: kindLabel(entry.kind) }),
          h("span", { cls: "gmchat-knowledge-name", testid: "gmchat-knowledge-entry-name", text: name }),
          h("span", { cls: "gmchat-knowledge-badge", testid: "gmchat-knowledge-entry-status", text: status, attrs: { "data-status": status } }),
          h("span", { cls: "gmchat-knowledge-badge", testid: "gmchat-knowledge-entry-scope", text: scope }),
          actions,
        ]),
        body && body !== name ? h("div", { cls: "gmchat-knowledge-body", text: body }) : null,
        entry.stale_reason ? h("div", { cls: "gmchat-knowledge-stale", text: `Stale: ${entry.stale_reason}` }) : null,
        slot,
      ],
    );
  }

  private askDelete(entry: KnowledgeEntry, slot: HTMLElement): void {
    const name = String(entry.name ?? "");
    const problem = h("span", { cls: "gmchat-knowledge-problem", attrs: { role: "alert" } });
    const remove = button("Delete", {
      cls: "gmchat-danger",
      testid: "gmchat-knowledge-delete-confirm",
      aria: `Delete ${name} for good`,
      onClick: async () => {
        remove.disabled = true;
        const answer = await this.client.ask({ type: "knowledge_remove", entry_id: entry.id });
        remove.disabled = false;
        if (answer.error) problem.textContent = problemText(answer.error);
      },
    });
    slot.replaceChildren(
      h("div", { cls: "gmchat-knowledge-confirm-delete", testid: "gmchat-knowledge-delete-question" }, [
        h("span", { text: `Delete \u201c${name}\u201d? It will no longer be recalled.` }),
        remove,
        button("Keep", { testid: "gmchat-knowledge-delete-keep", onClick: () => slot.replaceChildren() }),
        problem,
      ]),
    );
    remove.focus();
  }

  private async accept(entry: KnowledgeEntry, slot: HTMLElement): Promise<void> {
    const answer = await this.client.ask({ type: "knowledge_accept", entry_id: entry.id });
    if (answer.error) slot.replaceChildren(h("div", { cls: "gmchat-knowledge-problem", attrs: { role: "alert" }, text: problemText(answer.error) }));
  }

  dispose(): void {
    this.stopListening();
    if (this.searchTimer !== null) clearTimeout(this.searchTimer);
  }
}
