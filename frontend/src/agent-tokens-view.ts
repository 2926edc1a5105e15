/**
 * The agent-token view of the side panel: a drawer under the header (its **Agents** button) that
 * lists the person's agent tokens — each one's name, the start of its secret, scopes, when it was
 * created, expires and was last used, and its state (active, expired, revoked) — revokes one
 * (asked once more, inline), and creates one (agent-tokens-form.ts), whose secret and MCP client
 * configuration it shows once. Only a host that reaches the `{url}agent-tokens/` routes with the
 * person's browser session has it (the side panel: `ChatViewOptions.agentTokens`); the notebook
 * widget's kernel has no such routes and shows no button. After every change the list is asked
 * for again.
 */

import { type AgentToken, prefixText, problemText, scopesText, stateLabel, tokenTimes } from "./agent-tokens";
import { type CopyText, type CreateToken, CreateTokenForm, secretBox } from "./agent-tokens-form";
import { button, h } from "./dom";
import type { AgentTokenAnswer } from "./transport/server-agent-tokens";

/** What the view asks of the server (AgentTokensClient). */
export interface AgentTokenAccess {
  list(): Promise<AgentTokenAnswer<AgentToken[]>>;
  create: CreateToken;
  revoke(id: string): Promise<AgentTokenAnswer<AgentToken>>;
}

/** What a host gives the view (lab/panel.ts). */
export interface AgentTokensOptions {
  client: AgentTokenAccess;
  /** the server's MCP endpoint, `{origin}{base_url}gmchat/mcp`, for the configuration shown */
  mcpUrl: string;
}

/** The drawer (see the module). */
export class AgentTokensView {
  readonly el: HTMLElement;
  /** The header's **Agents** button, which opens and closes the drawer. */
  readonly toggleButton: HTMLButtonElement;
  private readonly formSlot: HTMLDivElement;
  private readonly secretSlot: HTMLDivElement;
  private readonly listStatus: HTMLDivElement;
  private readonly list: HTMLUListElement;
  private asked = 0; // the newest list request: older answers are dropped
  private opened = false;

  /**
   * @param copy copies a text to the clipboard (ChatView.copyText)
   * @param onToggle told when the drawer opens or closes (the chat view closes its other drawer)
   */
  constructor(
    private readonly options: AgentTokensOptions,
    private readonly copy: CopyText,
    private readonly onToggle: (open: boolean) => void = () => undefined,
  ) {
    this.toggleButton = button("Agents", {
      testid: "gmchat-agents-toggle",
      aria: "Agents: the tokens MCP clients use gmchat with",
      onClick: () => this.toggle(),
    });
    this.toggleButton.setAttribute("aria-expanded", "false");
    this.formSlot = h("div", { cls: "gmchat-agents-slot" });
    this.secretSlot = h("div", { cls: "gmchat-agents-slot" });
    this.listStatus = h("div", { cls: "gmchat-agents-list-status", testid: "gmchat-agents-list-status", attrs: { role: "status" } });
    this.list = h("ul", { cls: "gmchat-agents-list", testid: "gmchat-agents-list", attrs: { "aria-label": "Agent tokens" } });
    this.el = h("section", { cls: "gmchat-agents", testid: "gmchat-agents", attrs: { "aria-label": "Agent tokens", hidden: true } }, [
      h("div", { cls: "gmchat-agents-head" }, [
        h("span", { cls: "gmchat-agents-title", text: "Agent tokens" }),
        button("Create token", { cls: "gmchat-primary", testid: "gmchat-agents-create", onClick: () => this.showForm() }),
        button("\u00d7", { cls: "gmchat-dismiss", testid: "gmchat-agents-close", aria: "Close the agent tokens", onClick: () => this.toggle(false) }),
      ]),
      h("div", {
        cls: "gmchat-agents-intro",
        text:
          "An agent token lets an MCP client (an agent such as Claude Code) use gmchat as you, without your Jupyter token. " +
          "An agent never confirms a change: it can at most propose one, and you decide it here or in the notebook.",
      }),
      this.formSlot,
      this.secretSlot,
      this.listStatus,
      this.list,
    ]);
  }

  get isOpen(): boolean {
    return this.opened;
  }

  /** Open (listing the tokens) or close the drawer; closing takes a shown secret away too. */
  toggle(open = !this.opened): void {
    this.opened = open;
    this.el.hidden = !open;
    this.toggleButton.setAttribute("aria-expanded", String(open));
    this.onToggle(open);
    if (open) {
      void this.refresh();
    } else {
      this.formSlot.replaceChildren();
      this.secretSlot.replaceChildren();
    }
  }

  /** Ask for the tokens and show them. */
  async refresh(): Promise<void> {
    const asked = ++this.asked;
    this.el.setAttribute("aria-busy", "true");
    const answer = await this.options.client.list();
    if (asked !== this.asked) return; // a newer list is on its way
    this.el.removeAttribute("aria-busy");
    if (!answer.ok) {
      this.listStatus.setAttribute("data-state", "error");
      this.listStatus.setAttribute("data-code", answer.error.code);
      this.listStatus.textContent = problemText(answer.error);
      return;
    }
    const tokens = answer.value;
    const active = tokens.filter((token) => token.state === "active").length;
    this.listStatus.removeAttribute("data-state");
    this.listStatus.removeAttribute("data-code");
    this.listStatus.textContent = tokens.length
      ? `${tokens.length} ${tokens.length === 1 ? "token" : "tokens"}, ${active} active`
      : "No agent tokens yet: create one for each agent that should use gmchat as you.";
    this.list.replaceChildren(...tokens.map((token) => this.row(token)));
    this.el.setAttribute("data-tokens", String(tokens.length));
  }

  private showForm(): void {
    const form = new CreateTokenForm(
      (request) => this.options.client.create(request),
      (token, secret) => {
        this.formSlot.replaceChildren();
        this.showSecret(token, secret);
        void this.refresh();
      },
      () => this.formSlot.replaceChildren(),
    );
    this.formSlot.replaceChildren(form.el);
    form.focus();
  }

  private showSecret(token: AgentToken, secret: string): void {
    const box = secretBox(token, secret, this.options.mcpUrl, this.copy, () => this.secretSlot.replaceChildren());
    this.secretSlot.replaceChildren(box);
    box.querySelector<HTMLElement>("[data-testid=gmchat-agents-copy-secret]")?.focus();
  }

  /** One token: what it is, when, its state, and (while active) **Revoke**. */
  private row(token: AgentToken): HTMLLIElement {
    const slot = h("div", { cls: "gmchat-agents-row-slot" });
    const actions = h("div", { cls: "gmchat-agents-actions" });
    if (token.state === "active") {
      actions.append(
        button("Revoke", { cls: "gmchat-danger", testid: "gmchat-agents-revoke", aria: `Revoke ${token.name}`, onClick: () => this.askRevoke(token, slot) }),
      );
    }
    return h("li", { cls: "gmchat-agents-token", testid: "gmchat-agents-token", attrs: { "data-id": token.id, "data-state": token.state } }, [
      h("div", { cls: "gmchat-agents-token-line" }, [
        h("span", { cls: "gmchat-agents-name", testid: "gmchat-agents-token-name", text: token.name }),
        h("span", { cls: "gmchat-agents-badge", testid: "gmchat-agents-token-state", text: stateLabel(token.state), attrs: { "data-state": token.state } }),
        actions,
      ]),
      h("div", { cls: "gmchat-agents-token-meta" }, [
        h("code", { cls: "gmchat-agents-prefix", testid: "gmchat-agents-token-prefix", text: prefixText(token.prefix) }),
        h("span", { testid: "gmchat-agents-token-scopes", text: scopesText(token.scopes) }),
      ]),
      h("div", { cls: "gmchat-agents-token-meta", testid: "gmchat-agents-token-times", text: tokenTimes(token) }),
      slot,
    ]);
  }

  private askRevoke(token: AgentToken, slot: HTMLElement): void {
    const problem = h("span", { cls: "gmchat-agents-problem", testid: "gmchat-agents-revoke-error", attrs: { role: "alert" } });
    const revoke = button("Revoke", {
      cls: "gmchat-danger",
      testid: "gmchat-agents-revoke-confirm",
      aria: `Revoke ${token.name} for good`,
      onClick: async () => {
        revoke.disabled = true;
        const answer = await this.options.client.revoke(token.id);
        revoke.disabled = false;
        if (answer.ok) void this.refresh();
        else problem.textContent = problemText(answer.error);
      },
    });
    slot.replaceChildren(
      h("div", { cls: "gmchat-agents-confirm", testid: "gmchat-agents-revoke-question" }, [
        h("span", { text: `Revoke \u201c${token.name}\u201d? Agents using it are refused from now on; this cannot be undone.` }),
        revoke,
        button("Keep", { testid: "gmchat-agents-revoke-keep", onClick: () => slot.replaceChildren() }),
        problem,
      ]),
    );
    revoke.focus();
  }
}
