/**
 * The anywidget entry point (`export default { render }`): a `ChatView` on a comm transport over
 * the widget's model. anywidget loads the bundle from a Blob URL, so build.mjs bundles every
 * import into this one module.
 *
 * The pure helpers are named exports too, so the node tests in tests/widget/js/ import them
 * from the built module.
 */

import { ChatView } from "./chat-view";
import { type AnyModel, CommTransport } from "./transport/comm";

export * from "./format";
export * from "./guards";
export * from "./planned";
export * from "./replay";
export { conversationLabel } from "./conversations";
export {
  ALLOWED_TAGS,
  LINK_HOST_CLASS,
  MAX_NESTING,
  linkHost,
  markdownFragment,
  renderMarkdown,
  safeHref,
  sanitizedFragment,
} from "./markdown";
export { isServerMessage } from "./protocol";
export { EVENT_RENDERERS } from "./turn";
export { ChatView, CommTransport };

/**
 * Render one view. Sends `hello` (with its saved cursor after a reload); the kernel answers with
 * a `replay` or a `snapshot`.
 * @returns cleanup: removes listeners and timers
 */
function render({ model, el }: { model: AnyModel; el: HTMLElement }): () => void {
  const transport = new CommTransport(model);
  const view = new ChatView(transport, el);
  return () => view.dispose();
}

export default { render };
