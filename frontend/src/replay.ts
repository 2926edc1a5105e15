/**
 * Replay: the view's cursor, its turn records and their copy in sessionStorage, and the watch
 * that asks again when a lost kernel connection comes back.
 *
 * A view remembers a cursor: the conversation, the journal position through which it has every
 * turn, and the kernel's epoch token (gmchat_nb/widget/protocol.py). `hello` sends it back; the
 * kernel answers a `replay` of what changed after it when it can, else a `snapshot`. A reloaded
 * page starts with nothing, so each view also keeps the turn records it rendered in
 * sessionStorage (this browser tab only, gone when the tab closes), filed under the widget's
 * `storage_key` and the conversation id; a reload renders them once the kernel answers with a
 * replay. Anything odd in storage (missing, too big, corrupted, another version) means a snapshot.
 */

import type { ChatEvent, ClientMessage, CursorJson, TableData, TurnRecord } from "./protocol";

export interface ViewCursor {
  conversationId: string;
  position: number;
  epoch: string;
}

export interface StoredView {
  cursor: ViewCursor;
  turns: TurnRecord[];
}

export const STORAGE_PREFIX = "gmchat:v1:";
/** The largest saved view (UTF-16 characters): an origin has ~5 MB, JupyterLab shares it. */
export const MAX_STORED_CHARS = 400_000;
/** Saved views kept at most (the oldest go first): one per widget and conversation. */
export const MAX_STORED_VIEWS = 8;
const STORAGE_KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Run `fn`; storage may be disabled, full or throwing (sandboxed frames): never fatal. */
export function quietly<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

/** A cursor from a kernel message's `cursor` (or a saved one), or null when it is malformed. */
export function cursorOf(value: unknown): ViewCursor | null {
  if (!value || typeof value !== "object") return null;
  const { conversation_id: conversationId, position, epoch } = value as Partial<Record<keyof CursorJson, unknown>>;
  if (typeof conversationId !== "string" || !conversationId) return null;
  if (typeof position !== "number" || !Number.isSafeInteger(position) || position < 0) return null;
  if (typeof epoch !== "string" || !epoch) return null;
  return { conversationId, position, epoch };
}

/** The `hello` a view sends: with its cursor when it has one (then a replay can answer it). */
export function helloMessage(cursor: ViewCursor | null | undefined): ClientMessage {
  if (!cursor) return { type: "hello" };
  return { type: "hello", conversation_id: cursor.conversationId, after: cursor.position, epoch: cursor.epoch };
}

/** Whether a `replay` answers the hello this cursor sent. */
export function replayAnswers(
  cursor: ViewCursor | null | undefined,
  replay: { conversation_id?: unknown; after?: unknown } | null | undefined,
): boolean {
  return Boolean(cursor && replay && replay.conversation_id === cursor.conversationId && replay.after === cursor.position);
}

/** The sessionStorage key of a widget's saved view of one conversation. */
export function storageKey(widgetKey: string, conversationId: string): string {
  return `${STORAGE_PREFIX}${widgetKey}:${conversationId}`;
}

function storageKeys(storage: Storage): string[] {
  const keys: string[] = [];
  for (let i = 0; i < storage.length; i++) {
    const key = storage.key(i);
    if (typeof key === "string" && key.startsWith(STORAGE_PREFIX)) keys.push(key);
  }
  return keys;
}

function validWidgetKey(widgetKey: unknown): widgetKey is string {
  return typeof widgetKey === "string" && STORAGE_KEY_PATTERN.test(widgetKey);
}

function isTurnRecord(value: unknown): value is TurnRecord {
  if (!value || typeof value !== "object") return false;
  const index = (value as { index?: unknown }).index;
  return typeof index === "number" && Number.isSafeInteger(index) && index >= 0;
}

function parseView(text: unknown, conversationId: string): StoredView | null {
  if (typeof text !== "string" || text.length > MAX_STORED_CHARS) return null;
  const saved = JSON.parse(text) as unknown;
  if (!saved || typeof saved !== "object") return null;
  const view = saved as { v?: unknown; cursor?: unknown; turns?: unknown };
  if (view.v !== 1) return null;
  const cursor = cursorOf(view.cursor);
  if (!cursor || cursor.conversationId !== conversationId || !Array.isArray(view.turns)) return null;
  const all = view.turns as unknown[];
  const turns = all.filter(isTurnRecord);
  if (turns.length !== all.length) return null;
  return { cursor, turns };
}

/**
 * The view a widget saved in this tab, or null (and the broken entry removed) when there is
 * none or it cannot be trusted. Never throws.
 */
export function loadView(storage: Storage | null | undefined, widgetKey: unknown): StoredView | null {
  if (!storage || !validWidgetKey(widgetKey)) return null;
  const prefix = storageKey(widgetKey, "");
  const keys = quietly(() => storageKeys(storage).filter((key) => key.startsWith(prefix)), [] as string[]);
  for (const key of keys) {
    const view = quietly(() => parseView(storage.getItem(key), key.slice(prefix.length)), null);
    if (view) return view;
    quietly(() => storage.removeItem(key), undefined);
  }
  return null;
}

function savedAt(text: string | null): number {
  const at = quietly(() => (JSON.parse(text ?? "") as { saved_at?: unknown } | null)?.saved_at, 0);
  return typeof at === "number" && Number.isFinite(at) ? at : 0;
}

/**
 * Save a view's cursor and turn records for a reload of this tab; other conversations' saved
 * views of the same widget go, and the oldest beyond MAX_STORED_VIEWS. A view over the size
 * limit (or one the storage refuses) is not kept: that reload takes a snapshot. Never throws.
 * @returns whether it was saved
 */
export function saveView(
  storage: Storage | null | undefined,
  widgetKey: unknown,
  cursor: ViewCursor | null | undefined,
  turns: readonly unknown[],
  { maxChars = MAX_STORED_CHARS, maxViews = MAX_STORED_VIEWS }: { maxChars?: number; maxViews?: number } = {},
): boolean {
  if (!storage || !validWidgetKey(widgetKey) || !cursor) return false;
  const key = storageKey(widgetKey, cursor.conversationId);
  const mine = storageKey(widgetKey, "");
  for (const other of quietly(() => storageKeys(storage), [] as string[])) {
    if (other.startsWith(mine) && other !== key) quietly(() => storage.removeItem(other), undefined);
  }
  const cursorJson: CursorJson = { conversation_id: cursor.conversationId, position: cursor.position, epoch: cursor.epoch };
  const text = quietly<string | null>(() => JSON.stringify({ v: 1, saved_at: Date.now(), cursor: cursorJson, turns }), null);
  if (text === null || text.length > maxChars) {
    quietly(() => storage.removeItem(key), undefined);
    return false;
  }
  const saved = quietly(() => {
    storage.setItem(key, text);
    return true;
  }, false);
  if (!saved) {
    quietly(() => storage.removeItem(key), undefined); // full: an old copy would be a wrong one
    return false;
  }
  const ages = quietly(() => storageKeys(storage).map((k): [string, number] => [k, savedAt(storage.getItem(k))]), []);
  ages.sort((a, b) => a[1] - b[1]);
  for (const [old] of ages.slice(0, Math.max(0, ages.length - maxViews))) {
    if (old !== key) quietly(() => storage.removeItem(old), undefined);
  }
  return true;
}

/**
 * Keep a view's turn records (by index) up to date with one live message, the way the view
 * renders it: `turn_start` opens a record, `events` and `table` add to it, `turn_end` completes
 * it. (Snapshots and replays carry whole records.) Malformed messages change nothing.
 */
export function recordMessage(records: Map<number, TurnRecord>, msg: unknown): void {
  if (!msg || typeof msg !== "object") return;
  const m = msg as { type?: unknown; turn?: unknown; events?: unknown; table?: unknown };
  const turn = m.turn && typeof m.turn === "object" ? (m.turn as TurnRecord) : null;
  const index = Number(turn ? turn.index : m.turn);
  if (!Number.isSafeInteger(index)) return;
  const record = records.get(index);
  if (record) {
    if (!Array.isArray(record.events)) record.events = []; // (a saved record may lack them)
    if (!Array.isArray(record.tables)) record.tables = [];
  }
  switch (m.type) {
    case "turn_start":
      if (turn) records.set(index, { ...turn, events: [], tables: Array.isArray(turn.tables) ? [...turn.tables] : [] });
      break;
    case "events":
      if (record?.events && Array.isArray(m.events)) record.events.push(...(m.events as ChatEvent[]));
      break;
    case "table": {
      const table = m.table;
      if (record?.tables && table && typeof table === "object") {
        const key = (table as { key?: unknown }).key;
        if (!record.tables.some((t) => t && t.key === key)) record.tables.push(table as TableData);
      }
      break;
    }
    case "turn_end":
      if (turn) records.set(index, { ...(record ?? {}), ...turn, events: record?.events ?? [], running: false });
      break;
    default:
      break;
  }
}

/** The part of a JupyterLab kernel connection the watch needs (a Lumino signal). */
interface StatusSignal {
  connect(slot: (sender: unknown, status: string) => void): unknown;
  disconnect(slot: (sender: unknown, status: string) => void): unknown;
}

/**
 * Calls `onReconnect` when the kernel connection comes back after it was lost, so a view whose
 * comm reconnected asks for what it missed. Uses the JupyterLab widget manager's kernel when it
 * has one (other front ends: nothing to watch).
 */
export class ConnectionWatch {
  private lost = false;
  private signal: StatusSignal | null;
  private readonly slot: (sender: unknown, status: string) => void;

  constructor(
    kernel: unknown,
    private readonly onReconnect: () => void,
  ) {
    this.slot = (_sender, status) => this.changed(status);
    const signal = quietly(
      () => (kernel ? ((kernel as { connectionStatusChanged?: unknown }).connectionStatusChanged ?? null) : null),
      null,
    ) as StatusSignal | null;
    const connected =
      Boolean(signal) &&
      quietly(() => {
        (signal as StatusSignal).connect(this.slot);
        return true;
      }, false);
    this.signal = connected ? signal : null;
  }

  changed(status: string): void {
    if (status !== "connected") {
      this.lost = true;
    } else if (this.lost) {
      this.lost = false;
      this.onReconnect();
    }
  }

  dispose(): void {
    const signal = this.signal;
    if (signal) quietly(() => signal.disconnect(this.slot), undefined);
    this.signal = null;
  }
}
