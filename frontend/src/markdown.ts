/**
 * Markdown rendering: an answer's text to sanitized DOM nodes, with markdown-it and DOMPurify.
 *
 * markdown-it parses (CommonMark with GitHub tables and ~~strikethrough~~, bare http(s) URLs
 * linkified, raw HTML off: `<b>` in an answer is text) and writes an HTML string; DOMPurify
 * parses that string in an inert document and hands back a DocumentFragment that holds only the
 * allow-listed tags and attributes below. No HTML string is ever written into the page.
 *
 * Then every link is checked again with `safeHref` (http, https and mailto only; anything else
 * leaves its text), rebuilt to open in a new tab without an opener or a referrer, and followed
 * by the host it really goes to when its text does not say so (`linkHost`). A markdown image is
 * never loaded: it becomes a link to the image, `[image: alt]`, or its alt text.
 */

import DOMPurify from "dompurify";
import type { DOMPurify as Purifier, UponSanitizeAttributeHookEvent } from "dompurify";
import MarkdownIt from "markdown-it";
import type { Options as MarkdownOptions } from "markdown-it";
import type StateBlock from "markdown-it/lib/rules_block/state_block.mjs";
import type StateCore from "markdown-it/lib/rules_core/state_core.mjs";

/** How deep blocks (quotes, lists) may nest; what is deeper shows as plain text (and stays fast). */
export const MAX_NESTING = 24;

export const LINK_HOST_CLASS = "gmchat-link-host";

/** The only elements a rendered answer holds (plus the link-host span this module adds). */
export const ALLOWED_TAGS: readonly string[] = [
  "p", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "ul", "ol", "li",
  "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "a",
];

const ALLOWED_ATTRIBUTES = ["href", "title", "start", "class", "style"];

const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

/**
 * The href to use for a link target, or null when it must not become a link.
 *
 * Only absolute http(s) URLs with a host and mailto: URLs pass. Browsers drop tabs and newlines
 * anywhere and control characters at both ends before they parse a URL ("java\nscript:" is
 * "javascript:"), so the check looks at the string the browser would see.
 */
export function safeHref(raw: unknown): string | null {
  if (typeof raw !== "string") return null;
  // eslint-disable-next-line no-control-regex
  const cleaned = raw.replace(/[\t\n\r]/g, "").replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "");
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(cleaned);
  if (!scheme) return null;
  const name = (scheme[1] ?? "").toLowerCase();
  if (name !== "http" && name !== "https" && name !== "mailto") return null;
  if (name !== "mailto" && !/^https?:\/\/[^/?#\s\\]/i.test(cleaned)) return null;
  try {
    const url = new URL(cleaned);
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

/** A URL or address as compared with a link's text: no scheme, no trailing slash, lower case. */
function bareUrl(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/^(?:https?:\/\/|mailto:)/, "")
    .replace(/\/+$/, "");
}

/**
 * Where a link really goes, to show after its text (`Click here (evil.example)`), or "" when its
 * text already is its own URL (or its host). The host is the parsed one (an international
 * domain in its ASCII form, with a port when it has one); a mailto link shows its address.
 */
export function linkHost(href: unknown, label: unknown): string {
  const safe = safeHref(href);
  if (!safe) return "";
  let url: URL;
  try {
    url = new URL(safe);
  } catch {
    return "";
  }
  let shown = url.host;
  if (url.protocol === "mailto:") {
    try {
      shown = decodeURIComponent(url.pathname);
    } catch {
      shown = url.pathname;
    }
  }
  if (!shown) return "";
  const text = typeof label === "string" ? label : "";
  if (text.trim()) {
    const bare = bareUrl(text);
    if (safeHref(text.trim()) === safe || bare === bareUrl(safe) || bare === shown.toLowerCase()) return "";
  }
  return shown;
}

/* ---------------------------------------------------------------------------------------------
 * markdown-it: the parser and its few rules of ours
 * ------------------------------------------------------------------------------------------- */

const TASK = /^\[([ xX])\][ \t]+/;

/** `- [ ] todo` / `- [x] done`: the box as a character (no form control in an answer). */
function taskBoxes(state: StateCore): void {
  const tokens = state.tokens;
  for (let i = 2; i < tokens.length; i++) {
    const token = tokens[i];
    if (token?.type !== "inline" || tokens[i - 1]?.type !== "paragraph_open" || tokens[i - 2]?.type !== "list_item_open") {
      continue;
    }
    const first = token.children?.[0];
    const match = first && first.type === "text" ? TASK.exec(first.content) : null;
    if (!first || !match) continue;
    first.content = (match[1] === " " ? "\u2610 " : "\u2611 ") + first.content.slice(match[0].length);
  }
}

/** A fence's language: its info string's leading name characters only (`c"><x` is `c`). */
function fenceLanguage(state: StateCore): void {
  for (const token of state.tokens) {
    if (token.type === "fence") token.info = (/^[A-Za-z0-9_+-]{1,32}/.exec(token.info.trim()) ?? [""])[0];
  }
}

/**
 * Blocks nested past MAX_NESTING: markdown-it stops there and drops the rest of that block; here
 * the rest shows as one paragraph of its text (its markers as they were written), parsed inline
 * only. So deep nesting stays inert and linear, and no text of the answer goes missing.
 */
function flattenDeepBlocks(md: MarkdownIt): void {
  const tokenize = md.block.tokenize.bind(md.block);
  md.block.tokenize = (state: StateBlock, startLine: number, endLine: number): void => {
    if (state.level < MAX_NESTING) {
      tokenize(state, startLine, endLine);
      return;
    }
    const text = state.getLines(startLine, endLine, state.blkIndent, false).trim();
    state.line = endLine;
    if (!text) return;
    state.push("paragraph_open", "p", 1).map = [startLine, endLine];
    const inline = state.push("inline", "", 0);
    inline.content = text;
    inline.map = [startLine, endLine];
    inline.children = [];
    state.push("paragraph_close", "p", -1);
  };
}

function createParser(): MarkdownIt {
  const md = new MarkdownIt("default", {
    html: false,
    linkify: true,
    typographer: false,
    breaks: false,
  });
  // markdown-it reads `maxNesting` from its options at every parse; @types/markdown-it leaves
  // the option out of its Options type.
  (md.options as MarkdownOptions & { maxNesting: number }).maxNesting = MAX_NESTING;
  // Bare URLs only with an explicit http(s) scheme (no "example.com", no e-mail addresses).
  md.linkify.set({ fuzzyLink: false, fuzzyEmail: false, fuzzyIP: false });
  md.linkify.add("ftp:", null).add("//", null).add("mailto:", null);
  // Every link target parses as a link: the DOM pass below drops the unsafe ones and keeps
  // their text (markdown-it's own check would leave `[x](javascript:…)` as literal brackets).
  md.validateLink = () => true;
  flattenDeepBlocks(md);
  md.core.ruler.push("gmchat_task_boxes", taskBoxes);
  md.core.ruler.push("gmchat_fence_language", fenceLanguage);
  const escape = md.utils.escapeHtml;
  md.renderer.rules.s_open = () => "<del>";
  md.renderer.rules.s_close = () => "</del>";
  // Never load an image (privacy, no network): a link to it, or its alt text.
  md.renderer.rules.image = (tokens, idx, options, env, self) => {
    const token = tokens[idx];
    if (!token) return "";
    const alt = self.renderInlineAsText(token.children ?? [], options, env) || "image";
    const href = safeHref(token.attrGet("src"));
    if (!href) return escape(alt);
    const title = token.attrGet("title");
    return `<a href="${escape(href)}"${title ? ` title="${escape(title)}"` : ""}>${escape(`[image: ${alt}]`)}</a>`;
  };
  return md;
}

const parser = createParser();

/* ---------------------------------------------------------------------------------------------
 * DOMPurify: one configured sanitizer per window
 * ------------------------------------------------------------------------------------------- */

/** Which attribute may stay on which element, and with what value. */
function attributeAllowed(tag: string, name: string, value: string): boolean {
  switch (name) {
    case "href":
    case "title":
      return tag === "a";
    case "start":
      return tag === "ol" && /^\d{1,9}$/.test(value);
    case "class":
      return tag === "code" && /^language-[A-Za-z0-9_+-]{1,32}$/.test(value);
    case "style":
      return (tag === "th" || tag === "td") && /^text-align:(left|center|right)$/.test(value);
    default:
      return false;
  }
}

const purifiers = new WeakMap<object, Purifier>();

function purifierFor(view: Window): Purifier | null {
  let purifier = purifiers.get(view);
  if (!purifier) {
    // DOMPurify's types want a whole window; a jsdom or browser Window is one.
    purifier = DOMPurify(view as unknown as Parameters<typeof DOMPurify>[0]);
    purifier.addHook("uponSanitizeAttribute", (node: Element, data: UponSanitizeAttributeHookEvent) => {
      if (!attributeAllowed(node.nodeName.toLowerCase(), data.attrName, data.attrValue)) data.keepAttr = false;
    });
    purifiers.set(view, purifier);
  }
  return purifier.isSupported ? purifier : null;
}

/* ---------------------------------------------------------------------------------------------
 * The DOM pass: links, hosts and the newlines markdown-it writes between blocks
 * ------------------------------------------------------------------------------------------- */

/** A sanitized link with only our attributes (or its text, when its href is unsafe). */
function finishLink(link: Element): void {
  const doc = link.ownerDocument;
  const href = safeHref(link.getAttribute("href"));
  if (!href) {
    link.replaceWith(...Array.from(link.childNodes));
    return;
  }
  for (const name of link.getAttributeNames()) {
    if (name !== "href" && name !== "title") link.removeAttribute(name);
  }
  link.setAttribute("href", href);
  link.setAttribute("rel", "noopener noreferrer");
  link.setAttribute("target", "_blank");
  const host = linkHost(href, link.textContent ?? "");
  if (host) {
    const span = doc.createElement("span");
    span.className = LINK_HOST_CLASS;
    span.setAttribute("data-testid", "link-host");
    span.textContent = ` (${host})`;
    link.after(span);
  }
}

const BLOCK_TAGS = "p|h[1-6]|ul|ol|li|blockquote|pre|table|thead|tbody|tr|th|td|hr|br";
const NEWLINES_BEFORE_BLOCK = new RegExp(`\\n+(?=<\\/?(?:${BLOCK_TAGS})[\\s>])`, "g");
const NEWLINES_AFTER_BLOCK = new RegExp(`(<\\/?(?:${BLOCK_TAGS})(?:\\s[^>]*)?>)\\n+`, "g");
const CODE_BLOCK_END = /\n<\/code><\/pre>/g;

/**
 * Drop the newlines markdown-it writes between blocks, after a `<br>` and at the end of a code
 * block, so the text of an answer is what its blocks hold; newlines inside a paragraph (soft
 * breaks) stay. Only newline characters go: no markup can come of it (and DOMPurify follows).
 */
function tidyNewlines(html: string): string {
  return html.replace(CODE_BLOCK_END, "</code></pre>").replace(NEWLINES_BEFORE_BLOCK, "").replace(NEWLINES_AFTER_BLOCK, "$1");
}

/* ---------------------------------------------------------------------------------------------
 * Rendering
 * ------------------------------------------------------------------------------------------- */

/**
 * HTML (markdown-it's output) as sanitized DOM nodes of `doc`: DOMPurify keeps the allow-listed
 * tags and attributes, then every link is checked, rebuilt and followed by its host. Exported so
 * tests can hand it HTML the parser would never write. Without DOMPurify (a document with no
 * window) nothing is parsed: the fragment is empty.
 */
export function sanitizedFragment(doc: Document, html: string): DocumentFragment {
  const out = doc.createDocumentFragment();
  const view = doc.defaultView;
  const purifier = view ? purifierFor(view) : null;
  if (!purifier || !html) return out;
  const clean = purifier.sanitize(html, {
    ALLOWED_TAGS: [...ALLOWED_TAGS],
    ALLOWED_ATTR: ALLOWED_ATTRIBUTES,
    ALLOWED_URI_REGEXP: /^(?:https?|mailto):/i,
    // Not a URL: without this DOMPurify checks `start` against the URL pattern (the hook above
    // already holds it to digits).
    ADD_URI_SAFE_ATTR: ["start"],
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    ALLOW_UNKNOWN_PROTOCOLS: false,
    RETURN_DOM_FRAGMENT: true,
  });
  for (const link of Array.from(clean.querySelectorAll("a"))) finishLink(link);
  out.append(clean);
  return out;
}

/**
 * An answer's markdown as sanitized DOM nodes of `doc`. Non-strings and empty text give an
 * empty fragment; a document without a window (no DOMPurify) gets the text as one text node.
 */
export function markdownFragment(doc: Document, text: unknown): DocumentFragment {
  if (typeof text !== "string" || !text) return doc.createDocumentFragment();
  const view = doc.defaultView;
  if (!view || !purifierFor(view)) {
    const out = doc.createDocumentFragment();
    out.append(doc.createTextNode(text));
    return out;
  }
  return sanitizedFragment(doc, tidyNewlines(parser.render(text)));
}

/** Replace `el`'s children with the rendered markdown of `text`. */
export function renderMarkdown(el: Element, text: unknown): void {
  el.replaceChildren(markdownFragment(el.ownerDocument, text));
}
