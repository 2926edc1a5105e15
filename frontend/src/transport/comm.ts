/**
 * The comm transport: a `Transport` over the anywidget model of a `ChatWidget` (custom messages
 * both ways, `model.send` and `model.on("msg:custom")`; the `storage_key` trait; the JupyterLab
 * widget manager's kernel connection for reconnects).
 */

import { isServerMessage } from "../protocol";
import type { ClientMessage, ServerMessage } from "../protocol";
import { ConnectionWatch, quietly } from "../replay";
import type { Transport } from "./transport";

type CustomHandler = (content: unknown, buffers?: unknown) => void;

/** The part of anywidget's model proxy this transport uses. */
export interface AnyModel {
  get(name: string): unknown;
  send(content: unknown, callbacks?: unknown, buffers?: unknown): void;
  on(event: "msg:custom", handler: CustomHandler): void;
  off(event: "msg:custom", handler?: CustomHandler): void;
  /** JupyterLab's widget manager (not part of anywidget's API: read defensively). */
  widget_manager?: { kernel?: unknown } | null;
}

export class CommTransport implements Transport {
  constructor(private readonly model: AnyModel) {}

  send(msg: ClientMessage): void {
    this.model.send(msg);
  }

  onMessage(handler: (msg: ServerMessage) => void): () => void {
    const listener: CustomHandler = (content) => {
      if (isServerMessage(content)) handler(content);
    };
    this.model.on("msg:custom", listener);
    return () => {
      try {
        this.model.off("msg:custom", listener);
      } catch {
        // the model proxy may already be gone
      }
    };
  }

  storageKey(): string | null {
    const key = quietly(() => this.model.get("storage_key"), null);
    return typeof key === "string" && key ? key : null;
  }

  onReconnect(handler: () => void): () => void {
    const kernel = quietly(() => this.model.widget_manager?.kernel ?? null, null);
    const watch = new ConnectionWatch(kernel, handler);
    return () => watch.dispose();
  }
}
