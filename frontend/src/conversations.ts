/**
 * The conversation list: the picker in the header (a `<select>` of the stored conversations,
 * refreshed when it is opened, at most every 2 s) and the label of each conversation in it.
 */

import { h } from "./dom";
import type { ConversationItem, ConversationList } from "./protocol";
import type { Send } from "./table";

function formatTimestamp(value: unknown): string {
  if (value === null || value === undefined || value === "") return "";
  let date: Date;
  if (typeof value === "number") date = new Date(value < 1e12 ? value * 1000 : value);
  else date = new Date(String(value));
  if (Number.isNaN(date.getTime())) return String(value);
  const pad = (n: number): string => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** The label of a conversation in the picker: `title · 4 messages · 2025-01-02 10:30`. */
export function conversationLabel(item: ConversationItem): string {
  const title = String(item.title || "").trim() || "Untitled conversation";
  const parts = [title.length > 60 ? `${title.slice(0, 59)}\u2026` : title];
  const messages = item.messages;
  if (typeof messages === "number" && Number.isFinite(messages)) parts.push(`${messages} message${messages === 1 ? "" : "s"}`);
  const when = formatTimestamp(item.updated_at);
  if (when) parts.push(when);
  return parts.join(" \u00b7 ");
}

const LIST_INTERVAL_MS = 2000;

/** The header's conversation picker: choosing one asks to open it. */
export class ConversationPicker {
  readonly el: HTMLSelectElement;
  private lastListRequest = 0;
  private titles = new Map<string, string>(); // conversation id -> its title, as last listed

  /**
   * @param send sends `list_conversations` and `open_conversation`
   * @param current the id of the conversation the view shows (null before it knows)
   */
  constructor(
    private readonly send: Send,
    private readonly current: () => string | null,
  ) {
    this.el = h("select", {
      cls: "gmchat-conversations",
      testid: "gmchat-conversations",
      attrs: { "aria-label": "Conversations" },
      on: {
        change: () => this.open(this.el.value),
        focus: () => this.request(),
        pointerdown: () => this.request(),
      },
    });
  }

  /** Show `items`, with `current` (else the view's conversation) selected. */
  set(items: unknown, current?: string | null): void {
    const list = (Array.isArray(items) ? (items as unknown[]) : []) as Array<ConversationItem | null>;
    const currentId = current ?? this.current();
    const options = list
      .filter((item): item is ConversationItem => Boolean(item) && typeof item === "object" && item?.id !== undefined)
      .map((item) => h("option", { text: conversationLabel(item), attrs: { value: String(item.id) } }));
    this.titles = new Map(
      list.filter((item): item is ConversationItem => Boolean(item) && typeof item === "object").map((item) => [String(item.id), String(item.title ?? "")]),
    );
    const known = list.some((item) => item && String(item.id) === String(currentId));
    if (currentId !== null && currentId !== undefined && !known) {
      options.unshift(h("option", { text: "Current conversation (new)", attrs: { value: String(currentId) } }));
    }
    if (currentId === null || currentId === undefined || !options.length) {
      options.unshift(h("option", { text: options.length ? "Open a conversation\u2026" : "No conversations yet", attrs: { value: "" } }));
    }
    this.el.replaceChildren(...options);
    this.el.value = currentId === null || currentId === undefined ? "" : String(currentId);
  }

  /** The title of conversation `id` as last listed ("" when it has none or is not listed). */
  titleOf(id: string | null): string {
    return id === null ? "" : (this.titles.get(id) ?? "");
  }

  /** A snapshot's or replay's `conversations`: a list, or {items, current}. */
  apply(list: ConversationList | null | undefined, conversation: string | null): void {
    if (Array.isArray(list)) this.set(list, conversation);
    else if (list && typeof list === "object") this.set(list.items, list.current ?? conversation);
    else this.set([], conversation);
  }

  private request(): void {
    const now = Date.now();
    if (now - this.lastListRequest < LIST_INTERVAL_MS) return;
    this.lastListRequest = now;
    this.send({ type: "list_conversations" });
  }

  private open(id: string): void {
    if (!id || id === String(this.current())) return;
    this.send({ type: "open_conversation", conversation_id: id });
  }
}
