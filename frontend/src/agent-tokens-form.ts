/**
 * The agent-token drawer's two boxes: **Create token** (a name, "May propose changes (a person
 * still confirms each)" for the `propose` scope, and an expiry: 7, 30, 90 (the default), 365 days
 * or never), and the secret of the token just created, shown this once: the secret with **Copy**,
 * a warning that it will not be shown again, the MCP client configuration for this server with the
 * secret filled in (**Copy configuration**), and **Done**, which takes the secret out of the page.
 * Text goes through `textContent` and input values only.
 */

import {
  type AgentToken,
  type AgentTokenRequest,
  DEFAULT_EXPIRY_DAYS,
  EXPIRY_CHOICES,
  createRequest,
  mcpConfig,
  nameProblem,
  problemText,
  scopesText,
} from "./agent-tokens";
import { button, h } from "./dom";
import type { AgentTokenAnswer } from "./transport/server-agent-tokens";

/** Copy `text`, saying "copied" (or how to copy by hand) in `status` (ChatView.copyText). */
export type CopyText = (text: string, status: HTMLElement, fallbackParent: HTMLElement) => Promise<void>;

/** Sends the create request (AgentTokensClient.create). */
export type CreateToken = (request: AgentTokenRequest) => Promise<AgentTokenAnswer<{ token: AgentToken; secret: string }>>;

const NEVER = "never";

/** **Create token** (see the module). */
export class CreateTokenForm {
  readonly el: HTMLFormElement;
  private readonly name: HTMLInputElement;
  private readonly propose: HTMLInputElement;
  private readonly expiry: HTMLSelectElement;
  private readonly submitButton: HTMLButtonElement;
  private readonly problem: HTMLDivElement;
  private readonly status: HTMLSpanElement;
  private busy = false;

  /**
   * @param create sends the request
   * @param created the token was created: its secret is to be shown
   * @param cancel the person pressed Cancel (or Escape)
   */
  constructor(
    private readonly create: CreateToken,
    private readonly created: (token: AgentToken, secret: string) => void,
    cancel: () => void,
  ) {
    this.name = h("input", { cls: "gmchat-agents-input", testid: "gmchat-agents-name", attrs: { type: "text", autocomplete: "off", placeholder: "e.g. Claude Code on my laptop" } });
    this.propose = h("input", { testid: "gmchat-agents-propose", attrs: { type: "checkbox" } });
    this.expiry = h(
      "select",
      { testid: "gmchat-agents-expiry" },
      EXPIRY_CHOICES.map((choice) => h("option", { text: choice.label, attrs: { value: choice.days === null ? NEVER : String(choice.days) } })),
    );
    this.expiry.value = String(DEFAULT_EXPIRY_DAYS);
    this.submitButton = h("button", { cls: "gmchat-btn gmchat-primary", testid: "gmchat-agents-create-submit", text: "Create", attrs: { type: "submit" } });
    this.problem = h("div", { cls: "gmchat-agents-problem", testid: "gmchat-agents-form-error", attrs: { role: "alert" } });
    this.status = h("span", { cls: "gmchat-agents-status", attrs: { role: "status" } });
    this.el = h(
      "form",
      {
        cls: "gmchat-agents-form",
        testid: "gmchat-agents-form",
        attrs: { "aria-label": "Create an agent token", novalidate: true },
        on: {
          submit: (event) => {
            event.preventDefault();
            void this.submit();
          },
          keydown: (event) => {
            if (event.key === "Escape") cancel();
          },
          input: () => this.problem.replaceChildren(), // (a problem named is being fixed)
        },
      },
      [
        h("label", { cls: "gmchat-agents-field" }, [h("span", { cls: "gmchat-agents-label", text: "Name" }), this.name]),
        h("label", { cls: "gmchat-agents-check" }, [this.propose, h("span", { text: "May propose changes (a person still confirms each)" })]),
        h("label", { cls: "gmchat-agents-field" }, [h("span", { cls: "gmchat-agents-label", text: "Expires after" }), this.expiry]),
        h("div", { cls: "gmchat-agents-form-bar" }, [this.submitButton, button("Cancel", { testid: "gmchat-agents-cancel", onClick: () => cancel() }), this.status]),
        this.problem,
      ],
    );
  }

  focus(): void {
    this.name.focus();
  }

  /** Check the name, send the request, hand the secret on (or show why not). */
  async submit(): Promise<void> {
    if (this.busy) return;
    const refused = nameProblem(this.name.value);
    if (refused) {
      this.showProblem("invalid", refused);
      this.name.focus();
      return;
    }
    const days = this.expiry.value === NEVER ? null : Number(this.expiry.value);
    this.busy = true;
    this.submitButton.disabled = true;
    this.status.textContent = "Creating\u2026";
    this.problem.replaceChildren();
    const answer = await this.create(createRequest(this.name.value, this.propose.checked, days));
    this.busy = false;
    this.submitButton.disabled = false;
    this.status.textContent = "";
    if (answer.ok) this.created(answer.value.token, answer.value.secret);
    else this.showProblem(answer.error.code, problemText(answer.error));
  }

  private showProblem(code: string, message: string): void {
    this.problem.setAttribute("data-code", code);
    this.problem.replaceChildren(h("span", { text: message }));
  }
}

/**
 * The secret of a token just created, shown once (see the module). `done` is called by **Done**;
 * the caller takes `el` out of the page, and with it every copy of the secret it holds.
 */
export function secretBox(token: AgentToken, secret: string, url: string, copy: CopyText, done: () => void): HTMLElement {
  const config = mcpConfig(url, secret);
  const secretStatus = h("span", { cls: "gmchat-agents-status", testid: "gmchat-agents-secret-copied", attrs: { role: "status" } });
  const configStatus = h("span", { cls: "gmchat-agents-status", testid: "gmchat-agents-config-copied", attrs: { role: "status" } });
  const secretRow = h("div", { cls: "gmchat-agents-secret-row" });
  const configRow = h("div", { cls: "gmchat-agents-secret-row" });
  const doneButton = button("Done", { cls: "gmchat-primary", testid: "gmchat-agents-done", aria: "Done: hide the secret for good", onClick: () => done() });
  secretRow.append(
    h("code", { cls: "gmchat-agents-secret-value", testid: "gmchat-agents-secret-value", text: secret }),
    button("Copy", { testid: "gmchat-agents-copy-secret", aria: "Copy the secret", onClick: () => void copy(secret, secretStatus, secretRow) }),
    secretStatus,
  );
  configRow.append(
    button("Copy configuration", { testid: "gmchat-agents-copy-config", onClick: () => void copy(config, configStatus, configRow) }),
    configStatus,
  );
  const box = h("div", { cls: "gmchat-agents-secret", testid: "gmchat-agents-secret", attrs: { role: "group", "aria-label": `The secret of ${token.name}` } }, [
    h("div", { cls: "gmchat-agents-secret-title", text: `\u201c${token.name}\u201d created (${scopesText(token.scopes).toLowerCase()})` }),
    h("div", { cls: "gmchat-agents-warning", testid: "gmchat-agents-secret-warning", text: "Copy the secret now: it will not be shown again." }),
    secretRow,
    h("div", { cls: "gmchat-agents-label", text: "MCP client configuration (e.g. .mcp.json):" }),
    h("pre", { cls: "gmchat-agents-config", testid: "gmchat-agents-config", attrs: { tabindex: "0" } }, [h("code", { text: config })]),
    configRow,
    h("div", { cls: "gmchat-agents-form-bar" }, [doneButton]),
  ]);
  return box;
}
