/**
 * The server transport: a `Transport` over the Jupyter server extension's durable routes
 * (docs/server.md), for the JupyterLab side panel. It answers the view with the same messages
 * the kernel sends (protocol.ts), so `ChatView` does not know which one drives it:
 *
 * - `hello` lists the user's conversations (`GET conversations/`, which names the server's project
 *   and provider too: the header shows them), takes the remembered one, else
 *   the latest, else creates one (`POST conversations/`), lists its turns with their questions and
 *   the journal's last position (`GET conversations/{id}/turns/`), reads the conversation's journal
 *   from its start (`GET conversations/{id}/events`, server-sent events read from `fetch`'s body),
 *   and answers with a `snapshot` of the turns once it has read up to that position; later frames
 *   become `turn_start`, `events`, `table` and `turn_end`. A turn is the events of one `turn_id`
 *   (the id the turns route lists it under); `done` or `error` (an interrupted turn ends with one)
 *   ends it. A turn that first shows up live and was asked elsewhere gets its question from the
 *   turns route before its `turn_start` is shown.
 * - A dropped stream is read again from the last position seen (`?after=N`): no gap, no
 *   duplicate. `409 cursor_ahead` and `410 resync_required` rebuild the view from the start (or
 *   from the earliest position retention kept).
 * - `ask` admits a turn (`POST turns/`, a fresh `turn_id`), `stop` cancels it, `confirm` answers
 *   a pending mutation (`POST confirm/` with the `confirm_mutation` frame's position as
 *   `expected_sequence`, sent as the person's browser session: `personFetch`); the conversation
 *   controls map to the conversations routes.
 * - A query's rows arrive on its `tool_result` (`result.data`); the view gets them as a table
 *   paged here. A table's Chart button (`chart_request`) asks
 *   `GET conversations/{id}/turns/{turn}/chart?call_id=…&mark=…` and hands the answer back as
 *   `chart_options` (a refusal too, so the table's pickers show it). A finished turn's evidence comes from `GET conversations/{id}/turns/{turn}/evidence`;
 *   without that route the evidence is built from the events, without GraphQL or code.
 * - Knowledge requests go to the `knowledge/` routes (server-knowledge.ts); **Save as verified
 *   query** names the turn by its conversation and turn id.
 *
 * A server without the turns route (an older gmchat_nb: a 404 that is not the route's JSON) is read
 * as before: the journal's end from the events route's `409 cursor_ahead` for a cursor past any
 * journal, and the questions asked from this browser from `localStorage` (other turns show the
 * conversation's title, its first question, or say that the server did not keep it).
 */

import { sortRows } from "../format";
import type {
  ChartIntent,
  ChatEvent,
  ClientMessage,
  ConversationItem,
  ErrorInfo,
  EvidenceRow,
  JsonObject,
  ServerMessage,
  TableData,
  TableSort,
  TurnRecord,
} from "../protocol";
import { knowledgeOverHttp } from "./server-knowledge";
import { SseParser } from "./sse";
import type { Transport } from "./transport";

/** Fetch `path` relative to the chat routes' URL (`{base_url}gmchat/chat/`), authenticated. */
export type Fetcher = (path: string, init?: RequestInit) => Promise<Response>;

/** Where the transport keeps what must outlive a page (localStorage in the panel). */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export interface ServerTransportOptions {
  fetch: Fetcher;
  /**
   * Fetch as the person's browser session (the cookie and the XSRF header, no Jupyter token), for
   * what only a person may do: answer a confirmation (the server refuses a token-authenticated
   * decision). Default: `fetch`.
   */
  personFetch?: Fetcher;
  /** Keys of what is remembered (the conversation shown, the questions asked) are prefixed with it. */
  storagePrefix: string;
  storage?: KeyValueStore | null;
  /** A fresh id for a turn or a cancel command (crypto.randomUUID by default). */
  newId?: () => string;
  /** Milliseconds to wait before each reconnection attempt (the last one repeats). */
  reconnectDelays?: readonly number[];
}

export const PAGE_SIZE = 25;
const MAX_QUESTIONS = 500;
const PROBE_AFTER = "999999999999999"; // past any journal: the 409 names the last position (no turns route)
const DEFAULT_DELAYS = [250, 1000, 2000, 5000, 10000];

export const EXTENSION_MISSING =
  "The gmchat server extension is not enabled on this Jupyter server: run " +
  "`jupyter server extension enable gmchat_nb` (or reinstall gmchat_nb with `pip install 'gmchat_nb[lab]'`) " +
  "in the environment that runs Jupyter, then restart Jupyter.";

/** A refusal of the server, in the view's error shape. */
export class ServerProblem extends Error {
  constructor(
    readonly info: ErrorInfo,
    readonly status: number,
  ) {
    super(info.message || `HTTP ${status}`);
  }
}

interface TableRows {
  columns: string[];
  rows: unknown[];
  turnId: string;
  callId: string;
}

/** The parts of a chart's intent the chart route takes as query parameters. */
const CHART_PARAMETERS = ["mark", "x", "y", "color", "aggregate"] as const;

interface TurnState {
  index: number;
  turnId: string;
  question: string;
  questionKnown: boolean; // false: a placeholder (asked elsewhere, not in the turns list yet)
  events: ChatEvent[];
  tables: TableData[];
  calls: Map<string, JsonObject>; // tool call id -> its arguments
  firstPosition: number;
  ended: boolean;
  error: ErrorInfo | null;
  evidence: EvidenceRow[] | null;
  pendingConfirmation: { id: string; position: number } | null;
}

type JournalFrame = JsonObject & { type: string; position: number; turn_id: string };

function isObject(value: unknown): value is JsonObject {
  return Boolean(value) && typeof value === "object" && !Array.isArray(value);
}

function randomId(): string {
  const crypto = globalThis.crypto as Crypto | undefined;
  if (crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
  return `t-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 12)}`;
}

async function readJson(response: Response): Promise<JsonObject | null> {
  try {
    const body: unknown = await response.json();
    return isObject(body) ? body : null;
  } catch {
    return null;
  }
}

/** What the server said when it refused (`{error, message}`, or the POST envelope's error event). */
function refusal(status: number, body: JsonObject | null, fallback: string): ErrorInfo {
  if (body) {
    if (typeof body.error === "string") return { code: body.error, message: String(body.message ?? fallback) };
    const events = Array.isArray(body.events) ? body.events : [];
    const first = events.find(isObject);
    if (first && typeof first.message === "string") return { code: String(first.code ?? ""), message: first.message };
    if (typeof body.message === "string") return { code: `http_${status}`, message: body.message };
  }
  return { code: `http_${status}`, message: fallback };
}

/** The problem of a refused call, with what to do about it. */
async function problemOf(response: Response, what: string): Promise<ServerProblem> {
  const body = await readJson(response);
  const status = response.status;
  if (status === 503) {
    const said = refusal(status, body, "The chat service is unavailable.");
    return new ServerProblem(
      {
        code: "store_unavailable",
        message:
          `The gmchat server extension is running but cannot serve the chat: ${said.message} ` +
          "Fix what it names (the Jupyter server's log has the details); the panel tries again by itself.",
      },
      status,
    );
  }
  if (status === 403) {
    return new ServerProblem(
      {
        code: "forbidden",
        message: "The Jupyter server refused gmchat's request (403): log in again, or ask whoever runs the server for permission to use gmchat.",
      },
      status,
    );
  }
  return new ServerProblem(refusal(status, body, `${what} failed (HTTP ${status}).`), status);
}

/** A query's rows on its tool_result (`result.data`), or null. */
function queryRows(event: JsonObject): unknown[] | null {
  const result = event.result;
  return isObject(result) && Array.isArray(result.data) ? result.data : null;
}

/** An event as the view gets it: a query's rows leave its tool_result (they travel as a table). */
function wireEvent(frame: JsonObject): ChatEvent {
  const { turn_id: _turn, ...event } = frame;
  const rows = queryRows(event);
  if (rows && isObject(event.result)) {
    const { data: _data, ...result } = event.result;
    event.result = { ...result, rows: rows.length };
  }
  return event as unknown as ChatEvent;
}

/** The transport of the side panel (see the module docstring). */
export class ServerTransport implements Transport {
  private readonly handlers = new Set<(msg: ServerMessage) => void>();
  private readonly fetcher: Fetcher;
  private readonly personFetcher: Fetcher;
  private readonly storage: KeyValueStore | null;
  private readonly prefix: string;
  private readonly newId: () => string;
  private readonly delays: readonly number[];
  private conversationId: string | null = null;
  private conversations: ConversationItem[] = [];
  private header: { project: string | null; provider: string | null } = { project: null, provider: null };
  private turns = new Map<string, TurnState>();
  private hidden = new Set<string>(); // turn ids "clear" took out of the view
  private nextIndex = 0;
  private position = 0; // the last journal position read
  private snapshotAt = 0; // the position the snapshot waits for
  private live = false; // the snapshot is sent: frames become live messages
  private generation = 0; // bumped by every (re)connection: stale readers stop
  private abort: AbortController | null = null;
  private retry: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;
  private queue: Promise<void> = Promise.resolve();
  private readonly tableRows = new Map<string, TableRows>();
  private evidenceRoute: boolean | null = null; // null: not asked yet
  private turnsRoute: boolean | null = null; // null: not asked yet
  private serverQuestions = new Map<string, string>(); // turn id -> its text, from the turns route
  private disposed = false;

  constructor(options: ServerTransportOptions) {
    this.fetcher = options.fetch;
    this.personFetcher = options.personFetch ?? options.fetch;
    this.storage = options.storage ?? null;
    this.prefix = options.storagePrefix;
    this.newId = options.newId ?? randomId;
    this.delays = options.reconnectDelays?.length ? options.reconnectDelays : DEFAULT_DELAYS;
  }

  /* ---------- Transport ---------- */

  send(msg: ClientMessage): void {
    void this.handle(msg).catch((error: unknown) => this.fail(error));
  }

  onMessage(handler: (msg: ServerMessage) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /** The panel rebuilds from the server's journal on every load: nothing kept in sessionStorage. */
  storageKey(): string | null {
    return null;
  }

  dispose(): void {
    this.disposed = true;
    this.generation++;
    this.abort?.abort();
    if (this.retry !== null) clearTimeout(this.retry);
    this.handlers.clear();
  }

  /* ---------- what the view asks ---------- */

  private async handle(msg: ClientMessage): Promise<void> {
    switch (msg.type) {
      case "hello":
        return this.connect(this.remembered());
      case "ask":
        return this.ask(msg.text);
      case "stop":
        return this.stop();
      case "confirm":
        return this.confirm(msg.call_id, msg.ok);
      case "table_page":
        return this.page(msg.table, msg.offset, msg.limit, msg.sort);
      case "chart_request":
        return this.chart(msg.table, msg.intent);
      case "to_frame":
        return this.emit({
          type: "error",
          code: "not_in_panel",
          message:
            "The side panel has no kernel to bind a DataFrame in: use \u2192 DataFrame in the turn's Evidence, which inserts the cell into the active notebook.",
        });
      case "new_conversation":
        return this.newConversation();
      case "list_conversations":
        await this.listConversations();
        return this.emit({ type: "conversations", items: this.conversations, current: this.conversationId });
      case "open_conversation":
        return this.connect(msg.conversation_id, true);
      case "clear":
        return this.clear();
      case "knowledge_list":
      case "knowledge_save_turn":
      case "knowledge_add":
      case "knowledge_update":
      case "knowledge_remove":
      case "knowledge_accept":
        return this.emit(await knowledgeOverHttp(this.fetcher, msg, (index) => this.turnAt(index)));
      default:
        return undefined;
    }
  }

  private emit(msg: ServerMessage): void {
    for (const handler of [...this.handlers]) handler(msg);
  }

  /** Emit in order with the journal's messages (a turn's end waits for its evidence). */
  private enqueue(task: () => void | Promise<void>): void {
    this.queue = this.queue.then(task).catch((error: unknown) => this.fail(error));
  }

  private fail(error: unknown): void {
    if (this.disposed) return;
    if (error instanceof ServerProblem) {
      this.emit({ type: "error", ...error.info });
      return;
    }
    if (error instanceof DOMException && error.name === "AbortError") return;
    const reason = error instanceof Error && error.message ? error.message : String(error);
    this.emit({ type: "error", code: "server_unreachable", message: `Could not reach the Jupyter server: ${reason}` });
  }

  private async call(path: string, init: RequestInit, what: string, fetcher = this.fetcher): Promise<JsonObject> {
    const response = await fetcher(path, init);
    if (!response.ok) throw await problemOf(response, what);
    return (await readJson(response)) ?? {};
  }

  private post(path: string, body: JsonObject, what: string, fetcher = this.fetcher): Promise<JsonObject> {
    return this.call(path, { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } }, what, fetcher);
  }

  /* ---------- remembered state ---------- */

  private remembered(): string | null {
    try {
      return this.storage?.getItem(`${this.prefix}conversation`) || null;
    } catch {
      return null;
    }
  }

  private remember(conversationId: string): void {
    try {
      this.storage?.setItem(`${this.prefix}conversation`, conversationId);
    } catch {
      // storage full or refused: the panel opens on the latest conversation instead
    }
  }

  private questions(): Record<string, string> {
    try {
      const raw = this.storage?.getItem(`${this.prefix}questions`);
      const parsed: unknown = raw ? JSON.parse(raw) : {};
      return isObject(parsed) ? (parsed as Record<string, string>) : {};
    } catch {
      return {};
    }
  }

  private keepQuestion(turnId: string, text: string): void {
    const kept = this.questions();
    kept[turnId] = text;
    const ids = Object.keys(kept);
    for (const id of ids.slice(0, Math.max(0, ids.length - MAX_QUESTIONS))) delete kept[id];
    try {
      this.storage?.setItem(`${this.prefix}questions`, JSON.stringify(kept));
    } catch {
      // not kept: after a reload this turn shows the title instead
    }
  }

  /* ---------- conversations ---------- */

  private async listConversations(): Promise<ConversationItem[]> {
    const response = await this.fetcher("conversations/", { method: "GET" });
    if (response.status === 404) {
      throw new ServerProblem({ code: "extension_missing", message: EXTENSION_MISSING }, 404);
    }
    if (!response.ok) throw await problemOf(response, "Listing the conversations");
    const body = await readJson(response);
    const items = body && Array.isArray(body.conversations) ? body.conversations : [];
    // the server's project and provider, for the header (an older server sends neither)
    const label = (value: unknown): string | null => (typeof value === "string" && value ? value : null);
    this.header = { project: label(body?.project), provider: label(body?.provider) };
    this.conversations = items.filter(isObject).map((item) => item as unknown as ConversationItem);
    return this.conversations;
  }

  private async newConversation(): Promise<void> {
    const body = await this.post("conversations/", {}, "Creating a conversation");
    const created = isObject(body.conversation) ? body.conversation : null;
    if (!created || typeof created.id !== "string") throw new ServerProblem({ code: "bad_answer", message: "The server created no conversation." }, 200);
    await this.connect(created.id, true);
  }

  /**
   * (Re)build the view of a conversation: `wanted`, else the latest, else a new one. `strict`:
   * the user chose `wanted`, so a conversation that is gone is an error, not a fallback.
   */
  private async connect(wanted: string | null, strict = false): Promise<void> {
    const generation = ++this.generation;
    this.abort?.abort();
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
    let items: ConversationItem[];
    try {
      items = await this.listConversations();
    } catch (error) {
      if (generation !== this.generation) return;
      // Not enabled (404): only a restart helps. Anything else: try again later by itself.
      if (!(error instanceof ServerProblem && (error.status === 404 || error.status === 403))) this.scheduleConnect(generation, wanted);
      throw error;
    }
    if (generation !== this.generation) return;
    let chosen = wanted && items.some((item) => item.id === wanted) ? wanted : null;
    if (!chosen && strict && wanted) throw new ServerProblem({ code: "bad_event", message: "That conversation is gone (or is not yours)." }, 404);
    if (!chosen && items.length) {
      const latest = [...items].sort((a, b) => Number(b.updated_at ?? 0) - Number(a.updated_at ?? 0))[0];
      chosen = latest ? latest.id : null;
    }
    if (!chosen) {
      const body = await this.post("conversations/", {}, "Creating a conversation");
      const created = isObject(body.conversation) ? (body.conversation as unknown as ConversationItem) : null;
      if (!created || typeof created.id !== "string") throw new ServerProblem({ code: "bad_answer", message: "The server created no conversation." }, 200);
      this.conversations = [created, ...items];
      chosen = created.id;
    }
    if (generation !== this.generation) return;
    this.conversationId = chosen;
    this.remember(chosen);
    this.failures = 0;
    await this.rebuild(generation, 0);
  }

  private scheduleConnect(generation: number, wanted: string | null): void {
    const delay = this.delays[Math.min(this.failures++, this.delays.length - 1)] ?? 5000;
    this.retry = setTimeout(() => {
      this.retry = null;
      if (generation === this.generation && !this.disposed) {
        void this.connect(wanted).catch((error: unknown) => this.fail(error));
      }
    }, delay);
  }

  /** Forget the turns and read the journal from `start`: a snapshot once it reaches its end. */
  private async rebuild(generation: number, start: number): Promise<void> {
    const conversation = this.conversationId;
    if (!conversation) return;
    this.turns = new Map();
    this.tableRows.clear();
    this.nextIndex = 0;
    this.position = start;
    this.live = false;
    this.serverQuestions = new Map();
    this.snapshotAt = await this.lastPosition(conversation);
    if (generation !== this.generation) return;
    if (this.snapshotAt <= start) this.enqueue(() => this.sendSnapshot());
    void this.follow(generation);
  }

  /**
   * The journal's last position, with the conversation's questions: from the turns route, else
   * (a server without it) the events route's 409 for a cursor past the end.
   */
  private async lastPosition(conversation: string): Promise<number> {
    if (this.turnsRoute !== false) {
      const latest = await this.readTurns(conversation);
      if (latest !== null) return latest;
    }
    const response = await this.fetcher(`conversations/${encodeURIComponent(conversation)}/events?after=${PROBE_AFTER}`, { method: "GET" });
    const body = await readJson(response);
    if (response.status === 409 && body && typeof body.latest_sequence === "number") return body.latest_sequence;
    if (!response.ok) throw await problemOf(response, "Reading the conversation");
    return 0; // (an events stream this far ahead: nothing to wait for)
  }

  /**
   * `GET conversations/{id}/turns/`: learn the turns' questions; the journal's last position, or
   * null when the route is not on this server (a 404 that is not the route's JSON).
   */
  private async readTurns(conversation: string): Promise<number | null> {
    const response = await this.fetcher(`conversations/${encodeURIComponent(conversation)}/turns/`, { method: "GET" });
    const body = await readJson(response);
    if (response.status === 404 && (body === null || typeof body.error !== "string")) {
      this.turnsRoute = false;
      return null;
    }
    if (!response.ok || !body) throw await problemOf(response, "Reading the conversation");
    this.turnsRoute = true;
    if (conversation === this.conversationId) {
      for (const item of Array.isArray(body.turns) ? body.turns : []) {
        if (isObject(item) && typeof item.turn_id === "string" && typeof item.text === "string") {
          this.serverQuestions.set(item.turn_id, item.text);
        }
      }
    }
    return typeof body.latest_sequence === "number" ? body.latest_sequence : 0;
  }

  /** Give turns asked elsewhere (placeholders) their questions from the turns route. */
  private async learnQuestions(turns: TurnState[], messages: ServerMessage[] = []): Promise<void> {
    const conversation = this.conversationId;
    if (!turns.length || !conversation || this.turnsRoute === false) return;
    try {
      await this.readTurns(conversation);
    } catch {
      return; // not now: the placeholder stays
    }
    for (const turn of turns) {
      const text = this.serverQuestions.get(turn.turnId);
      if (text === undefined) continue;
      turn.question = text;
      turn.questionKnown = true;
      for (const msg of messages) if (msg.type === "turn_start" && msg.turn.index === turn.index) msg.turn.question = text;
    }
  }

  /* ---------- the journal ---------- */

  /** Read the events stream from the last position; reconnect after a drop. */
  private async follow(generation: number): Promise<void> {
    const conversation = this.conversationId;
    if (!conversation || generation !== this.generation || this.disposed) return;
    const abort = new AbortController();
    this.abort = abort;
    let response: Response;
    try {
      response = await this.fetcher(`conversations/${encodeURIComponent(conversation)}/events?after=${this.position}`, {
        method: "GET",
        headers: { Accept: "text/event-stream", "Last-Event-ID": String(this.position) },
        signal: abort.signal,
        cache: "no-store",
      });
    } catch (error) {
      return this.dropped(generation, error);
    }
    if (generation !== this.generation) return;
    if (response.status === 409 || response.status === 410) {
      // The journal is not what this view was built from (the store was reset, or retention
      // dropped what the view lacks): rebuild from the start (or the earliest kept).
      const body = await readJson(response);
      const earliest = body && typeof body.earliest_available_sequence === "number" ? body.earliest_available_sequence : 1;
      return this.rebuild(generation, response.status === 410 ? Math.max(0, earliest - 1) : 0);
    }
    if (!response.ok || !response.body) {
      return this.dropped(generation, await problemOf(response, "Following the conversation"));
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (generation !== this.generation) return;
        if (done) break;
        this.failures = 0;
        const frames: JournalFrame[] = [];
        for (const frame of parser.push(decoder.decode(value, { stream: true }))) {
          try {
            const data: unknown = JSON.parse(frame.data);
            if (isObject(data) && typeof data.type === "string") {
              const position = Number(frame.id ?? data.position);
              frames.push({ ...data, position, turn_id: String(data.turn_id ?? "") } as JournalFrame);
            }
          } catch {
            // not JSON: not a journal frame
          }
        }
        if (frames.length) this.receive(frames);
      }
    } catch (error) {
      return this.dropped(generation, error);
    } finally {
      reader.releaseLock();
    }
    this.dropped(generation, null);
  }

  private dropped(generation: number, error: unknown): void {
    if (generation !== this.generation || this.disposed) return;
    if (error instanceof DOMException && error.name === "AbortError") return;
    const failures = this.failures++;
    if (failures >= 2) {
      const reason = error instanceof Error && error.message ? ` (${error.message})` : "";
      this.emit({ type: "error", code: "disconnected", message: `Lost the connection to the Jupyter server${reason}; reconnecting\u2026` });
    }
    const delay = this.delays[Math.min(failures, this.delays.length - 1)] ?? 5000;
    this.retry = setTimeout(() => {
      this.retry = null;
      void this.follow(generation);
    }, delay);
  }

  /** Apply journal frames in order (each once: the position only goes forward). */
  private receive(frames: JournalFrame[]): void {
    const messages: ServerMessage[] = [];
    const ended: TurnState[] = [];
    const unknown: TurnState[] = []; // new turns whose question is not known here yet
    for (const frame of frames) {
      if (!Number.isFinite(frame.position)) {
        // A live notice the store could not journal (a store that takes no writes): shown on
        // its running turn while it is live; the cursor stays where the journal is.
        const turn = this.turns.get(frame.turn_id);
        if (this.live && turn && !turn.ended && frame.type === "notice") {
          messages.push({ type: "events", turn: turn.index, events: [wireEvent(frame)] });
        }
        continue;
      }
      if (frame.position <= this.position) continue;
      this.position = frame.position;
      const known = this.turns.has(frame.turn_id);
      const turn = this.turnOf(frame.turn_id, frame.position, messages);
      if (!known && !turn.questionKnown) unknown.push(turn);
      if (turn.ended) continue; // (nothing follows a turn's end; a stray frame is not shown)
      const event = wireEvent(frame);
      turn.events.push(event);
      const last = messages[messages.length - 1];
      if (last && last.type === "events" && last.turn === turn.index) last.events.push(event);
      else messages.push({ type: "events", turn: turn.index, events: [event] });
      this.track(turn, frame, messages);
      if (frame.type === "done" || frame.type === "error") {
        turn.ended = true;
        turn.pendingConfirmation = null;
        if (frame.type === "error") turn.error = { code: String(frame.code ?? ""), message: String(frame.message ?? "") };
        ended.push(turn);
      }
    }
    if (!this.live) {
      if (this.position >= this.snapshotAt) this.enqueue(() => this.sendSnapshot());
      return;
    }
    // Live: the messages in order (a turn asked elsewhere gets its question first); a turn that
    // ended gets its evidence before its turn_end.
    this.enqueue(async () => {
      await this.learnQuestions(unknown, messages);
      let start = 0;
      for (const turn of ended) {
        const end = messages.findIndex((m, i) => i >= start && m.type === "events" && m.turn === turn.index && m.events.some((e) => e.type === "done" || e.type === "error"));
        const upTo = end < 0 ? messages.length : end + 1;
        this.emitVisible(messages.slice(start, upTo));
        start = upTo;
        await this.loadEvidence(turn);
        if (!this.hidden.has(turn.turnId)) this.emit({ type: "turn_end", turn: this.record(turn) });
      }
      this.emitVisible(messages.slice(start));
    });
  }

  private emitVisible(messages: ServerMessage[]): void {
    const hiddenIndexes = new Set([...this.turns.values()].filter((t) => this.hidden.has(t.turnId)).map((t) => t.index));
    for (const msg of messages) {
      const index = msg.type === "turn_start" || msg.type === "turn_end" ? msg.turn.index : msg.type === "events" || msg.type === "table" ? msg.turn : null;
      if (index !== null && hiddenIndexes.has(index)) continue;
      this.emit(msg);
    }
  }

  /** The turn of `turnId`, created (with a turn_start) at its first frame. */
  private turnOf(turnId: string, position: number, messages: ServerMessage[]): TurnState {
    const existing = this.turns.get(turnId);
    if (existing) return existing;
    const turn = this.newTurn(turnId, position);
    messages.push({ type: "turn_start", turn: { index: turn.index, question: turn.question, events: [], running: true } });
    return turn;
  }

  private newTurn(turnId: string, position: number): TurnState {
    const known = this.serverQuestions.get(turnId) ?? this.questions()[turnId];
    const first = this.turns.size === 0;
    const title = this.conversations.find((c) => c.id === this.conversationId)?.title;
    const question =
      known ?? (first && title ? String(title) : "(This question was asked elsewhere; the server did not keep its text.)");
    const turn: TurnState = {
      index: this.nextIndex++,
      turnId,
      question,
      questionKnown: known !== undefined,
      events: [],
      tables: [],
      calls: new Map(),
      firstPosition: position,
      ended: false,
      error: null,
      evidence: null,
      pendingConfirmation: null,
    };
    this.turns.set(turnId, turn);
    return turn;
  }

  /** Remember calls, pending confirmations and query results (as tables) of a turn. */
  private track(turn: TurnState, frame: JournalFrame, messages: ServerMessage[]): void {
    const id = String(frame.id ?? "");
    if (frame.type === "tool_call") {
      turn.calls.set(id, isObject(frame.args) ? frame.args : {});
    } else if (frame.type === "confirm_mutation") {
      turn.pendingConfirmation = { id, position: frame.position };
    } else if (frame.type === "tool_result") {
      if (turn.pendingConfirmation?.id === id) turn.pendingConfirmation = null;
      const rows = queryRows(frame);
      if (!rows || frame.name !== "query") return;
      const result = frame.result as JsonObject;
      const summary = isObject(frame.frame) ? frame.frame : {};
      const firstRow = rows.find(isObject);
      const columns = Array.isArray(summary.columns) ? summary.columns.map(String) : firstRow ? Object.keys(firstRow) : [];
      const key = `t${turn.index}-${id}`;
      this.tableRows.set(key, { columns, rows, turnId: turn.turnId, callId: id });
      const table: TableData = {
        key,
        call_id: id,
        manager: String(turn.calls.get(id)?.manager ?? ""),
        columns,
        rows: rows.slice(0, PAGE_SIZE),
        total_rows: rows.length,
        total_count: typeof result.total_count === "number" ? result.total_count : rows.length,
        complete: result.complete !== false,
        page_size: PAGE_SIZE,
      };
      turn.tables.push(table);
      messages.push({ type: "table", turn: turn.index, table });
    }
  }

  /** A turn as the view's records have it. */
  private record(turn: TurnState): TurnRecord {
    const record: TurnRecord = {
      index: turn.index,
      question: turn.question,
      events: turn.events,
      tables: turn.tables,
      running: !turn.ended,
    };
    if (turn.ended) {
      record.evidence = turn.evidence ?? [];
      record.error = turn.error;
    }
    return record;
  }

  private async sendSnapshot(): Promise<void> {
    if (this.live) return;
    this.live = true;
    const generation = this.generation;
    const ended = [...this.turns.values()].filter((t) => t.ended && t.evidence === null);
    // (a turn that began after the turns were listed, asked elsewhere: its question now)
    const unknown = [...this.turns.values()].filter((t) => !t.questionKnown);
    await Promise.all([this.learnQuestions(unknown), ...ended.map((turn) => this.loadEvidence(turn))]);
    if (generation !== this.generation) return;
    this.emitSnapshot();
  }

  /** The turns not cleared from the panel, as one snapshot. */
  private emitSnapshot(): void {
    const turns = [...this.turns.values()].filter((t) => !this.hidden.has(t.turnId));
    this.emit({
      type: "snapshot",
      conversation_id: this.conversationId,
      conversations: { items: this.conversations, current: this.conversationId },
      turns: turns.map((turn) => this.record(turn)),
      busy: turns.some((turn) => !turn.ended),
      ...this.header,
    });
  }

  /* ---------- evidence ---------- */

  /** The turn's evidence from the server, else (the route missing or failing) from its events. */
  private async loadEvidence(turn: TurnState): Promise<void> {
    if (turn.evidence !== null) return;
    if (this.evidenceRoute !== false && this.conversationId) {
      try {
        const path = `conversations/${encodeURIComponent(this.conversationId)}/turns/${encodeURIComponent(turn.turnId)}/evidence`;
        const response = await this.fetcher(path, { method: "GET" });
        const body = await readJson(response);
        if (response.ok && body && Array.isArray(body.evidence)) {
          this.evidenceRoute = true;
          turn.evidence = body.evidence.filter(isObject) as EvidenceRow[];
          return;
        }
        // A 404 that is not the route's JSON: the route is not on this server (an older gmchat_nb).
        if (response.status === 404 && body === null) this.evidenceRoute = false;
      } catch {
        // unreachable now: the events say what was queried
      }
    }
    turn.evidence = this.evidenceFromEvents(turn);
  }

  private evidenceFromEvents(turn: TurnState): EvidenceRow[] {
    const rows: EvidenceRow[] = [];
    for (const event of turn.events) {
      if (event.type !== "tool_result" || event.name !== "query") continue;
      const result = isObject(event.result) ? event.result : null;
      if (!result || typeof result.rows !== "number") continue;
      const args = turn.calls.get(String(event.id)) ?? {};
      rows.push({
        manager: args.manager,
        filters: args.filters ?? null,
        rows: result.rows,
        total_count: result.total_count,
        complete: result.complete,
        document: "",
        code: "",
        task_id: event.task_id ?? undefined,
        evidence_id: event.evidence_id ?? undefined,
      });
    }
    return rows;
  }

  /* ---------- turns ---------- */

  private async ask(text: string): Promise<void> {
    const conversation = this.conversationId;
    if (!conversation) {
      throw new ServerProblem({ code: "not_connected", message: "The panel is not connected to a conversation yet." }, 0);
    }
    const turnId = this.newId();
    this.keepQuestion(turnId, text);
    const body = await this.post("turns/", { turn_id: turnId, text, conversation_id: conversation }, "Asking");
    if (conversation !== this.conversationId || typeof body.turn_id !== "string") return;
    // The stream may have brought the turn's first frame already; else it starts now.
    this.enqueue(() => {
      if (!this.live || this.turns.has(turnId) || conversation !== this.conversationId) return;
      const turn = this.newTurn(turnId, Number.POSITIVE_INFINITY);
      this.emit({ type: "turn_start", turn: { index: turn.index, question: turn.question, events: [], running: true } });
    });
  }

  /** Where the view's turn `index` is on the server (an ended turn of the conversation shown). */
  private turnAt(index: number): { conversationId: string; turnId: string } | null {
    const turn = [...this.turns.values()].find((t) => t.index === index);
    return turn && turn.ended && this.conversationId ? { conversationId: this.conversationId, turnId: turn.turnId } : null;
  }

  private runningTurn(): TurnState | null {
    return [...this.turns.values()].reverse().find((turn) => !turn.ended) ?? null;
  }

  private async stop(): Promise<void> {
    const turn = this.runningTurn();
    const conversation = this.conversationId;
    if (!turn || !conversation) return;
    const path = `conversations/${encodeURIComponent(conversation)}/turns/${encodeURIComponent(turn.turnId)}/cancel`;
    await this.post(path, { command_id: this.newId() }, "Stopping the turn");
  }

  private async confirm(callId: string, ok: boolean): Promise<void> {
    const conversation = this.conversationId;
    if (!conversation) return;
    const pending = [...this.turns.values()].map((t) => t.pendingConfirmation).find((p) => p?.id === callId);
    const body: JsonObject = { confirmation_id: callId, confirmed: ok, conversation_id: conversation };
    if (pending) body.expected_sequence = pending.position;
    // The answer comes when the resumed turn ends; its events arrive on the stream meanwhile.
    try {
      await this.post("confirm/", body, "Confirming", this.personFetcher);
    } catch (error) {
      if (this.disposed || (error instanceof DOMException && error.name === "AbortError")) return;
      // said with the confirmation it was about, so its card says it was not decided
      const reason = error instanceof Error && error.message ? error.message : String(error);
      const info: ErrorInfo =
        error instanceof ServerProblem ? error.info : { code: "server_unreachable", message: `Could not reach the Jupyter server: ${reason}` };
      this.emit({ type: "error", ...info, call_id: callId });
    }
  }

  /** "Clear": the panel stops showing this conversation's turns (the server keeps them). */
  private clear(): void {
    for (const turn of this.turns.values()) if (turn.ended) this.hidden.add(turn.turnId);
    this.enqueue(() => {
      if (!this.live) return;
      this.emitSnapshot();
    });
  }

  /* ---------- tables ---------- */

  /** A table's chart from the chart route, as the kernel's `chart_options` answer. */
  private async chart(key: string, intent?: ChartIntent): Promise<void> {
    const table = this.tableRows.get(key);
    const conversation = this.conversationId;
    if (!table || !conversation) {
      this.emit({ type: "chart_options", table: key, error: { code: "bad_event", message: "Unknown table." } });
      return;
    }
    const params = new URLSearchParams({ call_id: table.callId });
    for (const name of CHART_PARAMETERS) {
      const value = intent ? intent[name] : null;
      if (typeof value === "string" && value) params.set(name, value);
    }
    const path = `conversations/${encodeURIComponent(conversation)}/turns/${encodeURIComponent(table.turnId)}/chart?${params.toString()}`;
    const response = await this.fetcher(path, { method: "GET" });
    if (!response.ok) {
      const problem = await problemOf(response, "Charting the table");
      this.emit({ type: "chart_options", table: key, error: problem.info });
      return;
    }
    const body = (await readJson(response)) ?? {};
    this.emit({ ...body, type: "chart_options", table: key });
  }

  private page(key: string, offset: number, limit: number, sort?: TableSort): void {
    const table = this.tableRows.get(key);
    if (!table) {
      this.emit({ type: "error", code: "bad_event", message: "Unknown table." });
      return;
    }
    const rows = sort ? sortRows(table.rows, table.columns, sort) : table.rows;
    const start = Math.max(0, Math.floor(offset) || 0);
    const size = Math.max(1, Math.min(500, Math.floor(limit) || PAGE_SIZE));
    this.emit({ type: "table_page", table: key, offset: start, rows: rows.slice(start, start + size), total: rows.length });
  }
}
