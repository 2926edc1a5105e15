/**
 * The messages between the chat view and what drives it, and the event JSON a turn carries.
 *
 * gmchat_nb/widget/protocol.py documents every message (the kernel side of the anywidget comm);
 * gmchat_nb/core/events.py defines the events. These types say what the view may expect, but
 * everything here crosses a process boundary: the view checks each field before it uses one, so
 * every field a sender may leave out (or an older sender may not know) is optional.
 */

/* ---------------------------------------------------------------------------------------------
 * Events (core/events.py), as JSON
 * ------------------------------------------------------------------------------------------- */

/** The fields every event may carry: its place in its turn and, once stored, in the journal. */
export interface EventBase {
  sequence?: number;
  position?: number;
  continues_after?: number | null;
}

export type JsonObject = Record<string, unknown>;

export interface TextChunkEvent extends EventBase {
  type: "text_chunk";
  content?: string;
}

export interface ToolCallEvent extends EventBase {
  type: "tool_call";
  id: string;
  name?: string;
  args?: unknown;
  task_id?: string | null;
}

/** A query's frame summary on its tool_result (the rows travel as a paged table). */
export interface FrameSummary {
  rows?: number;
  columns?: string[];
}

export interface ResultFlag {
  path?: unknown;
  reasons?: unknown;
  excerpt?: unknown;
}

export interface ToolResultEvent extends EventBase {
  type: "tool_result";
  id: string;
  name?: string;
  result?: unknown;
  frame?: FrameSummary | null;
  duration_ms?: number | null;
  task_id?: string | null;
  evidence_id?: string | null;
  flags?: ResultFlag[] | null;
}

export interface Provenance {
  from_data?: unknown;
  flagged_data_read?: unknown;
  request_unread?: unknown;
}

export interface ConfirmMutationEvent extends EventBase {
  type: "confirm_mutation";
  id: string;
  mutation?: string;
  input?: JsonObject;
  expires_in_seconds?: number | null;
  provenance?: Provenance | null;
}

export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
}

/** A planned turn's task (the `done` event's `orchestration.tasks`). */
export interface PlanTask {
  task_id?: unknown;
  objective?: unknown;
  status?: unknown;
  reason?: unknown;
  managers?: unknown;
  depends_on?: unknown;
}

export interface CalculationInput {
  evidence_id?: unknown;
  path?: unknown;
  value?: unknown;
}

export interface CalculationGroup {
  group?: unknown;
  text?: unknown;
  value?: unknown;
  unit?: unknown;
  count?: unknown;
}

export interface Calculation {
  evidence_id?: unknown;
  task_id?: unknown;
  operation?: unknown;
  text?: unknown;
  value?: unknown;
  unit?: unknown;
  inputs?: unknown;
  input_count?: unknown;
  groups?: unknown;
}

export interface Orchestration {
  status?: unknown;
  coverage?: { resolved?: unknown; total?: unknown } | null;
  tasks?: unknown;
  unresolved?: unknown;
  calculations?: unknown;
  requests?: Record<string, unknown> | null;
}

/** What a turn's model requests cost and carried (the `done` event's `cost`, gmchat_nb's addition). */
export interface Cost {
  /** null: a request's price is unknown (shown as "—", never 0) */
  usd?: number | null;
  currency?: string;
  /** where the prices came from: `genai-prices X.Y.Z`, `override`, `local`, `offline`, `scripted`, `unknown` */
  sources?: string[];
  unpriced?: number;
  requests?: number;
  tokens?: Record<string, number>;
  estimated?: boolean;
  models?: string[];
  /** the context the next request carries: its tokens, the model's window, their share */
  context?: { tokens?: number; window?: number | null; share?: number | null } | null;
}

/** The verified query an answer re-ran (`done.trusted`): "Verified query: <name>". */
export interface TrustedQuery {
  id?: string;
  name?: string;
}

export interface DoneEvent extends EventBase {
  type: "done";
  usage?: Usage | null;
  orchestration?: Orchestration | null;
  cost?: Cost | null;
  trusted?: TrustedQuery | null;
}

/** An error: the `error` event of a turn, a turn record's `error`, or a kernel `error` message. */
export interface ErrorInfo {
  message?: string;
  code?: string;
  retry_after_seconds?: number | null;
  /** The confirmation a refused decision was about (the side panel's `confirm/`). */
  call_id?: string;
}

export interface ErrorEvent extends EventBase, ErrorInfo {
  type: "error";
}

export interface StreamResetEvent extends EventBase {
  type: "stream_reset";
  reason?: string;
}

export interface NoticeEvent extends EventBase {
  type: "notice";
  kind?: string;
  message?: string;
  details?: JsonObject | null;
}

/** A chart's intent: what it draws (core/charts `ChartIntent.to_dict()`, None fields left out). */
export interface ChartIntent {
  query?: string | null;
  mark?: string;
  x?: string | null;
  y?: string | null;
  color?: string | null;
  aggregate?: string | null;
  sort?: string | null;
  limit?: number | null;
  title?: string | null;
}

/**
 * A chart of a query's rows: a Vega-Lite v5 spec with its data inline (chart.ts checks it before
 * it is drawn). `evidence_id` is the query's call id, or a planned turn's evidence id.
 */
export interface ChartEvent extends EventBase {
  type: "chart";
  id: string;
  evidence_id?: string | null;
  title?: string;
  spec?: unknown;
  intent?: ChartIntent | null;
  marks?: number;
}

/** One entry recalled before a turn: its kind, id, name and fused rank score. */
export interface RecallItem {
  kind?: string;
  id?: string;
  name?: string;
  score?: number;
}

/**
 * gmchat_nb's addition: the knowledge recalled for the turn, sent before its first model request
 * when recall is on (no event when it is off); `items` is empty when nothing relevant was found.
 */
export interface RecallEvent extends EventBase {
  type: "recall";
  items?: RecallItem[];
}

/** Every public event type of core/events.py. */
export type ChatEvent =
  | TextChunkEvent
  | ToolCallEvent
  | ToolResultEvent
  | ConfirmMutationEvent
  | DoneEvent
  | ErrorEvent
  | StreamResetEvent
  | NoticeEvent
  | ChartEvent
  | RecallEvent;

export type EventType = ChatEvent["type"];
export type EventOf<K extends EventType> = Extract<ChatEvent, { type: K }>;

/* ---------------------------------------------------------------------------------------------
 * Records the kernel sends whole
 * ------------------------------------------------------------------------------------------- */

/** A query's result table: its first page (rows as lists or objects) and how to page it. */
export interface TableData {
  key: string;
  call_id?: string;
  manager?: string;
  columns?: string[];
  rows?: unknown[];
  total_rows?: number;
  total_count?: number;
  complete?: boolean;
  page_size?: number;
}

/** One query of a finished turn, with a cell that re-runs it. */
export interface EvidenceRow {
  manager?: unknown;
  filters?: unknown;
  rows?: unknown;
  total_count?: unknown;
  complete?: unknown;
  document?: unknown;
  variables?: unknown;
  code?: unknown;
  task_id?: unknown;
  evidence_id?: unknown;
}

/**
 * A turn record. Events are typed as `ChatEvent`, but a record may come from storage or an
 * older kernel: renderers still check what they read.
 */
export interface TurnRecord {
  index: number;
  question?: string;
  events?: ChatEvent[];
  answer?: string;
  usage?: Usage | null;
  error?: ErrorInfo | null;
  tables?: TableData[];
  evidence?: EvidenceRow[];
  orchestration?: Orchestration | null;
  running?: boolean;
}

export interface ConversationItem {
  id: string;
  title?: string;
  updated_at?: string | number | null;
  messages?: number;
}

/** A cursor as the kernel sends it (see protocol.py, "Cursors"). */
export interface CursorJson {
  conversation_id: string;
  position: number;
  epoch: string;
}

/* ---------------------------------------------------------------------------------------------
 * Knowledge (gmchat_nb/core/knowledge: entry_json)
 * ------------------------------------------------------------------------------------------- */

export type KnowledgeKind = "verified_query" | "definition" | "note";
export type KnowledgeScope = "shared" | "personal";

/** A verified query's call: `{tool, arguments}`. */
export interface KnowledgeCall {
  tool?: string;
  arguments?: JsonObject;
}

/** An entry as every surface shows it (`entry_json`). */
export interface KnowledgeEntry {
  id: string;
  kind?: string;
  name?: string;
  status?: string;
  scope?: string;
  owner?: string;
  created_by?: string;
  created_at?: string | null;
  updated_at?: string | null;
  question?: string;
  calls?: KnowledgeCall[];
  verified_by?: string | null;
  verified_at?: string | null;
  text?: string;
  term?: string;
  flags?: unknown;
  stale_reason?: string | null;
}

/**
 * A refused knowledge write: `invalid`, `not_compiling`, `duplicate` (`existing` names the entry
 * that has the same content), `flagged` (send again with `confirm_flagged`), `forbidden`,
 * `not_found`, or the transport's own (`unavailable`, `http_<status>`, `no_answer`).
 */
export interface KnowledgeProblem {
  code?: string;
  message?: string;
  existing?: string | null;
}

/** What a knowledge request asks (every one carries the view's `request` id, echoed back). */
export type KnowledgeRequest =
  | { type: "knowledge_list"; request: string; kind?: string; status?: string; search?: string }
  | {
      type: "knowledge_save_turn";
      request: string;
      /** the turn's index in the view */
      turn: number;
      name: string;
      question?: string;
      scope?: KnowledgeScope;
      confirm_flagged?: boolean;
    }
  | {
      type: "knowledge_add";
      request: string;
      kind: KnowledgeKind;
      name?: string;
      question?: string;
      calls?: KnowledgeCall[];
      scope?: KnowledgeScope;
      term?: string;
      text?: string;
      confirm_flagged?: boolean;
    }
  | {
      type: "knowledge_update";
      request: string;
      /** (`entry_id`, not `id`: ipykernel routes comm replies by a top-level `id`) */
      entry_id: string;
      name?: string;
      question?: string;
      text?: string;
      term?: string;
      scope?: KnowledgeScope;
      confirm_flagged?: boolean;
    }
  | { type: "knowledge_remove"; request: string; entry_id: string }
  | { type: "knowledge_accept"; request: string; entry_id: string; scope?: KnowledgeScope };

export type KnowledgeRequestType = KnowledgeRequest["type"];

/* ---------------------------------------------------------------------------------------------
 * The view -> what drives it
 * ------------------------------------------------------------------------------------------- */

export interface TableSort {
  column: string;
  descending: boolean;
}

export type ClientMessage =
  | { type: "hello"; conversation_id?: string; after?: number; epoch?: string }
  | { type: "ask"; text: string }
  | { type: "stop" }
  | { type: "confirm"; call_id: string; ok: boolean }
  | { type: "to_frame"; table: string; name?: string }
  | { type: "table_page"; table: string; offset: number; limit: number; sort?: TableSort }
  | { type: "new_conversation" }
  | { type: "list_conversations" }
  | { type: "open_conversation"; conversation_id: string }
  | { type: "clear" }
  | { type: "chart_request"; table: string; intent?: ChartIntent }
  | { type: "chart_library" }
  /** **Export as notebook** (the widget: the kernel writes the file), answered by `notebook_exported` */
  | { type: "export_notebook"; request: string }
  | KnowledgeRequest;

export type ClientMessageType = ClientMessage["type"];

/* ---------------------------------------------------------------------------------------------
 * What drives the view -> the view
 * ------------------------------------------------------------------------------------------- */

/** `conversations` as a snapshot or replay carries it: a list, or {items, current}. */
export type ConversationList = ConversationItem[] | { items?: ConversationItem[]; current?: string | null };

export interface SnapshotMessage {
  type: "snapshot";
  turns?: TurnRecord[];
  busy?: boolean;
  provider?: unknown;
  project?: unknown;
  conversation_id?: string | null;
  conversations?: ConversationList | null;
  cursor?: CursorJson | null;
}

export interface ReplayMessage {
  type: "replay";
  conversation_id?: string;
  after?: number;
  cursor?: CursorJson | null;
  turns?: TurnRecord[];
  busy?: boolean;
  pending_confirmation?: ConfirmMutationEvent | null;
  provider?: unknown;
  project?: unknown;
  conversations?: ConversationList | null;
}

export interface TurnStartMessage {
  type: "turn_start";
  turn: TurnRecord;
}

export interface EventsMessage {
  type: "events";
  turn: number;
  events: ChatEvent[];
}

export interface TableMessage {
  type: "table";
  turn: number;
  table: TableData;
}

export interface TurnEndMessage {
  type: "turn_end";
  turn: TurnRecord;
  cursor?: CursorJson | null;
}

export interface TablePageMessage {
  type: "table_page";
  table: string;
  offset?: number;
  rows?: unknown[];
  total?: number;
}

export interface FrameBoundMessage {
  type: "frame_bound";
  table: string;
  name?: string;
  shape?: number[];
}

export interface ConversationsMessage {
  type: "conversations";
  items?: ConversationItem[];
  current?: string | null;
}

/** A result table's column as a chart may use it ("list": a to-many column, not chartable). */
export interface ChartColumn {
  name?: string;
  kind?: string;
}

/** The answer to `chart_request`: what a table's chart may use, and the chart (or why not). */
export interface ChartOptionsMessage {
  type: "chart_options";
  table: string;
  call_id?: string;
  columns?: ChartColumn[];
  marks?: string[];
  aggregates?: string[];
  intent?: ChartIntent | null;
  chart?: (Omit<ChartEvent, "type"> & { type?: string }) | null;
  error?: ErrorInfo | null;
}

/** The answer to `chart_library`: the chart library module's text (the widget's charts.js). */
export interface ChartLibraryMessage {
  type: "chart_library";
  source?: string;
}

/**
 * The answer to a knowledge request (its `request` id echoed): the entries listed (`items`), the
 * entry written (`entry`), the id removed (`removed`), or why not (`error`).
 */
export interface KnowledgeMessage {
  type: "knowledge";
  request?: string;
  items?: KnowledgeEntry[];
  entry?: KnowledgeEntry | null;
  removed?: string | null;
  error?: KnowledgeProblem | null;
}

/**
 * The kernel's answer to `export_notebook` (its `request` id echoed): the path of the notebook it
 * wrote, or why it wrote none.
 */
export interface NotebookExportedMessage {
  type: "notebook_exported";
  request?: string;
  path?: string | null;
  error?: ErrorInfo | null;
}

export interface ErrorMessage extends ErrorInfo {
  type: "error";
}

export type ServerMessage =
  | SnapshotMessage
  | ReplayMessage
  | TurnStartMessage
  | EventsMessage
  | TableMessage
  | TurnEndMessage
  | TablePageMessage
  | FrameBoundMessage
  | ConversationsMessage
  | ChartOptionsMessage
  | ChartLibraryMessage
  | KnowledgeMessage
  | NotebookExportedMessage
  | ErrorMessage;

export type ServerMessageType = ServerMessage["type"];

const SERVER_TYPES: ReadonlySet<string> = new Set<ServerMessageType>([
  "snapshot",
  "replay",
  "turn_start",
  "events",
  "table",
  "turn_end",
  "table_page",
  "frame_bound",
  "conversations",
  "chart_options",
  "chart_library",
  "knowledge",
  "notebook_exported",
  "error",
]);

/**
 * Whether a value received from outside is a message the view knows. Only the envelope is
 * checked (an object with a known `type`); the view checks each field it reads.
 */
export function isServerMessage(value: unknown): value is ServerMessage {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { type?: unknown }).type === "string" &&
    SERVER_TYPES.has((value as { type: string }).type)
  );
}
