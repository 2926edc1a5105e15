/**
 * A server-sent events parser for a stream read with `fetch` (an `EventSource` can neither send
 * Jupyter's Authorization header nor be told where to resume other than by its own retries):
 * text in, whole frames out, as the HTML standard's "event stream interpretation" reads them.
 */

export interface SseFrame {
  /** The frame's `id:` (the journal position on gmchat's events route), or null without one. */
  id: string | null;
  /** The frame's `event:`, "message" without one. */
  event: string;
  /** The frame's `data:` lines joined with newlines. */
  data: string;
}

/** Feed it text as it arrives; it returns the frames each piece completed. */
export class SseParser {
  private buffer = "";
  private id: string | null = null; // the `id:` of the frame being read, if it has one
  private event = "";
  private data: string[] = [];
  private sawData = false;

  push(text: string): SseFrame[] {
    this.buffer += text;
    const frames: SseFrame[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      // A lone "\r" at the end may be the first half of "\r\n": wait for more.
      if (match[0] === "\r" && match.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const frame = this.line(line);
      if (frame) frames.push(frame);
    }
    return frames;
  }

  private line(line: string): SseFrame | null {
    if (line === "") {
      if (!this.sawData) {
        this.event = "";
        this.id = null;
        return null;
      }
      // A frame's own `id:` only (not the standard's last event ID, which a frame without one
      // keeps): gmchat's live-only notices have none, and are no journal position.
      const frame = { id: this.id, event: this.event || "message", data: this.data.join("\n") };
      this.event = "";
      this.id = null;
      this.data = [];
      this.sawData = false;
      return frame;
    }
    if (line.startsWith(":")) return null; // a comment: the server's keep-alive
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      this.data.push(value);
      this.sawData = true;
    } else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\0")) this.id = value;
    return null;
  }
}
