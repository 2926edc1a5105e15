/**
 * The knowledge forms: **Save as verified query** under a finished turn (name and question
 * editable, scope shared or personal), **Add definition** and **Add note** in the knowledge view,
 * and an entry's **Edit**. One `EntryForm` serves them all: it sends its request through the
 * view's `KnowledgeClient` and shows the answer — a `flagged` entry asks to be confirmed and is
 * sent again with `confirm_flagged`; a `duplicate` shows the message naming the entry that has the
 * same content; every other refusal shows its sentence. Text goes through `textContent` and input
 * values only.
 */

import { button, h } from "./dom";
import { type KnowledgeAsk, type KnowledgeClient, kindLabel, problemText } from "./knowledge";
import type { KnowledgeEntry, KnowledgeScope } from "./protocol";

/** One text field of a form. */
export interface FieldSpec {
  /** the request's key (and the field's test id: `gmchat-knowledge-<key>`) */
  key: string;
  label: string;
  value?: string;
  multiline?: boolean;
}

export interface EntryFormOptions {
  /** what the form is for, as its accessible name ("Save as verified query") */
  title: string;
  fields: FieldSpec[];
  /** show a shared/personal picker with this choice (null: no picker) */
  scope?: KnowledgeScope | null;
  submitLabel: string;
  /** The request for the values given (`confirmFlagged`: the person confirmed a flagged entry). */
  build(values: Record<string, string>, scope: KnowledgeScope | null, confirmFlagged: boolean): KnowledgeAsk;
  /** The entry was written. */
  saved(entry: KnowledgeEntry | null): void;
  /** The person pressed Cancel. */
  cancel(): void;
}

/** A form that writes one entry (see the module). */
export class EntryForm {
  readonly el: HTMLFormElement;
  private readonly inputs = new Map<string, HTMLInputElement | HTMLTextAreaElement>();
  private readonly scopeSelect: HTMLSelectElement | null;
  private readonly saveButton: HTMLButtonElement;
  private readonly problem: HTMLDivElement;
  private readonly status: HTMLSpanElement;
  private busy = false;

  constructor(
    private readonly client: KnowledgeClient,
    private readonly options: EntryFormOptions,
  ) {
    const rows = options.fields.map((field) => {
      const input = field.multiline
        ? h("textarea", { cls: "gmchat-knowledge-input", testid: `gmchat-knowledge-${field.key}`, attrs: { rows: "2" } })
        : h("input", { cls: "gmchat-knowledge-input", testid: `gmchat-knowledge-${field.key}`, attrs: { type: "text" } });
      input.value = field.value ?? "";
      this.inputs.set(field.key, input);
      return h("label", { cls: "gmchat-knowledge-field" }, [h("span", { cls: "gmchat-knowledge-label", text: field.label }), input]);
    });
    this.scopeSelect = options.scope
      ? h("select", { testid: "gmchat-knowledge-scope", attrs: { "aria-label": "Who sees it" } }, [
          h("option", { text: "Shared with the project", attrs: { value: "shared" } }),
          h("option", { text: "Personal (only me)", attrs: { value: "personal" } }),
        ])
      : null;
    if (this.scopeSelect && options.scope) this.scopeSelect.value = options.scope;
    this.saveButton = h("button", {
      cls: "gmchat-btn gmchat-primary",
      testid: "gmchat-knowledge-save",
      text: options.submitLabel,
      attrs: { type: "submit" },
    });
    this.problem = h("div", { cls: "gmchat-knowledge-problem", testid: "gmchat-knowledge-error", attrs: { role: "alert" } });
    this.status = h("span", { cls: "gmchat-knowledge-status", testid: "gmchat-knowledge-status", attrs: { role: "status" } });
    this.el = h(
      "form",
      {
        cls: "gmchat-knowledge-form",
        testid: "gmchat-knowledge-form",
        attrs: { "aria-label": options.title, novalidate: true },
        on: {
          submit: (event) => {
            event.preventDefault();
            void this.submit(false);
          },
          keydown: (event) => {
            if (event.key === "Escape") options.cancel();
          },
        },
      },
      [
        ...rows,
        h("div", { cls: "gmchat-knowledge-form-bar" }, [
          ...(this.scopeSelect ? [this.scopeSelect] : []),
          this.saveButton,
          button("Cancel", { testid: "gmchat-knowledge-cancel", onClick: () => options.cancel() }),
          this.status,
        ]),
        this.problem,
      ],
    );
  }

  /** Put the cursor in the first field. */
  focus(): void {
    this.inputs.values().next().value?.focus();
  }

  private values(): Record<string, string> {
    const values: Record<string, string> = {};
    for (const [key, input] of this.inputs) values[key] = input.value;
    return values;
  }

  /** Send the form (again with `confirmFlagged` after the person confirmed a flagged entry). */
  async submit(confirmFlagged: boolean): Promise<void> {
    if (this.busy) return;
    const values = this.values();
    const empty = this.options.fields.find((field) => !values[field.key]?.trim());
    if (empty) {
      this.showProblem(`${empty.label} is empty.`);
      this.inputs.get(empty.key)?.focus();
      return;
    }
    this.busy = true;
    this.saveButton.disabled = true;
    this.status.textContent = "Saving\u2026";
    this.problem.replaceChildren();
    const scope = this.scopeSelect ? (this.scopeSelect.value === "personal" ? "personal" : "shared") : null;
    const answer = await this.client.ask(this.options.build(values, scope, confirmFlagged));
    this.busy = false;
    this.saveButton.disabled = false;
    this.status.textContent = "";
    if (!answer.error) {
      this.options.saved(answer.entry ?? null);
      return;
    }
    if (answer.error.code === "flagged" && !confirmFlagged) {
      // The data scorer flagged a text: the person decides, and the same values go again.
      const again = button("Save anyway", {
        cls: "gmchat-danger",
        testid: "gmchat-knowledge-confirm",
        onClick: () => void this.submit(true),
      });
      this.showProblem(problemText(answer.error), again, "flagged");
      return;
    }
    this.showProblem(problemText(answer.error), null, answer.error.code ?? "");
  }

  /** A refusal under the form (`code`: the answer's, on `data-code`), with an action if any. */
  private showProblem(message: string, action: HTMLButtonElement | null = null, code = "invalid"): void {
    this.problem.setAttribute("data-code", code);
    this.problem.replaceChildren(h("span", { text: message }), ...(action ? [action] : []));
  }
}

/** The request that saves turn `turn` (its index in the view) as a verified query. */
export function saveTurnForm(client: KnowledgeClient, turn: number, question: string, saved: (entry: KnowledgeEntry | null) => void, cancel: () => void): EntryForm {
  return new EntryForm(client, {
    title: "Save as verified query",
    fields: [
      { key: "name", label: "Name", value: defaultName(question) },
      { key: "question", label: "Question it answers", value: question, multiline: true },
    ],
    scope: "shared",
    submitLabel: "Save",
    build: (values, scope, confirmFlagged) => ({
      type: "knowledge_save_turn",
      turn,
      name: values.name ?? "",
      question: values.question ?? "",
      scope: scope ?? "shared",
      confirm_flagged: confirmFlagged,
    }),
    saved,
    cancel,
  });
}

/** A name to start from: the question's first words (the person edits it). */
export function defaultName(question: string, max = 60): string {
  const text = question.trim().replace(/\s+/g, " ").replace(/[?.!]+$/, "");
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const space = cut.lastIndexOf(" ");
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}\u2026`;
}

/** **Add definition**: a term and what it means (shared with the project). */
export function definitionForm(client: KnowledgeClient, saved: (entry: KnowledgeEntry | null) => void, cancel: () => void): EntryForm {
  return new EntryForm(client, {
    title: "Add definition",
    fields: [
      { key: "term", label: "Term" },
      { key: "text", label: "Meaning", multiline: true },
    ],
    submitLabel: "Add definition",
    build: (values, _scope, confirmFlagged) => ({
      type: "knowledge_add",
      kind: "definition",
      term: values.term ?? "",
      text: values.text ?? "",
      confirm_flagged: confirmFlagged,
    }),
    saved,
    cancel,
  });
}

/** **Add note**: a personal preference or correction (recalled only for this person). */
export function noteForm(client: KnowledgeClient, saved: (entry: KnowledgeEntry | null) => void, cancel: () => void): EntryForm {
  return new EntryForm(client, {
    title: "Add note",
    fields: [{ key: "text", label: "Note (only for you)", multiline: true }],
    submitLabel: "Add note",
    build: (values, _scope, confirmFlagged) => ({ type: "knowledge_add", kind: "note", text: values.text ?? "", confirm_flagged: confirmFlagged }),
    saved,
    cancel,
  });
}

/** **Edit**: a verified query's name and question, a definition's term and meaning, a note's text. */
export function editForm(client: KnowledgeClient, entry: KnowledgeEntry, saved: (entry: KnowledgeEntry | null) => void, cancel: () => void): EntryForm {
  const fields: FieldSpec[] =
    entry.kind === "verified_query"
      ? [
          { key: "name", label: "Name", value: String(entry.name ?? "") },
          { key: "question", label: "Question it answers", value: String(entry.question ?? ""), multiline: true },
        ]
      : entry.kind === "definition"
        ? [
            { key: "term", label: "Term", value: String(entry.term ?? entry.name ?? "") },
            { key: "text", label: "Meaning", value: String(entry.text ?? ""), multiline: true },
          ]
        : [{ key: "text", label: "Note", value: String(entry.text ?? ""), multiline: true }];
  return new EntryForm(client, {
    title: `Edit ${kindLabel(entry.kind).toLowerCase()} ${String(entry.name ?? "")}`,
    fields,
    submitLabel: "Save changes",
    build: (values, _scope, confirmFlagged) => ({
      type: "knowledge_update",
      entry_id: entry.id,
      ...values,
      confirm_flagged: confirmFlagged,
    }),
    saved,
    cancel,
  });
}
