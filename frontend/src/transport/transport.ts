/**
 * The transport: how a chat view talks to what drives it. The view sends `ClientMessage`s and
 * receives `ServerMessage`s (gmchat_nb/widget/protocol.py) and never sees what carries them: the
 * anywidget comm to the kernel (`comm.ts`) or the Jupyter server's HTTP routes (`server.ts`).
 * Knowledge requests (`knowledge_*`) travel the same way; each is answered with one `knowledge`
 * message carrying its `request` id.
 */

import type { ClientMessage, ServerMessage } from "../protocol";

export interface Transport {
  /** Send a message; may throw when the other side cannot be reached (the view says so). */
  send(msg: ClientMessage): void;
  /** Receive every message from now on; returns what stops it. */
  onMessage(handler: (msg: ServerMessage) => void): () => void;
  /**
   * What this view's saved state is filed under in the tab's sessionStorage (letters, digits,
   * `_` and `-`), or null when it must not be kept (then a reload takes a snapshot).
   */
  storageKey(): string | null;
  /**
   * Call `handler` when the connection comes back after it was lost, so the view asks for what
   * it missed (its `hello` again); returns what stops it. Optional: a transport that cannot
   * tell has none.
   */
  onReconnect?(handler: () => void): () => void;
  /** Release what the transport holds (sockets, listeners) once its view is gone. */
  dispose?(): void;
}
