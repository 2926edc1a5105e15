/**
 * Confirmations: a pending mutation's input (values not in the user's words tagged "from data"),
 * a countdown and Confirm / Reject; each view sends its decision at most once. Every text it
 * shows (the mutation's name, the input's keys and values at any depth) has its invisible and
 * bidi characters written as `⟨U+202E⟩` (invisible.ts), with a warning when there were any, so the
 * card cannot display differently from what is stored.
 */

import { button, h } from "./dom";
import { formatCell, toolOutcome } from "./format";
import { FLAGGED_WARNING, UNREAD_REQUEST_NOTE, confirmProvenance, pathsByKey } from "./guards";
import { INVISIBLE_WARNING, revealInvisible, revealInvisibleIn } from "./invisible";
import type { ConfirmMutationEvent } from "./protocol";
import type { Send } from "./table";

/** A pending mutation: its input, a countdown and Confirm / Reject (each view sends at most once). */
export class ConfirmBox {
  readonly id: string;
  readonly el: HTMLDivElement;
  private closed = false;
  private readonly deadline: number | null;
  private readonly countdown: HTMLSpanElement;
  private readonly outcome: HTMLSpanElement;
  private readonly confirmButton: HTMLButtonElement;
  private readonly rejectButton: HTMLButtonElement;

  constructor(
    private readonly send: Send,
    event: ConfirmMutationEvent,
  ) {
    this.id = String(event.id);
    // Every shown text goes through `shown`, which notes whether it wrote out any escapes.
    let escaped = false;
    const shown = (text: string): string => {
      const visible = revealInvisible(text);
      if (visible !== text) escaped = true;
      return visible;
    };
    const mutation = shown(String(event.mutation || ""));
    const seconds = Number(event.expires_in_seconds);
    this.deadline = Number.isFinite(seconds) && seconds > 0 ? Date.now() + seconds * 1000 : null;
    this.countdown = h("span", { cls: "gmchat-countdown", attrs: { "aria-live": "off" } });
    this.outcome = h("span", { cls: "gmchat-confirm-outcome", attrs: { role: "status" } });
    this.confirmButton = button("Confirm", {
      cls: "gmchat-primary",
      testid: "gmchat-confirm",
      aria: `Confirm ${mutation}`,
      onClick: () => this.decide(true),
    });
    this.rejectButton = button("Reject", {
      cls: "gmchat-danger",
      testid: "gmchat-reject",
      aria: `Reject ${mutation}`,
      onClick: () => this.decide(false),
    });
    const input: Record<string, unknown> = event.input && typeof event.input === "object" ? event.input : {};
    // Where the input came from: values not in the user's words get a "from data" tag.
    const provenance = confirmProvenance(event.provenance);
    const owners = pathsByKey(Object.keys(input), provenance.fromData);
    const tag = (path: string, key: string | null): HTMLSpanElement =>
      h("span", {
        cls: "gmchat-from-data",
        testid: "from-data",
        text: path === key ? "from data" : `from data: ${shown(path)}`,
        attrs: { "data-path": path, title: `${shown(path)} is not in your words: it came from the data (or the model)` },
      });
    // A value: its strings revealed at any depth (keys too) before it is formatted, then the
    // formatted text once more (a cut may split a pair; that is not counted as an escape).
    const cellText = (value: unknown): string => {
      const revealed = revealInvisibleIn(value);
      if (revealed.revealed) escaped = true;
      return revealInvisible(formatCell(revealed.value));
    };
    const rows = Object.entries(input).map(([key, value]) => {
      const paths = provenance.fromData.filter((path) => owners.get(path) === key);
      return h("tr", { cls: paths.length ? "gmchat-from-data-row" : "" }, [
        h("th", { attrs: { scope: "row" } }, [shown(key), ...paths.map((path) => tag(path, key))]),
        h("td", { text: cellText(value) }),
      ]);
    });
    const strays = provenance.fromData.filter((path) => owners.get(path) === null);
    const strayTags = strays.map((path) => tag(path, null));
    this.el = h(
      "div",
      {
        cls: "gmchat-confirm-box",
        testid: "gmchat-confirm-box",
        attrs: { role: "group", "aria-label": `Confirm mutation ${mutation}`, "data-call-id": this.id },
      },
      [
        h("div", { cls: "gmchat-confirm-title" }, ["Confirm mutation ", h("code", { text: mutation })]),
        escaped
          ? h("div", { cls: "gmchat-invisible-warning", testid: "invisible-warning", attrs: { role: "alert" }, text: INVISIBLE_WARNING })
          : null,
        provenance.flagged
          ? h("div", { cls: "gmchat-flagged-warning", testid: "flagged-warning", attrs: { role: "alert" }, text: FLAGGED_WARNING })
          : null,
        provenance.requestUnread
          ? h("div", { cls: "gmchat-flagged-warning", testid: "unread-request", attrs: { role: "alert" }, text: UNREAD_REQUEST_NOTE })
          : null,
        rows.length ? h("table", { cls: "gmchat-kv" }, [h("tbody", {}, rows)]) : h("div", { cls: "gmchat-muted", text: "(no input)" }),
        strays.length ? h("div", { cls: "gmchat-from-data-more" }, strayTags) : null,
        provenance.fromData.length
          ? h("div", {
              cls: "gmchat-muted gmchat-provenance-note",
              text: "Values marked \u201cfrom data\u201d are not in your message: the model took them from data or made them up.",
            })
          : null,
        h("div", { cls: "gmchat-confirm-actions" }, [this.confirmButton, this.rejectButton, this.countdown, this.outcome]),
      ],
    );
    this.tick(Date.now());
  }

  private decide(ok: boolean): void {
    if (this.closed) return;
    this.send({ type: "confirm", call_id: this.id, ok: Boolean(ok) });
    this.close(ok ? "confirmed \u2014 running\u2026" : "rejected");
  }

  /** Update the countdown; close when time is up. @returns still counting */
  tick(now: number): boolean {
    if (this.closed) return false;
    if (this.deadline === null) {
      this.countdown.textContent = "";
      return false;
    }
    const left = Math.max(0, Math.ceil((this.deadline - now) / 1000));
    this.countdown.textContent = `expires in ${left} s`;
    if (left <= 0) {
      this.close("expired");
      return false;
    }
    return true;
  }

  /** Disable both buttons for good. */
  close(reason?: string): void {
    if (this.closed) {
      if (reason && !this.outcome.textContent) this.outcome.textContent = reason;
      return;
    }
    this.closed = true;
    this.confirmButton.disabled = true;
    this.rejectButton.disabled = true;
    this.countdown.textContent = "";
    this.el.classList.add("gmchat-closed");
    if (reason) this.outcome.textContent = reason;
  }

  /** The decision did not reach the server or was refused: say why. A server out of reach may
   * be asked again (the buttons come back); any other refusal (expired, decided elsewhere, not
   * this person's to decide) leaves the card closed with the server's reason. */
  notDecided(reason: string, retry: boolean): void {
    if (retry) {
      this.closed = false;
      this.confirmButton.disabled = false;
      this.rejectButton.disabled = false;
      this.el.classList.remove("gmchat-closed");
      this.outcome.textContent = `not decided \u2014 ${reason}`;
      return;
    }
    this.close();
    this.outcome.textContent = `not decided \u2014 ${reason}`;
  }

  /** The mutation's tool result arrived: say what became of it. */
  resolved(result: unknown): void {
    const outcome = toolOutcome(result);
    let text = "applied";
    if (outcome.status === "error") text = `failed \u00b7 ${outcome.code}`;
    else if (outcome.status === "cancelled" && outcome.reason === "user_rejected") text = "rejected";
    else if (outcome.status === "cancelled" && outcome.reason === "confirmation_timed_out") text = "expired";
    else if (outcome.status === "cancelled") text = `cancelled \u00b7 ${outcome.reason}`;
    if (this.closed) this.outcome.textContent = text;
    else this.close(text);
  }
}
