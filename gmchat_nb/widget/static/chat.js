/**
 * gmchat_nb chat widget: the front end (an anywidget ES module).
 *
 * anywidget loads this file from a Blob URL, so it is one self-contained module that imports
 * nothing. The kernel owns all state (gmchat_nb/widget/protocol.py lists every message): a view
 * sends `hello`, builds itself from the `snapshot` (or `replay`) answer, then applies
 * `turn_start`, `events`, `table`, `turn_end`, `table_page`, `frame_bound`, `conversations` and
 * `error` as they arrive. Every view (a second output of the same widget, a reloaded page) keeps
 * its own state, and its cursor and turns in sessionStorage so a reload replays (see "Replay").
 *
 * A planned (orchestrated) turn uses the same events: its tool cards show their task, its `done`
 * event's `orchestration` becomes a plan panel (and a banner over a partial answer), and its
 * calculations join the queries in the evidence panel.
 *
 * Safety: model and data text reaches the DOM only as text nodes / `textContent`. Markdown is
 * parsed by a small pure parser into a tree of node descriptions, and `appendMarkdown` turns that
 * tree into elements from a fixed allow-list; links keep only http, https and mailto hrefs.
 *
 * The pure helpers are named exports too, so tests/widget/js/test_markdown.mjs tests them with node.
 */

/* ============================================================================================
 * Markdown: a pure parser to a node-description tree
 * ========================================================================================== */

/**
 * A node of the markdown tree: a text string, or an element description.
 * @typedef {string | {tag: string, attrs?: Object<string, string>, children?: MdNode[]}} MdNode
 */

const MAX_DEPTH = 12; // nesting limit for quotes, lists and emphasis (pathological input)
const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);
const ASCII_PUNCTUATION = /[!-/:-@[-`{-~]/;
const WORD_CHAR = /[\p{L}\p{N}]/u;

const RE_FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const RE_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RE_HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const RE_SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const RE_QUOTE = /^ {0,3}> ?(.*)$/;
const RE_LIST = /^( *)([-*+]|\d{1,9}[.)])(?:([ \t]+)(.*))?$/;
const RE_TABLE_SEP = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
const RE_TASK = /^\[([ xX])\][ \t]+/;
const RE_BARE_URL = /https?:\/\/[^\s<>"`]+/iy;
const RE_AUTOLINK = /<([a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^\s<>]*)>/y;
const RE_AUTOMAIL = /<([^\s<>@]+@[^\s<>@]+\.[^\s<>@]+)>/y;

/**
 * The href to use for a link target, or null when it must not become a link.
 *
 * Only absolute http(s) URLs with a host and mailto: URLs pass. Browsers drop tabs and newlines
 * anywhere and control characters at both ends before they parse a URL ("java\nscript:" is
 * "javascript:"), so the check looks at the string the browser would see.
 * @param {unknown} raw
 * @returns {string | null}
 */
export function safeHref(raw) {
  if (typeof raw !== "string") return null;
  const cleaned = raw.replace(/[\t\n\r]/g, "").replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "");
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(cleaned);
  if (!scheme) return null;
  const name = scheme[1].toLowerCase();
  if (name !== "http" && name !== "https" && name !== "mailto") return null;
  if (name !== "mailto" && !/^https?:\/\/[^/?#\s\\]/i.test(cleaned)) return null;
  try {
    const url = new URL(cleaned);
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

/** @returns {MdNode} */
function node(tag, children, attrs) {
  const out = { tag, children: children || [] };
  if (attrs) out.attrs = attrs;
  return out;
}

/** Append text to a node list, merging with a preceding text node. */
function pushText(out, text) {
  if (!text) return;
  if (typeof out[out.length - 1] === "string") out[out.length - 1] += text;
  else out.push(text);
}

function pushNode(out, item) {
  if (typeof item === "string") pushText(out, item);
  else out.push(item);
}

function runLength(src, i, ch) {
  let j = i;
  while (src[j] === ch) j++;
  return j - i;
}

/**
 * A code span starting at the backtick run at `i`.
 * @returns {{node: MdNode | null, end: number}} node is null when the run has no closing run
 */
function matchCodeSpan(src, i) {
  const n = runLength(src, i, "`");
  let j = i + n;
  while (j < src.length) {
    const k = src.indexOf("`", j);
    if (k < 0) break;
    const m = runLength(src, k, "`");
    if (m === n) {
      let text = src.slice(i + n, k).replace(/\n/g, " ");
      if (text.length > 2 && text[0] === " " && text[text.length - 1] === " " && text.trim()) {
        text = text.slice(1, -1);
      }
      return { node: node("code", [text]), end: k + m };
    }
    j = k + m;
  }
  return { node: null, end: i + n };
}

/**
 * `[label](destination "title")` starting at the `[` at `i`.
 * @returns {{label: string, href: string, title: string, end: number} | null}
 */
function matchLink(src, i) {
  let depth = 0;
  let j = i;
  for (; j < src.length; j++) {
    const ch = src[j];
    if (ch === "\\") {
      j++;
      continue;
    }
    if (ch === "`") {
      const span = matchCodeSpan(src, j);
      j = span.end - 1;
      continue;
    }
    if (ch === "[") depth++;
    else if (ch === "]" && --depth === 0) break;
  }
  if (j >= src.length || src[j + 1] !== "(") return null;
  const label = src.slice(i + 1, j);
  let k = j + 2;
  while (src[k] === " " || src[k] === "\t" || src[k] === "\n") k++;
  let href = "";
  if (src[k] === "<") {
    const close = src.indexOf(">", k);
    if (close < 0 || src.slice(k, close).includes("\n")) return null;
    href = src.slice(k + 1, close);
    k = close + 1;
  } else {
    let parens = 0;
    const start = k;
    for (; k < src.length; k++) {
      const ch = src[k];
      if (ch === "\\" && k + 1 < src.length) {
        k++;
        continue;
      }
      if (/\s/.test(ch)) break;
      if (ch === "(") parens++;
      else if (ch === ")") {
        if (parens === 0) break;
        parens--;
      }
    }
    href = src.slice(start, k).replace(/\\([!-/:-@[-`{-~])/g, "$1");
  }
  while (src[k] === " " || src[k] === "\t" || src[k] === "\n") k++;
  let title = "";
  const open = src[k];
  if (open === '"' || open === "'" || open === "(") {
    const closeCh = open === "(" ? ")" : open;
    const close = src.indexOf(closeCh, k + 1);
    if (close < 0) return null;
    title = src.slice(k + 1, close);
    k = close + 1;
    while (src[k] === " " || src[k] === "\t") k++;
  }
  if (src[k] !== ")") return null;
  return { label, href, title, end: k + 1 };
}

/** Index of the closing delimiter (`n` characters `ch`) for content starting at `from`, or -1. */
function findCloser(src, from, ch, n) {
  let j = from;
  while (j < src.length) {
    const c = src[j];
    if (c === "\\") {
      j += 2;
      continue;
    }
    if (c === "`") {
      j = matchCodeSpan(src, j).end;
      continue;
    }
    if (c === ch) {
      const run = runLength(src, j, ch);
      const closes = j > from && !/\s/.test(src[j - 1]);
      if (closes && run === n) return j;
      // "***" closes a "*" after an inner "**"; "**" inside "*...*" belongs to a nested strong
      if (closes && run > n && (n === 2 || run !== 2)) return j + run - n;
      j += run;
      continue;
    }
    j++;
  }
  return -1;
}

/**
 * Emphasis (`*em*`, `_em_`), strong (`**strong**`, `__strong__`) or `~~strikethrough~~` at `i`.
 * @returns {{node: MdNode, end: number} | null}
 */
function matchEmphasis(src, i, depth, inLink) {
  const ch = src[i];
  const run = runLength(src, i, ch);
  if (ch === "_" && i > 0 && WORD_CHAR.test(src[i - 1])) return null; // snake_case stays text
  let tries;
  if (ch === "~") tries = run === 2 ? [["del", 2]] : [];
  else tries = run >= 2 ? [["strong", 2], ["em", 1]] : [["em", 1]];
  for (const [tag, n] of tries) {
    const start = i + n;
    if (start >= src.length || /\s/.test(src[start])) continue;
    const close = findCloser(src, start, ch, n);
    if (close < 0) continue;
    if (ch === "_" && WORD_CHAR.test(src[close + n] || "")) continue;
    const inner = src.slice(start, close);
    return { node: node(tag, parseInline(inner, depth + 1, inLink)), end: close + n };
  }
  return null;
}

/** Trailing punctuation after a bare URL belongs to the sentence, not the URL. */
function trimUrl(url) {
  let out = url;
  for (;;) {
    const last = out[out.length - 1];
    if (/[.,:;!?'"*_~]/.test(last)) out = out.slice(0, -1);
    else if (last === ")" && count(out, "(") < count(out, ")")) out = out.slice(0, -1);
    else return out;
  }
}

function count(text, ch) {
  return text.split(ch).length - 1;
}

function linkNode(href, children, title) {
  const attrs = { href, rel: "noopener noreferrer", target: "_blank" };
  if (title) attrs.title = title;
  return node("a", children, attrs);
}

/** The text a reader sees of a node list. */
function plainText(nodes) {
  return nodes.map((n) => (typeof n === "string" ? n : n && typeof n === "object" ? plainText(n.children || []) : "")).join("");
}

/** A URL or address as compared with a link's text: no scheme, no trailing slash, lower case. */
function bareUrl(text) {
  return String(text)
    .trim()
    .toLowerCase()
    .replace(/^(?:https?:\/\/|mailto:)/, "")
    .replace(/\/+$/, "");
}

/**
 * Where a link really goes, to show after its text (`Click here (evil.example)`), or "" when its
 * text already is its own URL (or its host). The host is the parsed one (an international
 * domain in its ASCII form, with a port when it has one); a mailto link shows its address.
 * @param {unknown} href
 * @param {unknown} label the link's visible text
 * @returns {string}
 */
export function linkHost(href, label) {
  const safe = safeHref(href);
  if (!safe) return "";
  let url;
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

/** A link and, when its text is not its own URL, the host it goes to in small text after it. */
function linkNodes(href, children, title) {
  const host = linkHost(href, plainText(children));
  const link = linkNode(href, children, title);
  return host ? [link, node("span", [` (${host})`], { class: "gmchat-link-host" })] : [link];
}

/**
 * Parse inline markdown: code spans, emphasis, strong, strikethrough, links, autolinks, bare
 * http(s) URLs, escapes and line breaks. Raw HTML is not recognised: it stays text.
 * @param {string} src
 * @param {number} [depth]
 * @param {boolean} [inLink] inside a link label (no nested links)
 * @returns {MdNode[]}
 */
export function parseInline(src, depth = 0, inLink = false) {
  const out = [];
  if (!src) return out;
  if (depth > MAX_DEPTH) {
    pushText(out, src);
    return out;
  }
  let buf = "";
  const emit = (item) => {
    pushText(out, buf);
    buf = "";
    pushNode(out, item);
  };
  const emitLink = (href, children, title) => {
    for (const item of linkNodes(href, children, title)) emit(item);
  };
  const skipIndent = (k) => {
    while (src[k] === " " || src[k] === "\t") k++;
    return k;
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === "\\") {
      const next = src[i + 1];
      if (next === "\n") {
        emit(node("br"));
        i = skipIndent(i + 2);
        continue;
      }
      if (next !== undefined && ASCII_PUNCTUATION.test(next)) {
        buf += next;
        i += 2;
        continue;
      }
      buf += c;
      i++;
      continue;
    }
    if (c === "\n") {
      const hard = / {2,}$/.test(buf);
      buf = buf.replace(/[ \t]+$/, "");
      if (hard) emit(node("br"));
      else buf += "\n";
      i = skipIndent(i + 1);
      continue;
    }
    if (c === "`") {
      const span = matchCodeSpan(src, i);
      if (span.node) emit(span.node);
      else buf += src.slice(i, span.end);
      i = span.end;
      continue;
    }
    if (c === "!" && src[i + 1] === "[" && !inLink) {
      const link = matchLink(src, i + 1);
      if (link) {
        // never load images (privacy, no network): a link to the image, or its alt text
        const href = safeHref(link.href);
        const alt = link.label || "image";
        if (href) emitLink(href, [`[image: ${alt}]`], link.title);
        else emit(alt);
        i = link.end;
        continue;
      }
    }
    if (c === "[" && !inLink) {
      const link = matchLink(src, i);
      if (link) {
        const children = parseInline(link.label, depth + 1, true);
        const href = safeHref(link.href);
        if (href) emitLink(href, children, link.title);
        else {
          pushText(out, buf);
          buf = "";
          for (const child of children) pushNode(out, child);
        }
        i = link.end;
        continue;
      }
    }
    if (c === "<" && !inLink) {
      RE_AUTOLINK.lastIndex = i;
      RE_AUTOMAIL.lastIndex = i;
      const auto = RE_AUTOLINK.exec(src);
      const mail = auto ? null : RE_AUTOMAIL.exec(src);
      const match = auto || mail;
      if (match) {
        const href = safeHref(auto ? match[1] : `mailto:${match[1]}`);
        if (href) emitLink(href, [match[1]]);
        else buf += match[0];
        i += match[0].length;
        continue;
      }
    }
    if ((c === "h" || c === "H") && !inLink && (i === 0 || !WORD_CHAR.test(src[i - 1]))) {
      RE_BARE_URL.lastIndex = i;
      const match = RE_BARE_URL.exec(src);
      if (match) {
        const url = trimUrl(match[0]);
        const href = safeHref(url);
        if (href) {
          emitLink(href, [url]);
          i += url.length;
          continue;
        }
      }
    }
    if (c === "*" || c === "_" || c === "~") {
      const emphasis = matchEmphasis(src, i, depth, inLink);
      if (emphasis) {
        emit(emphasis.node);
        i = emphasis.end;
        continue;
      }
      const run = runLength(src, i, c);
      buf += src.slice(i, i + run);
      i += run;
      continue;
    }
    buf += c;
    i++;
  }
  pushText(out, buf);
  return out;
}

function isBlank(line) {
  return !line || /^[ \t]*$/.test(line);
}

function indentOf(line) {
  return /^ */.exec(line)[0].length;
}

function expandTabs(line) {
  return line.replace(/^[ \t]+/, (lead) => lead.replace(/\t/g, "    "));
}

/** A fence opener match, or null (a backtick fence's info string may not contain backticks). */
function fenceAt(line) {
  const m = RE_FENCE.exec(line);
  if (!m || (m[2][0] === "`" && m[3].includes("`"))) return null;
  return m;
}

/**
 * The list marker that starts `line`, or null.
 * @returns {{indent: number, ordered: boolean, start: number, contentCol: number, content: string} | null}
 */
function listMarker(line) {
  if (RE_HR.test(line)) return null;
  const m = RE_LIST.exec(line);
  if (!m) return null;
  const [, lead, marker, gap = "", rest = ""] = m;
  const ordered = /\d/.test(marker);
  let pad = gap.length || 1;
  let content = rest;
  if (gap.length > 4) {
    pad = 1;
    content = gap.slice(1) + rest;
  }
  return {
    indent: lead.length,
    ordered,
    start: ordered ? parseInt(marker, 10) : 1,
    contentCol: lead.length + marker.length + pad,
    content,
  };
}

/** Cells of a table row; `\|` is a literal pipe, and so is a pipe inside a code span. */
function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cur = "";
  for (let k = 0; k < s.length; k++) {
    const ch = s[k];
    if (ch === "`") {
      const span = matchCodeSpan(s, k);
      cur += s.slice(k, span.end);
      k = span.end - 1;
    } else if (ch === "\\" && s[k + 1] === "|") {
      cur += "|";
      k++;
    } else if (ch === "|") {
      cells.push(cur.trim());
      cur = "";
    } else cur += ch;
  }
  cells.push(cur.trim());
  return cells;
}

function isTableStart(lines, i) {
  const head = lines[i];
  const sep = lines[i + 1];
  if (sep === undefined || !head.includes("|") || !sep.includes("|")) return false;
  if (!RE_TABLE_SEP.test(sep)) return false;
  return splitRow(head).length === splitRow(sep).length;
}

/** True when line `i` starts a block that interrupts a paragraph. */
function startsBlock(lines, i) {
  const line = lines[i];
  return Boolean(
    fenceAt(line) ||
      RE_HEADING.test(line) ||
      RE_HR.test(line) ||
      RE_QUOTE.test(line) ||
      listMarker(line) ||
      isTableStart(lines, i),
  );
}

function parseFence(lines, i, m, out) {
  const indent = m[1].length;
  const fence = m[2];
  const lang = (/^[A-Za-z0-9_+-]{1,32}/.exec(m[3].trim()) || [""])[0];
  const closer = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}[ \\t]*$`);
  const body = [];
  let j = i + 1;
  while (j < lines.length && !closer.test(lines[j])) {
    const line = lines[j];
    body.push(line.slice(Math.min(indent, indentOf(line))));
    j++;
  }
  const code = node("code", body.length ? [body.join("\n")] : [], lang ? { class: `language-${lang}` } : undefined);
  out.push(node("pre", [code]));
  return j < lines.length ? j + 1 : j;
}

function alignOf(cell) {
  const left = cell.startsWith(":");
  const right = cell.endsWith(":");
  if (left && right) return "center";
  if (right) return "right";
  if (left) return "left";
  return null;
}

function parseTable(lines, i, depth, out) {
  const header = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map(alignOf);
  const cell = (tag, text, k) => node(tag, parseInline(text, depth), aligns[k] ? { align: aligns[k] } : undefined);
  const head = node("thead", [node("tr", header.map((text, k) => cell("th", text, k)))]);
  const rows = [];
  let j = i + 2;
  while (j < lines.length && !isBlank(lines[j]) && lines[j].includes("|")) {
    const line = lines[j];
    if (fenceAt(line) || RE_HEADING.test(line) || RE_QUOTE.test(line)) break;
    const cells = splitRow(line);
    rows.push(node("tr", header.map((_, k) => cell("td", cells[k] || "", k))));
    j++;
  }
  out.push(node("table", rows.length ? [head, node("tbody", rows)] : [head]));
  return j;
}

function parseQuote(lines, i, depth, out) {
  const inner = [];
  while (i < lines.length) {
    const m = RE_QUOTE.exec(lines[i]);
    if (m) {
      inner.push(m[1]);
      i++;
    } else if (inner.length && !isBlank(lines[i]) && !isBlank(inner[inner.length - 1]) && !startsBlock(lines, i)) {
      inner.push(lines[i]); // lazy continuation of the quoted paragraph
      i++;
    } else break;
  }
  out.push(node("blockquote", parseBlocks(inner, depth + 1)));
  return i;
}

/**
 * A bullet or ordered list. Lenient with the indentation models write: any line indented at
 * least two columns past the list's markers belongs to the current item (nested lists included).
 */
function parseList(lines, i, first, depth, out) {
  const base = first.indent;
  const items = [];
  let loose = false;
  let item = null;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      let j = i + 1;
      while (j < lines.length && isBlank(lines[j])) j++;
      if (j >= lines.length) break;
      const next = listMarker(lines[j]);
      const sibling = next && next.indent < base + 2 && next.ordered === first.ordered;
      if (!sibling && indentOf(lines[j]) < base + 2) break;
      loose = true;
      for (let k = i; k < j; k++) item.lines.push("");
      i = j;
      continue;
    }
    const marker = listMarker(line);
    if (marker && marker.indent < base + 2) {
      if (marker.ordered !== first.ordered) break;
      item = { lines: [marker.content], contentCol: marker.contentCol };
      items.push(item);
      i++;
      continue;
    }
    const indent = indentOf(line);
    if (indent >= base + 2) {
      item.lines.push(line.slice(Math.min(indent, item.contentCol)));
      i++;
      continue;
    }
    const last = item.lines[item.lines.length - 1];
    if (!isBlank(last) && !startsBlock(lines, i)) {
      item.lines.push(line.trimStart()); // lazy paragraph continuation
      i++;
      continue;
    }
    break;
  }
  const children = items.map((it) => listItem(it.lines, loose, depth));
  const attrs = first.ordered && first.start !== 1 ? { start: String(first.start) } : undefined;
  out.push(node(first.ordered ? "ol" : "ul", children, attrs));
  return i;
}

function listItem(lines, loose, depth) {
  let prefix = "";
  const task = RE_TASK.exec(lines[0]);
  if (task) {
    prefix = task[1] === " " ? "\u2610 " : "\u2611 ";
    lines = [lines[0].slice(task[0].length), ...lines.slice(1)];
  }
  let blocks = parseBlocks(lines, depth + 1);
  if (!loose) {
    blocks = blocks.flatMap((b) => (typeof b === "object" && b.tag === "p" ? b.children : [b]));
  }
  if (prefix) {
    const firstBlock = blocks[0];
    if (firstBlock && typeof firstBlock === "object" && firstBlock.tag === "p") firstBlock.children.unshift(prefix);
    else blocks.unshift(prefix);
  }
  const merged = [];
  for (const b of blocks) pushNode(merged, b);
  return node("li", merged);
}

function joinParagraph(lines) {
  return lines
    .map((line) => line.replace(/^[ \t]+/, ""))
    .join("\n")
    .replace(/[ \t]+$/, "");
}

function parseParagraph(lines, i, depth, out) {
  const buf = [lines[i]];
  i++;
  while (i < lines.length && !isBlank(lines[i])) {
    const setext = RE_SETEXT.exec(lines[i]);
    if (setext) {
      out.push(node(setext[1][0] === "=" ? "h1" : "h2", parseInline(joinParagraph(buf), depth)));
      return i + 1;
    }
    if (startsBlock(lines, i)) break;
    buf.push(lines[i]);
    i++;
  }
  out.push(node("p", parseInline(joinParagraph(buf), depth)));
  return i;
}

function parseBlocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
      continue;
    }
    const fence = fenceAt(line);
    if (fence) {
      i = parseFence(lines, i, fence, out);
      continue;
    }
    const heading = RE_HEADING.exec(line);
    if (heading) {
      out.push(node(`h${heading[1].length}`, parseInline(heading[2] || "", depth)));
      i++;
      continue;
    }
    if (RE_HR.test(line)) {
      out.push(node("hr"));
      i++;
      continue;
    }
    if (depth < MAX_DEPTH && RE_QUOTE.test(line)) {
      i = parseQuote(lines, i, depth, out);
      continue;
    }
    if (isTableStart(lines, i)) {
      i = parseTable(lines, i, depth, out);
      continue;
    }
    const marker = depth < MAX_DEPTH ? listMarker(line) : null;
    if (marker) {
      i = parseList(lines, i, marker, depth, out);
      continue;
    }
    i = parseParagraph(lines, i, depth, out);
  }
  return out;
}

/**
 * Parse markdown into a tree of node descriptions (pure: no DOM).
 *
 * Supports paragraphs, ATX and setext headings, **strong**, *em*, ~~del~~, `code`, fenced code
 * blocks, bullet / numbered / task lists (nested), GitHub tables, block quotes, rules, links and
 * autolinks. Raw HTML is never interpreted: it comes back as text.
 * @param {string} text
 * @returns {MdNode[]}
 */
export function parseMarkdown(text) {
  if (typeof text !== "string" || !text) return [];
  const lines = text.replace(/\r\n?/g, "\n").split("\n").map(expandTabs);
  return parseBlocks(lines, 0);
}

const VOID_TAGS = new Set(["br", "hr"]);

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * Serialise a markdown tree to escaped HTML text (for tests and debugging; the widget never uses
 * it: `appendMarkdown` builds DOM nodes).
 * @param {MdNode[]} nodes
 * @returns {string}
 */
export function treeToHtml(nodes) {
  return nodes
    .map((n) => {
      if (typeof n === "string") return escapeHtml(n);
      const attrs = Object.entries(n.attrs || {})
        .map(([k, v]) => ` ${k}="${escapeHtml(v)}"`)
        .join("");
      if (VOID_TAGS.has(n.tag)) return `<${n.tag}${attrs}>`;
      return `<${n.tag}${attrs}>${treeToHtml(n.children || [])}</${n.tag}>`;
    })
    .join("");
}

/* ============================================================================================
 * Markdown tree -> DOM (the thin, allow-listed layer)
 * ========================================================================================== */

const LINK_HOST_CLASS = "gmchat-link-host";

const ALLOWED_TAGS = new Set([
  "p", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "ul", "ol", "li",
  "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "a",
]);

/**
 * Append a markdown tree to `parent` as DOM nodes. Text becomes text nodes; only allow-listed
 * tags and attributes are created, and every href is checked again with `safeHref`.
 * @param {Element} parent
 * @param {MdNode[]} nodes
 */
export function appendMarkdown(parent, nodes) {
  const doc = parent.ownerDocument;
  for (const n of nodes) {
    if (typeof n === "string") {
      parent.appendChild(doc.createTextNode(n));
      continue;
    }
    if (!n || typeof n !== "object") continue;
    const children = Array.isArray(n.children) ? n.children : [];
    const attrs = n.attrs || {};
    if (n.tag === "span" && attrs.class === LINK_HOST_CLASS) {
      // where a link really goes, in small text after it (see linkHost)
      const span = doc.createElement("span");
      span.className = LINK_HOST_CLASS;
      span.setAttribute("data-testid", "link-host");
      appendMarkdown(span, children);
      parent.appendChild(span);
      continue;
    }
    if (!ALLOWED_TAGS.has(n.tag)) {
      appendMarkdown(parent, children);
      continue;
    }
    let href = null;
    if (n.tag === "a") {
      href = safeHref(attrs.href);
      if (!href) {
        appendMarkdown(parent, children);
        continue;
      }
    }
    const el = doc.createElement(n.tag);
    if (href) {
      el.setAttribute("href", href);
      el.setAttribute("rel", "noopener noreferrer");
      el.setAttribute("target", "_blank");
      if (typeof attrs.title === "string" && attrs.title) el.setAttribute("title", attrs.title);
    }
    if (n.tag === "ol" && /^\d{1,9}$/.test(String(attrs.start || ""))) el.setAttribute("start", attrs.start);
    if (n.tag === "code" && /^language-[A-Za-z0-9_+-]{1,32}$/.test(String(attrs.class || ""))) {
      el.className = attrs.class;
    }
    if ((n.tag === "th" || n.tag === "td") && ["left", "center", "right"].includes(attrs.align)) {
      el.style.textAlign = attrs.align;
    }
    appendMarkdown(el, children);
    parent.appendChild(el);
  }
}

/* ============================================================================================
 * Pure formatting helpers
 * ========================================================================================== */

/**
 * JSON on one line, cut to `max` characters with an ellipsis.
 * @param {unknown} value
 * @param {number} [max]
 */
export function compactJson(value, max = 120) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = String(value);
  return text.length > max ? `${text.slice(0, Math.max(1, max - 1))}\u2026` : text;
}

/** Pretty JSON (2-space indent), cut at `max` characters. */
export function prettyJson(value, max = 20000) {
  let text;
  try {
    text = JSON.stringify(value, null, 2);
  } catch {
    text = String(value);
  }
  if (text === undefined) text = String(value);
  return text.length > max ? `${text.slice(0, max)}\n\u2026 (${text.length - max} more characters)` : text;
}

/**
 * The text of a table cell: scalars as they are, nested lists and objects as compact JSON.
 * @param {unknown} value
 * @returns {string}
 */
export function formatCell(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value);
  return compactJson(value, 300);
}

/** True for the query tool and the "direct" per-manager query tools (`query_part`). */
export function isQueryTool(name) {
  return name === "query" || (typeof name === "string" && name.startsWith("query_"));
}

function argText(value) {
  if (typeof value === "string") return value.length > 60 ? `${value.slice(0, 59)}\u2026` : value;
  return compactJson(value, 80);
}

const LEAD_ARGUMENT = {
  query: "manager",
  mutate: "mutation",
  get_manager_schema: "manager",
  search_managers: "query",
};

/**
 * A one-line summary of a tool call's arguments, e.g. `Part · filters {"name__icontains":"bolt"}`.
 * The tool's main argument comes first without its key; `fields` (long, in the card's body) is left out.
 * @param {string} name
 * @param {unknown} args
 * @param {number} [max]
 */
export function summarizeArgs(name, args, max = 160) {
  if (args === null || args === undefined) return "";
  if (typeof args !== "object" || Array.isArray(args)) return compactJson(args, max);
  const parts = [];
  const rest = { ...args };
  if (name === "find_path" && "from_manager" in rest && "to_manager" in rest) {
    parts.push(`${argText(rest.from_manager)} \u2192 ${argText(rest.to_manager)}`);
    delete rest.from_manager;
    delete rest.to_manager;
  }
  const lead = LEAD_ARGUMENT[name] || (isQueryTool(name) ? "manager" : null);
  if (lead && lead in rest) {
    parts.push(name === "search_managers" ? JSON.stringify(String(rest[lead])) : argText(rest[lead]));
    delete rest[lead];
  }
  if (isQueryTool(name)) delete rest.fields;
  for (const [key, value] of Object.entries(rest)) parts.push(`${key} ${argText(value)}`);
  const text = parts.join(" \u00b7 ");
  return text.length > max ? `${text.slice(0, max - 1)}\u2026` : text;
}

/** A duration given in ms: `40 \u00b5s`, `3.4 ms`, `340 ms`, `2.4 s`, `1 min 5 s`. */
export function formatDuration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) return "";
  if (ms < 0.0005) return "<1 \u00b5s";
  if (ms < 0.9995) return `${Math.round(ms * 1000)} \u00b5s`;
  if (ms < 9.995) return `${ms.toFixed(1)} ms`;
  if (ms < 999.5) return `${Math.round(ms)} ms`;
  if (ms < 59950) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/**
 * The status of a tool result: `ok`; `error` with the error's code and message; or `cancelled`
 * with its reason (a mutation the human rejected, `user_rejected`, or let expire,
 * `confirmation_timed_out`).
 * @returns {{status: "ok" | "error" | "cancelled", code?: string, message?: string, reason?: string}}
 */
export function toolOutcome(result) {
  if (result && typeof result === "object" && result.status === "error") {
    return { status: "error", code: String(result.code || "error"), message: String(result.message || "") };
  }
  if (result && typeof result === "object" && result.status === "cancelled") {
    return { status: "cancelled", reason: String(result.reason || "cancelled") };
  }
  return { status: "ok" };
}

/**
 * A short summary of a query result: `12 of 120 rows · more available`. The widget's kernel
 * sends the row count as `rows` (the rows travel as a paged table); other clients send `data`.
 * @param {object} result
 * @param {{rows?: number}} [frame] the tool_result's frame summary
 */
export function querySummary(result, frame) {
  if (!result || typeof result !== "object") return "";
  let count = null;
  if (Array.isArray(result.data)) count = result.data.length;
  else if (Number.isFinite(result.rows)) count = result.rows;
  else if (frame && Number.isFinite(frame.rows)) count = frame.rows;
  if (count === null) return "";
  const total = Number.isFinite(result.total_count) ? result.total_count : count;
  const complete = result.complete === true || (result.complete === undefined && !result.has_more);
  return `${count} of ${total} rows \u00b7 ${complete ? "complete" : "more available"}`;
}

/** `1200 in · 85 out tokens`, or "" without usage. */
export function usageText(usage) {
  if (!usage || typeof usage !== "object") return "";
  const input = Number(usage.input_tokens) || 0;
  const output = Number(usage.output_tokens) || 0;
  return `${input} in \u00b7 ${output} out tokens`;
}

/** The text of an error: `message (code)`, plus `retry in N s` for rate limits. */
export function errorText(error) {
  if (!error || typeof error !== "object") return "";
  const message = String(error.message || "Chat request failed.");
  const code = error.code ? ` (${error.code})` : "";
  const retry =
    error.code === "rate_limited" && Number.isFinite(Number(error.retry_after_seconds)) && error.retry_after_seconds !== null
      ? ` \u2014 retry in ${Math.ceil(Number(error.retry_after_seconds))} s`
      : "";
  return `${message}${code}${retry}`;
}

/** Compare two cell values for sorting: empty last, numbers numerically, text naturally. */
export function compareCells(a, b) {
  const emptyA = a === null || a === undefined || a === "";
  const emptyB = b === null || b === undefined || b === "";
  if (emptyA || emptyB) return emptyA === emptyB ? 0 : emptyA ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  return formatCell(a).localeCompare(formatCell(b), undefined, { numeric: true, sensitivity: "base" });
}

/** The value of `column` (its index in `columns`) in a row given as a list or an object. */
export function cellValue(row, columns, index) {
  if (Array.isArray(row)) return row[index];
  if (row && typeof row === "object") return row[columns[index]];
  return undefined;
}

/**
 * A sorted copy of `rows`; empty values stay last in both directions.
 * @param {Array} rows
 * @param {string[]} columns
 * @param {{column: string, descending: boolean}} sort
 */
export function sortRows(rows, columns, sort) {
  const index = columns.indexOf(sort.column);
  if (index < 0) return rows.slice();
  const isEmpty = (v) => v === null || v === undefined || v === "";
  return rows
    .map((row, position) => ({ row, position, value: cellValue(row, columns, index) }))
    .sort((x, y) => {
      if (isEmpty(x.value) || isEmpty(y.value)) return compareCells(x.value, y.value) || x.position - y.position;
      const order = compareCells(x.value, y.value);
      return (sort.descending ? -order : order) || x.position - y.position;
    })
    .map((item) => item.row);
}

/** A display name for the snapshot's `project` / `provider` (a string or an object). */
export function displayName(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "object") {
    for (const key of ["name", "label", "spec", "id", "model"]) {
      if (typeof value[key] === "string" && value[key]) return value[key];
    }
    return compactJson(value, 60);
  }
  return String(value);
}

function formatTimestamp(value) {
  if (value === null || value === undefined || value === "") return "";
  let date;
  if (typeof value === "number") date = new Date(value < 1e12 ? value * 1000 : value);
  else date = new Date(String(value));
  if (Number.isNaN(date.getTime())) return String(value);
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** The label of a conversation in the picker: `title · 4 messages · 2025-01-02 10:30`. */
export function conversationLabel(item) {
  const title = String(item.title || "").trim() || "Untitled conversation";
  const parts = [title.length > 60 ? `${title.slice(0, 59)}\u2026` : title];
  if (Number.isFinite(item.messages)) parts.push(`${item.messages} message${item.messages === 1 ? "" : "s"}`);
  const when = formatTimestamp(item.updated_at);
  if (when) parts.push(when);
  return parts.join(" \u00b7 ");
}

/** JSON text (a string holding JSON) as a value; anything else unchanged. */
function maybeJson(value) {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/* ============================================================================================
 * Planned turns: pure helpers
 *
 * A planned (orchestrated) turn's tool events carry `task_id` (and a query's result its
 * `evidence_id`); its `done` event carries `orchestration`: the plan's tasks, its coverage, the
 * unresolved tasks' reasons and the engine's calculations. Every field is optional and may come
 * from a model (objectives) or the data (group names): it is shown as text only.
 * ========================================================================================== */

const TASK_STATES = {
  pending: { symbol: "\u25cb", label: "pending" },
  running: { symbol: "\u2026", label: "running" },
  resolved: { symbol: "\u2713", label: "resolved" },
  blocked: { symbol: "\u2715", label: "blocked" },
  budget_exhausted: { symbol: "\u29d7", label: "budget exhausted" },
};

// The stable reasons of an unresolved task, in the words a reader of the answer needs.
const REASON_TEXTS = {
  invalid_plan: "no safe plan could be made for it",
  manager_unresolved: "no matching data found",
  dependency_blocked: "a task it depends on failed",
  budget_exhausted: "reached its execution limit",
  deadline_exceeded: "reached its time limit",
  provider_failed: "the model failed",
  synthesis_failed: "no grounded answer could be written from its data",
};

/**
 * A task's status as one of the known states (for classes and attributes), else `unknown`.
 * @param {unknown} status
 */
export function taskState(status) {
  return typeof status === "string" && Object.hasOwn(TASK_STATES, status) ? status : "unknown";
}

/** A task status in words, with a symbol that does not rely on colour: `✓ resolved`. */
export function taskStateText(status) {
  const state = TASK_STATES[taskState(status)];
  return state ? `${state.symbol} ${state.label}` : `? ${typeof status === "string" && status ? status : "unknown"}`;
}

/** Why a task is unresolved, in plain words (an unknown reason: "could not be completed"). */
export function reasonText(reason) {
  return typeof reason === "string" && Object.hasOwn(REASON_TEXTS, reason) ? REASON_TEXTS[reason] : "could not be completed";
}

function wholeNumber(value) {
  const number = Number(value);
  return Number.isFinite(number) && number >= 0 ? Math.floor(number) : 0;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * The coverage of a plan: `1 of 2 tasks resolved` (its `coverage`, else counted from its tasks).
 * @param {object} orchestration
 */
export function coverageText(orchestration) {
  const { resolved, total } = coverageOf(orchestration);
  return `${resolved} of ${plural(total, "task")} resolved`;
}

function coverageOf(orchestration) {
  const coverage = orchestration && typeof orchestration.coverage === "object" ? orchestration.coverage : null;
  const tasks = planTasks(orchestration);
  if (coverage && Number.isFinite(Number(coverage.total))) {
    return { resolved: wholeNumber(coverage.resolved), total: wholeNumber(coverage.total) };
  }
  return { resolved: tasks.filter((task) => task.status === "resolved").length, total: tasks.length };
}

/** The banner of a partial answer: `Partial answer: 1 of 2 parts of the question could be answered.` */
export function partialText(orchestration) {
  const { resolved, total } = coverageOf(orchestration);
  return `Partial answer: ${resolved} of ${plural(total, "part")} of the question could be answered.`;
}

/** True when the plan says the answer covers only part of the question. */
export function isPartial(orchestration) {
  return Boolean(orchestration && typeof orchestration === "object" && orchestration.status === "partial");
}

/** The plan's tasks that are objects (a malformed entry is left out). */
export function planTasks(orchestration) {
  const tasks = orchestration && Array.isArray(orchestration.tasks) ? orchestration.tasks : [];
  return tasks.filter((task) => task && typeof task === "object" && !Array.isArray(task));
}

/** The plan's calculations that are objects. */
export function planCalculations(orchestration) {
  const items = orchestration && Array.isArray(orchestration.calculations) ? orchestration.calculations : [];
  return items.filter((item) => item && typeof item === "object" && !Array.isArray(item));
}

/**
 * The unresolved tasks with their reason and objective: `unresolved` as the spec gives it,
 * completed from the task list (a task that is not resolved and not listed still counts).
 * @returns {{taskId: string, reason: string, objective: string}[]}
 */
export function unresolvedTasks(orchestration) {
  const tasks = planTasks(orchestration);
  const byId = new Map(tasks.map((task) => [String(task.task_id ?? ""), task]));
  const listed = orchestration && Array.isArray(orchestration.unresolved) ? orchestration.unresolved : [];
  const out = new Map();
  for (const item of listed) {
    if (!item || typeof item !== "object") continue;
    const taskId = String(item.task_id ?? "");
    const task = byId.get(taskId);
    out.set(taskId, { taskId, reason: String(item.reason ?? task?.reason ?? ""), objective: String(task?.objective ?? "") });
  }
  for (const task of tasks) {
    const taskId = String(task.task_id ?? "");
    if (task.status === "resolved" || out.has(taskId) || !task.reason) continue;
    out.set(taskId, { taskId, reason: String(task.reason), objective: String(task.objective ?? "") });
  }
  return [...out.values()];
}

/** A JSON path as one line: `["data", 0, "unitPrice"]` is `data[0].unitPrice`. */
export function formatPath(path) {
  if (!Array.isArray(path)) return formatCell(path);
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out ? `.${formatCell(part)}` : formatCell(part);
  }
  return out;
}

/** A calculation's result as shown: its `text`, else its value and unit. */
export function calculationResult(calculation) {
  if (!calculation || typeof calculation !== "object") return "";
  if (typeof calculation.text === "string" && calculation.text) return calculation.text;
  const value = formatCell(calculation.value);
  return calculation.unit ? `${value} ${formatCell(calculation.unit)}` : value;
}

/** How many of a calculation's inputs are not listed (`input_count` counts them all). */
export function hiddenInputs(calculation) {
  const shown = Array.isArray(calculation?.inputs) ? calculation.inputs.length : 0;
  return Math.max(0, wholeNumber(calculation?.input_count) - shown);
}

/* ============================================================================================
 * Guards: pure helpers
 *
 * A tool result's `flags` mark text in the data that looks written for the model (core/guards/
 * scorer.py); a confirmation's `provenance` says which input values are not in the user's words.
 * Both carry data (paths, excerpts): shown as text only.
 * ========================================================================================== */

// A flag's reasons (scorer.REASONS) in the words a reader needs.
const FLAG_REASON_TEXTS = {
  instruction: "instructions to the assistant",
  chat_template: "chat-template tokens",
  tool_name: "tool names",
  markdown_image: "a markdown image",
  url_query: "a URL with a query string",
  invisible: "invisible characters",
};

/** A flag's reason in plain words (an unknown reason as it is). */
export function flagReasonText(reason) {
  if (typeof reason === "string" && Object.hasOwn(FLAG_REASON_TEXTS, reason)) return FLAG_REASON_TEXTS[reason];
  return formatCell(reason) || "suspicious text";
}

/**
 * A tool result's flags as `{path, reasons, excerpt}` with string fields (malformed entries left out).
 * @param {unknown} flags
 * @returns {{path: string, reasons: string[], excerpt: string}[]}
 */
export function resultFlags(flags) {
  if (!Array.isArray(flags)) return [];
  return flags
    .filter((flag) => flag && typeof flag === "object" && !Array.isArray(flag))
    .map((flag) => ({
      path: formatCell(flag.path) || "$",
      reasons: (Array.isArray(flag.reasons) ? flag.reasons : [flag.reasons]).map(formatCell).filter(Boolean),
      excerpt: formatCell(flag.excerpt),
    }));
}

/** The badge of a flagged result: `⚠ 3 suspicious fields`. */
export function flagsLabel(count) {
  return `\u26a0 ${plural(wholeNumber(count), "suspicious field")}`;
}

/** One flag in a line: `data[0].name: instructions to the assistant, a markdown image`. */
export function flagText(flag) {
  const reasons = (flag.reasons || []).map(flagReasonText).join(", ");
  return reasons ? `${flag.path}: ${reasons}` : flag.path;
}

/**
 * A confirmation's provenance: the input paths whose values are not in the user's words, and
 * whether text flagged as suspicious was read in the turn.
 * @returns {{fromData: string[], flagged: boolean}}
 */
export function confirmProvenance(provenance) {
  if (!provenance || typeof provenance !== "object" || Array.isArray(provenance)) return { fromData: [], flagged: false };
  const paths = Array.isArray(provenance.from_data) ? provenance.from_data : [];
  return {
    fromData: [...new Set(paths.map(formatCell).filter(Boolean))],
    flagged: provenance.flagged_data_read === true,
  };
}

/**
 * Which top-level input key each provenance path belongs to (`supplier.name` and `lines[0]`
 * belong to `supplier` and `lines`; the longest key that fits wins); paths no key fits map to null.
 * @param {string[]} keys
 * @param {string[]} paths
 * @returns {Map<string, string | null>} path -> key
 */
export function pathsByKey(keys, paths) {
  const out = new Map();
  for (const path of paths) {
    let best = null;
    for (const key of keys) {
      const fits = path === key || path.startsWith(`${key}.`) || path.startsWith(`${key}[`);
      if (fits && (best === null || key.length > best.length)) best = key;
    }
    out.set(path, best);
  }
  return out;
}

export const FLAGGED_WARNING = "Text that looks like instructions was read in this turn; check this change carefully.";

/* ============================================================================================
 * Replay: the view's cursor, its turn records and their copy in sessionStorage
 * ========================================================================================== */

/**
 * A view remembers a cursor: the conversation, the journal position through which it has every
 * turn, and the kernel's epoch token (protocol.py). `hello` sends it back; the kernel
 * answers a `replay` of what changed after it when it can, else a `snapshot`. A reloaded page
 * starts with nothing, so each view also keeps the turn records it rendered in sessionStorage
 * (this browser tab only, gone when the tab closes), filed under the widget's `storage_key`
 * and the conversation id; a reload renders them once the kernel answers with a replay.
 * Anything odd in storage (missing, too big, corrupted, another version) means a snapshot.
 * @typedef {{conversationId: string, position: number, epoch: string}} ViewCursor
 * @typedef {{cursor: ViewCursor, turns: object[]}} StoredView
 */

export const STORAGE_PREFIX = "gmchat:v1:";
/** The largest saved view (UTF-16 characters): an origin has ~5 MB, JupyterLab shares it. */
export const MAX_STORED_CHARS = 400_000;
/** Saved views kept at most (the oldest go first): one per widget and conversation. */
export const MAX_STORED_VIEWS = 8;
const STORAGE_KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A cursor from a kernel message's `cursor` (or a saved one), or null when it is malformed.
 * @param {unknown} value
 * @returns {ViewCursor | null}
 */
export function cursorOf(value) {
  if (!value || typeof value !== "object") return null;
  const { conversation_id: conversationId, position, epoch } = value;
  if (typeof conversationId !== "string" || !conversationId) return null;
  if (!Number.isSafeInteger(position) || position < 0) return null;
  if (typeof epoch !== "string" || !epoch) return null;
  return { conversationId, position, epoch };
}

/**
 * The `hello` a view sends: with its cursor when it has one (then a replay can answer it).
 * @param {ViewCursor | null | undefined} cursor
 */
export function helloMessage(cursor) {
  if (!cursor) return { type: "hello" };
  return { type: "hello", conversation_id: cursor.conversationId, after: cursor.position, epoch: cursor.epoch };
}

/** Whether a `replay` answers the hello this cursor sent. */
export function replayAnswers(cursor, replay) {
  return Boolean(cursor && replay && replay.conversation_id === cursor.conversationId && replay.after === cursor.position);
}

/** The sessionStorage key of a widget's saved view of one conversation. */
export function storageKey(widgetKey, conversationId) {
  return `${STORAGE_PREFIX}${widgetKey}:${conversationId}`;
}

function storageKeys(storage) {
  const keys = [];
  for (let i = 0; i < storage.length; i++) {
    const key = storage.key(i);
    if (typeof key === "string" && key.startsWith(STORAGE_PREFIX)) keys.push(key);
  }
  return keys;
}

function quietly(fn, fallback) {
  try {
    return fn();
  } catch {
    return fallback; // storage may be disabled, full or throwing (sandboxed frames): never fatal
  }
}

/**
 * The view a widget saved in this tab, or null (and the broken entry removed) when there is
 * none or it cannot be trusted. Never throws.
 * @param {Storage | null | undefined} storage
 * @param {unknown} widgetKey
 * @returns {StoredView | null}
 */
export function loadView(storage, widgetKey) {
  if (!storage || typeof widgetKey !== "string" || !STORAGE_KEY_PATTERN.test(widgetKey)) return null;
  const prefix = storageKey(widgetKey, "");
  const keys = quietly(() => storageKeys(storage).filter((key) => key.startsWith(prefix)), []);
  for (const key of keys) {
    const view = quietly(() => parseView(storage.getItem(key), key.slice(prefix.length)), null);
    if (view) return view;
    quietly(() => storage.removeItem(key));
  }
  return null;
}

function parseView(text, conversationId) {
  if (typeof text !== "string" || text.length > MAX_STORED_CHARS) return null;
  const saved = JSON.parse(text);
  if (!saved || typeof saved !== "object" || saved.v !== 1) return null;
  const cursor = cursorOf(saved.cursor);
  if (!cursor || cursor.conversationId !== conversationId || !Array.isArray(saved.turns)) return null;
  const turns = saved.turns.filter((t) => t && typeof t === "object" && Number.isSafeInteger(t.index) && t.index >= 0);
  if (turns.length !== saved.turns.length) return null;
  return { cursor, turns };
}

/**
 * Save a view's cursor and turn records for a reload of this tab; other conversations' saved
 * views of the same widget go, and the oldest beyond MAX_STORED_VIEWS. A view over the size
 * limit (or one the storage refuses) is not kept: that reload takes a snapshot. Never throws.
 * @returns {boolean} whether it was saved
 */
export function saveView(storage, widgetKey, cursor, turns, { maxChars = MAX_STORED_CHARS, maxViews = MAX_STORED_VIEWS } = {}) {
  if (!storage || typeof widgetKey !== "string" || !STORAGE_KEY_PATTERN.test(widgetKey) || !cursor) return false;
  const key = storageKey(widgetKey, cursor.conversationId);
  const mine = storageKey(widgetKey, "");
  for (const other of quietly(() => storageKeys(storage), [])) {
    if (other.startsWith(mine) && other !== key) quietly(() => storage.removeItem(other));
  }
  const cursorJson = { conversation_id: cursor.conversationId, position: cursor.position, epoch: cursor.epoch };
  const text = quietly(() => JSON.stringify({ v: 1, saved_at: Date.now(), cursor: cursorJson, turns }), null);
  if (text === null || text.length > maxChars) {
    quietly(() => storage.removeItem(key));
    return false;
  }
  const saved = quietly(() => {
    storage.setItem(key, text);
    return true;
  }, false);
  if (!saved) {
    quietly(() => storage.removeItem(key)); // full: an old copy would be a wrong one
    return false;
  }
  const ages = quietly(() => storageKeys(storage).map((k) => [k, savedAt(storage.getItem(k))]), []);
  ages.sort((a, b) => a[1] - b[1]);
  for (const [old] of ages.slice(0, Math.max(0, ages.length - maxViews))) {
    if (old !== key) quietly(() => storage.removeItem(old));
  }
  return true;
}

function savedAt(text) {
  const at = quietly(() => JSON.parse(text)?.saved_at, 0);
  return Number.isFinite(at) ? at : 0;
}

/**
 * Keep a view's turn records (by index) up to date with one live kernel message, the way the
 * view renders it: `turn_start` opens a record, `events` and `table` add to it, `turn_end`
 * completes it. (Snapshots and replays carry whole records.)
 * @param {Map<number, object>} records
 * @param {object} msg
 */
export function recordMessage(records, msg) {
  if (!msg || typeof msg !== "object") return;
  const turn = msg.turn && typeof msg.turn === "object" ? msg.turn : null;
  const index = Number(turn ? turn.index : msg.turn);
  if (!Number.isSafeInteger(index)) return;
  const record = records.get(index);
  if (record) {
    if (!Array.isArray(record.events)) record.events = []; // (a saved record may lack them)
    if (!Array.isArray(record.tables)) record.tables = [];
  }
  switch (msg.type) {
    case "turn_start":
      if (turn) records.set(index, { ...turn, events: [], tables: Array.isArray(turn.tables) ? [...turn.tables] : [] });
      break;
    case "events":
      if (record && Array.isArray(msg.events)) record.events.push(...msg.events);
      break;
    case "table":
      if (record && msg.table && typeof msg.table === "object" && !record.tables.some((t) => t && t.key === msg.table.key)) {
        record.tables.push(msg.table);
      }
      break;
    case "turn_end":
      if (turn) records.set(index, { ...(record || {}), ...turn, events: record ? record.events : [], running: false });
      break;
    default:
      break;
  }
}

/**
 * Calls `onReconnect` when the kernel connection comes back after it was lost, so a view whose
 * comm reconnected asks for what it missed. Uses the JupyterLab widget manager's kernel when it
 * has one (other front ends: nothing to watch).
 */
export class ConnectionWatch {
  constructor(kernel, onReconnect) {
    this.kernel = kernel;
    this.onReconnect = onReconnect;
    this.lost = false;
    this.slot = (_sender, status) => this.changed(status);
    const signal = quietly(() => kernel && kernel.connectionStatusChanged, null);
    const connected = Boolean(signal) && quietly(() => (signal.connect(this.slot), true), false);
    this.signal = connected ? signal : null;
  }

  changed(status) {
    if (status !== "connected") {
      this.lost = true;
    } else if (this.lost) {
      this.lost = false;
      this.onReconnect();
    }
  }

  dispose() {
    if (this.signal) quietly(() => this.signal.disconnect(this.slot));
    this.signal = null;
  }
}

/* ============================================================================================
 * DOM helpers
 * ========================================================================================== */

/**
 * Create an element. Text goes through `textContent`/text nodes only.
 * @param {string} tag
 * @param {{cls?: string, testid?: string, text?: unknown, attrs?: Object, on?: Object}} [opts]
 * @param {Array<Node|string|null>} [children]
 */
function h(tag, opts = {}, children = []) {
  const el = document.createElement(tag);
  if (opts.cls) el.className = opts.cls;
  if (opts.testid) el.setAttribute("data-testid", opts.testid);
  if (opts.text !== undefined && opts.text !== null) el.textContent = String(opts.text);
  for (const [key, value] of Object.entries(opts.attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const [event, handler] of Object.entries(opts.on || {})) el.addEventListener(event, handler);
  for (const child of children) if (child !== null && child !== undefined) el.append(child);
  return el;
}

/** A `<button type="button">` with a visible label and an optional accessible name. */
function button(label, { testid, aria, cls, title, onClick, disabled } = {}) {
  return h("button", {
    cls: cls ? `gmchat-btn ${cls}` : "gmchat-btn",
    testid,
    text: label,
    attrs: { type: "button", "aria-label": aria, title, disabled: Boolean(disabled) },
    on: onClick ? { click: onClick } : {},
  });
}

/* ============================================================================================
 * Result tables
 * ========================================================================================== */

/** A query's result table: first page, sortable headers, pager and "→ DataFrame". */
class TableView {
  /**
   * @param {ChatView} chat
   * @param {{key: string, call_id: string, manager: string, columns: string[], rows: Array,
   *   total_rows: number, total_count: number, complete: boolean, page_size: number}} table
   */
  constructor(chat, table) {
    this.chat = chat;
    this.key = String(table.key);
    this.columns = Array.isArray(table.columns) ? table.columns.map(String) : [];
    this.rows = Array.isArray(table.rows) ? table.rows : [];
    this.pageSize = Number(table.page_size) > 0 ? Number(table.page_size) : Math.max(this.rows.length, 25);
    this.total = Number.isFinite(table.total_rows) ? table.total_rows : this.rows.length;
    this.totalCount = Number.isFinite(table.total_count) ? table.total_count : this.total;
    this.complete = table.complete !== false;
    this.offset = 0;
    this.sort = null;
    this.pending = null;
    this.columns = this.columns.length ? this.columns : this.inferColumns();
    this.build(table);
    this.renderRows();
  }

  inferColumns() {
    const first = this.rows[0];
    return first && typeof first === "object" && !Array.isArray(first) ? Object.keys(first) : [];
  }

  build(table) {
    const status = `${this.total} of ${this.totalCount} rows \u00b7 ${this.complete ? "complete" : "more available"}`;
    this.head = h("tr");
    this.body = h("tbody");
    this.prev = button("Prev", { aria: "Previous page", onClick: () => this.goTo(this.offset - this.pageSize) });
    this.next = button("Next", { aria: "Next page", onClick: () => this.goTo(this.offset + this.pageSize) });
    this.range = h("span", { cls: "gmchat-range" });
    this.nameInput = h("input", {
      cls: "gmchat-frame-name",
      testid: "gmchat-frame-name",
      attrs: { type: "text", placeholder: "variable name (optional)", "aria-label": "Variable name for the DataFrame", spellcheck: "false" },
      on: { keydown: (e) => e.key === "Enter" && (e.preventDefault(), this.toFrame()) },
    });
    this.frameButton = button("\u2192 DataFrame", {
      testid: "gmchat-to-frame",
      aria: "Bind this result to a DataFrame variable",
      onClick: () => this.toFrame(),
    });
    this.bound = h("span", { cls: "gmchat-frame-bound", testid: "gmchat-frame-bound", attrs: { role: "status" } });
    this.el = h("div", { cls: "gmchat-table", testid: "gmchat-table", attrs: { "data-table": this.key } }, [
      h("div", { cls: "gmchat-table-status" }, [
        table.manager ? h("strong", { text: String(table.manager) }) : null,
        table.manager ? " \u00b7 " : null,
        status,
      ]),
      h("div", { cls: "gmchat-table-scroll" }, [h("table", { cls: "gmchat-grid" }, [h("thead", {}, [this.head]), this.body])]),
      h("div", { cls: "gmchat-table-bar" }, [
        h("div", { cls: "gmchat-pager", testid: "gmchat-table-page", attrs: { role: "group", "aria-label": "Pages" } }, [
          this.prev,
          this.range,
          this.next,
        ]),
        h("div", { cls: "gmchat-frame" }, [this.nameInput, this.frameButton, this.bound]),
      ]),
    ]);
  }

  renderHead() {
    this.head.replaceChildren(
      ...this.columns.map((column, index) => {
        const active = this.sort && this.sort.column === column;
        // A numeric column's header sits above its right-aligned numbers.
        const sample = this.rows.map((row) => cellValue(row, this.columns, index)).find((v) => v !== null && v !== undefined);
        const numeric = typeof sample === "number";
        const arrow = active ? (this.sort.descending ? " \u25bc" : " \u25b2") : "";
        const sortState = active ? (this.sort.descending ? "descending" : "ascending") : "none";
        return h("th", { cls: numeric ? "gmchat-num" : "", attrs: { scope: "col", "aria-sort": sortState } }, [
          button(`${column}${arrow}`, {
            cls: "gmchat-sort",
            aria: `Sort by ${column}`,
            onClick: () => this.sortBy(column),
          }),
        ]);
      }),
    );
  }

  renderRows() {
    this.renderHead();
    const rows = this.rows.map((row) =>
      h(
        "tr",
        {},
        this.columns.map((_, index) => {
          const value = cellValue(row, this.columns, index);
          const text = formatCell(value);
          const cls = value === null || value === undefined ? "gmchat-null" : typeof value === "number" ? "gmchat-num" : "";
          const cut = text.length > 200;
          return h("td", { cls, text: cut ? `${text.slice(0, 199)}\u2026` : text, attrs: { title: cut ? text : null } });
        }),
      ),
    );
    this.body.replaceChildren(...rows);
    const first = this.rows.length ? this.offset + 1 : 0;
    this.range.textContent = `${first}\u2013${this.offset + this.rows.length} of ${this.total}`;
    this.prev.disabled = this.offset <= 0 || Boolean(this.pending);
    this.next.disabled = this.offset + this.pageSize >= this.total || Boolean(this.pending);
  }

  /** All rows are on the page: sort locally; otherwise ask the kernel for a sorted first page. */
  sortBy(column) {
    const descending = Boolean(this.sort && this.sort.column === column && !this.sort.descending);
    this.sort = { column, descending };
    if (this.offset === 0 && this.rows.length >= this.total) {
      this.rows = sortRows(this.rows, this.columns, this.sort);
      this.renderRows();
    } else this.request(0);
  }

  goTo(offset) {
    if (offset < 0 || offset >= this.total) return;
    this.request(offset);
  }

  request(offset) {
    const msg = { type: "table_page", table: this.key, offset, limit: this.pageSize };
    if (this.sort) msg.sort = { column: this.sort.column, descending: this.sort.descending };
    this.pending = { offset };
    this.el.setAttribute("aria-busy", "true");
    this.renderHead();
    this.prev.disabled = true;
    this.next.disabled = true;
    this.chat.send(msg);
  }

  /** A `table_page` answer; pages this view did not ask for are ignored. */
  onPage(msg) {
    if (!this.pending) return;
    this.pending = null;
    this.el.removeAttribute("aria-busy");
    this.offset = Number.isFinite(msg.offset) ? msg.offset : 0;
    this.rows = Array.isArray(msg.rows) ? msg.rows : [];
    if (Number.isFinite(msg.total)) this.total = msg.total;
    this.renderRows();
  }

  toFrame() {
    const name = this.nameInput.value.trim();
    if (name && !/^[\p{L}_][\p{L}\p{N}_]*$/u.test(name)) {
      this.bound.textContent = "not a valid Python name";
      this.bound.classList.add("gmchat-bad");
      return;
    }
    const msg = { type: "to_frame", table: this.key };
    if (name) msg.name = name;
    this.frameButton.disabled = true;
    this.bound.classList.remove("gmchat-bad");
    this.bound.textContent = "binding\u2026";
    this.chat.send(msg);
  }

  /** A `frame_bound` answer: "bound to `name` (rows × columns)". */
  onFrameBound(msg) {
    this.frameButton.disabled = false;
    this.bound.classList.remove("gmchat-bad");
    const shape = Array.isArray(msg.shape) ? msg.shape : [];
    this.bound.replaceChildren(
      "bound to ",
      h("code", { text: String(msg.name || "") }),
      shape.length === 2 ? ` (${shape[0]} \u00d7 ${shape[1]})` : "",
    );
  }

  /** The kernel refused something: leave no control stuck in its waiting state. */
  unblock() {
    if (this.frameButton.disabled) {
      this.frameButton.disabled = false;
      if (this.bound.textContent === "binding\u2026") this.bound.textContent = "";
    }
    if (this.pending) {
      this.pending = null;
      this.el.removeAttribute("aria-busy");
      this.renderRows();
    }
  }
}

/* ============================================================================================
 * Turn parts: tool cards, confirmation boxes, evidence
 * ========================================================================================== */

/**
 * One tool step as a compact `<details>` card. Its duration is the kernel's measure of the tool's
 * own run (the result's `duration_ms`), not the time between two messages reaching the browser,
 * which would add the round's other tools and the kernel's own pauses.
 */
class ToolCard {
  /** @param {{id: string, name: string, args: unknown}} call */
  constructor(call) {
    this.id = String(call.id);
    this.name = String(call.name || "tool");
    this.status = "running";
    this.statusEl = h("span", { cls: "gmchat-tool-status", text: "running\u2026" });
    this.durationEl = h("span", { cls: "gmchat-tool-duration", testid: "gmchat-tool-duration" });
    this.resultEl = h("div", { cls: "gmchat-tool-result" });
    this.flagsEl = h("div", { cls: "gmchat-tool-flags" });
    this.flagsBadge = null;
    this.tableSlot = h("div", { cls: "gmchat-tool-table" });
    const summary = summarizeArgs(this.name, call.args);
    this.taskEl = null;
    this.evidenceEl = null;
    this.summaryEl = h("summary", {}, [
      h("span", { cls: "gmchat-tool-name", text: this.name }),
      h("span", { cls: "gmchat-tool-args", text: summary, attrs: { title: summary } }),
      this.statusEl,
      this.durationEl,
    ]);
    this.el = h(
      "details",
      { cls: "gmchat-tool", testid: "gmchat-tool", attrs: { "data-tool": this.name, "data-status": "running" } },
      [
        this.summaryEl,
        h("div", { cls: "gmchat-tool-body" }, [
          this.flagsEl,
          this.resultEl,
          this.tableSlot,
          h("div", { cls: "gmchat-label", text: "Arguments" }),
          h("pre", { cls: "gmchat-json", text: prettyJson(call.args ?? {}) }),
        ]),
      ],
    );
    this.setTask(call.task_id);
  }

  /** A planned turn's step: a badge naming its task before the tool's name (others get none). */
  setTask(taskId) {
    if (typeof taskId !== "string" || !taskId || this.taskEl) return;
    this.taskEl = h("span", { cls: "gmchat-task-badge", testid: "gmchat-task-badge", text: taskId, attrs: { title: `Task ${taskId} of the plan` } });
    this.el.setAttribute("data-task", taskId);
    this.summaryEl.prepend(this.taskEl);
  }

  /** A planned query's evidence id (`task_1:query:1`), which the answer and calculations cite. */
  setEvidence(evidenceId) {
    if (typeof evidenceId !== "string" || !evidenceId) return;
    if (!this.evidenceEl) {
      this.evidenceEl = h("code", { cls: "gmchat-evidence-id", testid: "gmchat-evidence-id", attrs: { title: "Evidence id" } });
      this.summaryEl.insertBefore(this.evidenceEl, this.durationEl);
    }
    this.evidenceEl.textContent = evidenceId;
  }

  setStatus(status, text) {
    this.status = status;
    this.el.setAttribute("data-status", status);
    this.statusEl.textContent = text || status;
    this.statusEl.className = `gmchat-tool-status gmchat-status-${status}`;
  }

  /** The tool's result arrived (with the kernel's `duration_ms` when the tool ran). */
  finish(event) {
    this.setTask(event.task_id);
    this.setEvidence(event.evidence_id);
    const duration = formatDuration(event.duration_ms);
    this.durationEl.textContent = duration;
    if (duration) this.durationEl.title = "time the tool ran in the kernel";
    const outcome = toolOutcome(event.result);
    const parts = [];
    if (outcome.status === "error") {
      this.setStatus("error", `error \u00b7 ${outcome.code}`);
      parts.push(h("div", { cls: "gmchat-tool-error", attrs: { role: "note" } }, [h("code", { text: outcome.code }), ` ${outcome.message}`]));
    } else if (outcome.status === "cancelled") {
      this.setStatus("cancelled", `cancelled \u00b7 ${outcome.reason}`);
    } else if (isQueryTool(this.name)) {
      const summary = querySummary(event.result, event.frame);
      this.setStatus("ok", summary ? `ok \u00b7 ${summary}` : "ok");
      const notes = event.result && Array.isArray(event.result.notes) ? event.result.notes : [];
      if (notes.length) parts.push(h("ul", { cls: "gmchat-notes" }, notes.map((note) => h("li", { text: formatCell(note) }))));
    } else {
      this.setStatus("ok", "ok");
      parts.push(h("div", { cls: "gmchat-label", text: "Result" }), h("pre", { cls: "gmchat-json", text: prettyJson(event.result, 6000) }));
    }
    this.resultEl.replaceChildren(...parts);
    this.setFlags(event.flags);
  }

  /**
   * Suspicious text in the result (its `flags`): a warning badge on the card, and in its body the
   * fields with their reasons and an excerpt. The card opens, so the list is in view.
   */
  setFlags(flags) {
    const items = resultFlags(flags);
    if (!items.length) return;
    const lines = items.map(flagText);
    if (!this.flagsBadge) {
      this.flagsBadge = h("span", { cls: "gmchat-flags-badge", testid: "flags" });
      this.summaryEl.insertBefore(this.flagsBadge, this.statusEl);
    }
    this.flagsBadge.textContent = flagsLabel(items.length);
    this.flagsBadge.title = lines.join("\n");
    this.el.setAttribute("data-flagged", String(items.length));
    this.flagsEl.replaceChildren(
      h("div", { cls: "gmchat-flags", testid: "flags-list", attrs: { role: "note" } }, [
        h("div", { cls: "gmchat-flags-title", text: "Suspicious text in this result: it is data, not instructions." }),
        h(
          "ul",
          {},
          items.map((item) =>
            h("li", { testid: "flag", attrs: { "data-path": item.path, "data-reasons": item.reasons.join(" ") } }, [
              h("code", { cls: "gmchat-flag-path", text: item.path }),
              h("span", { cls: "gmchat-flag-reasons", text: `: ${item.reasons.map(flagReasonText).join(", ")}` }),
              item.excerpt ? h("span", { cls: "gmchat-flag-excerpt", text: ` \u201c${item.excerpt}\u201d` }) : null,
            ]),
          ),
        ),
      ]),
    );
    this.el.open = true;
  }

  /** The turn ended while the tool was still running (stopped or failed). */
  abandon() {
    if (this.status === "running") this.setStatus("stopped", "stopped");
  }

  /** Show a query's result table; the card opens so the table is in view. */
  attachTable(view) {
    this.tableSlot.replaceChildren(view.el);
    this.el.open = true;
  }
}

/** A pending mutation: its input, a countdown and Confirm / Reject (each view sends at most once). */
class ConfirmBox {
  /**
   * @param {ChatView} chat
   * @param {{id: string, mutation: string, input: Object, expires_in_seconds?: number}} event
   */
  constructor(chat, event) {
    this.chat = chat;
    this.id = String(event.id);
    this.closed = false;
    const seconds = Number(event.expires_in_seconds);
    this.deadline = Number.isFinite(seconds) && seconds > 0 ? Date.now() + seconds * 1000 : null;
    this.countdown = h("span", { cls: "gmchat-countdown", attrs: { "aria-live": "off" } });
    this.outcome = h("span", { cls: "gmchat-confirm-outcome", attrs: { role: "status" } });
    this.confirmButton = button("Confirm", {
      cls: "gmchat-primary",
      testid: "gmchat-confirm",
      aria: `Confirm ${event.mutation}`,
      onClick: () => this.decide(true),
    });
    this.rejectButton = button("Reject", {
      cls: "gmchat-danger",
      testid: "gmchat-reject",
      aria: `Reject ${event.mutation}`,
      onClick: () => this.decide(false),
    });
    const input = event.input && typeof event.input === "object" ? event.input : {};
    // Where the input came from: values not in the user's words get a "from data" tag.
    const provenance = confirmProvenance(event.provenance);
    const owners = pathsByKey(Object.keys(input), provenance.fromData);
    const tag = (path, key) =>
      h("span", {
        cls: "gmchat-from-data",
        testid: "from-data",
        text: path === key ? "from data" : `from data: ${path}`,
        attrs: { "data-path": path, title: `${path} is not in your words: it came from the data (or the model)` },
      });
    const rows = Object.entries(input).map(([key, value]) => {
      const paths = provenance.fromData.filter((path) => owners.get(path) === key);
      return h("tr", { cls: paths.length ? "gmchat-from-data-row" : "" }, [
        h("th", { attrs: { scope: "row" } }, [key, ...paths.map((path) => tag(path, key))]),
        h("td", { text: formatCell(value) }),
      ]);
    });
    const strays = provenance.fromData.filter((path) => owners.get(path) === null);
    this.el = h(
      "div",
      {
        cls: "gmchat-confirm-box",
        testid: "gmchat-confirm-box",
        attrs: { role: "group", "aria-label": `Confirm mutation ${event.mutation}`, "data-call-id": this.id },
      },
      [
        h("div", { cls: "gmchat-confirm-title" }, ["Confirm mutation ", h("code", { text: String(event.mutation || "") })]),
        provenance.flagged
          ? h("div", { cls: "gmchat-flagged-warning", testid: "flagged-warning", attrs: { role: "alert" }, text: FLAGGED_WARNING })
          : null,
        rows.length ? h("table", { cls: "gmchat-kv" }, [h("tbody", {}, rows)]) : h("div", { cls: "gmchat-muted", text: "(no input)" }),
        strays.length ? h("div", { cls: "gmchat-from-data-more" }, strays.map((path) => tag(path, null))) : null,
        provenance.fromData.length
          ? h("div", { cls: "gmchat-muted gmchat-provenance-note", text: "Values marked \u201cfrom data\u201d are not in your message: the model took them from data or made them up." })
          : null,
        h("div", { cls: "gmchat-confirm-actions" }, [this.confirmButton, this.rejectButton, this.countdown, this.outcome]),
      ],
    );
    this.tick(Date.now());
  }

  decide(ok) {
    if (this.closed) return;
    this.chat.send({ type: "confirm", call_id: this.id, ok: Boolean(ok) });
    this.close(ok ? "confirmed \u2014 running\u2026" : "rejected");
  }

  /** Update the countdown; close when time is up. @returns {boolean} still counting */
  tick(now) {
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
  close(reason) {
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

  /** The mutation's tool result arrived: say what became of it. */
  resolved(result) {
    const outcome = toolOutcome(result);
    let text = "applied";
    if (outcome.status === "error") text = `failed \u00b7 ${outcome.code}`;
    else if (outcome.reason === "user_rejected") text = "rejected";
    else if (outcome.reason === "confirmation_timed_out") text = "expired";
    else if (outcome.status === "cancelled") text = `cancelled \u00b7 ${outcome.reason}`;
    if (this.closed) this.outcome.textContent = text;
    else this.close(text);
  }
}

/**
 * The evidence of a finished turn: one row per query, with its GraphQL and "Copy as code", and
 * (a planned turn) the engine's calculations with the inputs they used.
 */
class EvidencePanel {
  /**
   * @param {ChatView} chat
   * @param {Array<{manager, filters, rows, total_count, complete, document, variables, code, evidence_id?}>} rows
   * @param {Array<object>} [calculations] a planned turn's `orchestration.calculations`
   */
  constructor(chat, rows, calculations = []) {
    this.chat = chat;
    this.count = rows.length;
    // A planned turn's queries have evidence ids (what calculations and the answer cite).
    const ids = rows.some((row) => row && row.evidence_id);
    const columns = [...(ids ? ["Evidence"] : []), "Manager", "Filters", "Rows", "Total", "Complete", ""];
    const body = h("tbody");
    for (const row of rows) this.addRow(body, row, columns.length, ids);
    const parts = [];
    if (rows.length || !calculations.length) parts.push(`${rows.length} ${rows.length === 1 ? "query" : "queries"}`);
    if (calculations.length) parts.push(plural(calculations.length, "calculation"));
    this.el = h("details", { cls: "gmchat-evidence", testid: "gmchat-evidence" }, [
      h("summary", { text: `Evidence \u00b7 ${parts.join(" \u00b7 ")}` }),
      rows.length
        ? h("div", { cls: "gmchat-table-scroll" }, [
            h("table", { cls: "gmchat-grid" }, [
              h("thead", {}, [h("tr", {}, columns.map((c) => h("th", { text: c, attrs: { scope: "col" } })))]),
              body,
            ]),
          ])
        : null,
      calculations.length
        ? h("div", { cls: "gmchat-calcs" }, [h("div", { cls: "gmchat-label", text: "Calculations" }), ...calculations.map(calculationEntry)])
        : null,
    ]);
  }

  addRow(body, row, span, ids) {
    const filters = maybeJson(row.filters);
    const filterText = filters === null || filters === undefined || filters === "" ? "\u2014" : formatCell(filters);
    const graphql = h("pre", { cls: "gmchat-graphql", testid: "gmchat-graphql", text: graphqlText(row) });
    const detail = h("tr", { cls: "gmchat-graphql-row", attrs: { hidden: true } }, [h("td", { attrs: { colspan: span } }, [graphql])]);
    const toggle = button("Show GraphQL", { cls: "gmchat-link-btn", aria: "Show the GraphQL of this query" });
    toggle.setAttribute("aria-expanded", "false");
    toggle.setAttribute("data-testid", "gmchat-graphql-toggle");
    toggle.addEventListener("click", () => {
      const open = detail.hidden;
      detail.hidden = !open;
      toggle.setAttribute("aria-expanded", String(open));
      toggle.textContent = open ? "Hide GraphQL" : "Show GraphQL";
    });
    const copied = h("span", { cls: "gmchat-copied", attrs: { role: "status" } });
    const copy = button("Copy as code", { cls: "gmchat-link-btn", testid: "gmchat-copy", aria: "Copy this query as Python code" });
    const actions = h("td", { cls: "gmchat-actions" }, [toggle, copy, copied]);
    copy.addEventListener("click", () => this.chat.copyText(String(row.code || ""), copied, actions));
    body.append(
      h("tr", {}, [
        ids ? h("td", { cls: "gmchat-mono", testid: "gmchat-evidence-row-id", text: formatCell(row.evidence_id) }) : null,
        h("td", { text: formatCell(row.manager) }),
        h("td", { cls: "gmchat-mono", text: filterText }),
        h("td", { cls: "gmchat-num", text: formatCell(row.rows) }),
        h("td", { cls: "gmchat-num", text: formatCell(row.total_count) }),
        h("td", { text: row.complete === true ? "yes" : row.complete === false ? "no" : "\u2014" }),
        actions,
      ]),
      detail,
    );
  }
}

/** A small grid: a header row and rows of cell texts (numbers right-aligned). */
function smallGrid(columns, rows, testid) {
  return h("table", { cls: "gmchat-grid gmchat-small-grid", testid }, [
    h("thead", {}, [h("tr", {}, columns.map((c) => h("th", { text: c, attrs: { scope: "col" } })))]),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", { cls: cell.cls || "", text: cell.text }))))),
  ]);
}

/**
 * One calculation of the engine: `task_1:calculation:2 · sum = 117.25 EUR`, the inputs it read
 * (evidence id, path, value; "and N more" for the ones not listed) and its groups.
 */
function calculationEntry(calculation) {
  const evidenceId = formatCell(calculation.evidence_id);
  const inputs = (Array.isArray(calculation.inputs) ? calculation.inputs : []).filter((item) => item && typeof item === "object");
  const groups = (Array.isArray(calculation.groups) ? calculation.groups : []).filter((item) => item && typeof item === "object");
  const hidden = hiddenInputs(calculation);
  const total = Math.max(inputs.length + hidden, inputs.length);
  return h("div", { cls: "gmchat-calc", testid: "gmchat-calculation", attrs: { "data-evidence-id": evidenceId } }, [
    h("div", { cls: "gmchat-calc-head" }, [
      h("code", { cls: "gmchat-evidence-id", text: evidenceId }),
      h("span", { cls: "gmchat-calc-op", testid: "gmchat-calc-op", text: formatCell(calculation.operation) || "calculation" }),
      "=",
      h("strong", { cls: "gmchat-calc-result", testid: "gmchat-calc-result", text: calculationResult(calculation) }),
      calculation.task_id ? h("span", { cls: "gmchat-task-badge", text: formatCell(calculation.task_id) }) : null,
    ]),
    inputs.length
      ? h("div", { cls: "gmchat-label", text: `Inputs (${total})` })
      : h("div", { cls: "gmchat-muted", text: total ? `${plural(total, "input")}, not listed` : "no inputs" }),
    inputs.length
      ? smallGrid(
          ["Evidence", "Path", "Value"],
          inputs.map((item) => [
            { text: formatCell(item.evidence_id), cls: "gmchat-mono" },
            { text: formatPath(item.path), cls: "gmchat-mono" },
            { text: formatCell(item.value), cls: "gmchat-num" },
          ]),
          "gmchat-calc-inputs",
        )
      : null,
    inputs.length && hidden ? h("div", { cls: "gmchat-muted", testid: "gmchat-calc-more", text: `and ${hidden} more` }) : null,
    groups.length ? h("div", { cls: "gmchat-label", text: "Groups" }) : null,
    groups.length
      ? smallGrid(
          ["Group", "Result", "Count"],
          groups.map((group) => [
            { text: formatCell(group.group) },
            { text: calculationResult(group), cls: "gmchat-num" },
            { text: formatCell(group.count), cls: "gmchat-num" },
          ]),
          "gmchat-calc-groups",
        )
      : null,
  ]);
}

/** A planned turn's plan: each task with its state, managers, dependencies and reason. */
class PlanPanel {
  /** @param {object} orchestration the `done` event's `orchestration` */
  constructor(orchestration) {
    const tasks = planTasks(orchestration);
    const reasons = new Map(unresolvedTasks(orchestration).map((item) => [item.taskId, item.reason]));
    const partial = isPartial(orchestration);
    const requests = orchestration.requests && typeof orchestration.requests === "object" ? orchestration.requests : null;
    const requestText = requests
      ? Object.entries(requests)
          .map(([role, n]) => `${role} ${formatCell(n)}`)
          .join(" \u00b7 ")
      : "";
    this.el = h(
      "details",
      {
        cls: "gmchat-plan",
        testid: "gmchat-plan",
        // A partial plan opens: what could not be answered is why the reader looks at it.
        attrs: { "data-status": partial ? "partial" : "complete", open: partial },
      },
      [
        h("summary", {}, [
          h("span", { cls: "gmchat-plan-title", text: "Plan" }),
          h("span", { text: plural(tasks.length, "task") }),
          h("span", { cls: "gmchat-plan-coverage", testid: "gmchat-plan-coverage", text: coverageText(orchestration) }),
          partial ? h("span", { cls: "gmchat-plan-partial", text: "partial" }) : null,
        ]),
        h("ol", { cls: "gmchat-plan-tasks" }, tasks.map((task) => planTask(task, reasons))),
        requestText ? h("div", { cls: "gmchat-muted gmchat-plan-requests", text: `model requests: ${requestText}` }) : null,
      ],
    );
  }
}

function planTask(task, reasons) {
  const taskId = formatCell(task.task_id);
  const state = taskState(task.status);
  const managers = (Array.isArray(task.managers) ? task.managers : []).map(formatCell).filter(Boolean);
  const after = (Array.isArray(task.depends_on) ? task.depends_on : []).map(formatCell).filter(Boolean);
  const reason = task.reason || (state !== "resolved" ? reasons.get(taskId) : "");
  return h("li", { cls: "gmchat-plan-task", testid: "gmchat-plan-task", attrs: { "data-task": taskId, "data-status": state } }, [
    h("div", { cls: "gmchat-plan-task-head" }, [
      h("span", { cls: `gmchat-task-state gmchat-task-${state}`, testid: "gmchat-task-state", text: taskStateText(task.status) }),
      h("code", { cls: "gmchat-task-id", text: taskId }),
      h("span", { cls: "gmchat-task-objective", testid: "gmchat-task-objective", text: formatCell(task.objective) }),
    ]),
    h("div", { cls: "gmchat-task-meta" }, [
      h("span", { text: managers.length ? `managers: ${managers.join(", ")}` : "no manager found" }),
      after.length ? h("span", { text: `after ${after.join(", ")}` }) : null,
    ]),
    reason
      ? h("div", { cls: "gmchat-task-reason", testid: "gmchat-task-reason", text: `${reasonText(reason)} (${formatCell(reason)})` })
      : null,
  ]);
}

/** Above a partial answer: how much of the question it covers and why the rest is missing. */
function partialBanner(orchestration) {
  const missing = unresolvedTasks(orchestration);
  return h("div", { cls: "gmchat-partial", testid: "gmchat-partial", attrs: { role: "note" } }, [
    h("strong", { text: partialText(orchestration) }),
    missing.length
      ? h(
          "ul",
          {},
          missing.map((item) =>
            h("li", {}, [
              h("code", { text: item.taskId }),
              item.objective ? ` ${item.objective}` : "",
              `: ${reasonText(item.reason)}`,
            ]),
          ),
        )
      : null,
  ]);
}

/** The GraphQL document and its variables, as shown by "Show GraphQL". */
function graphqlText(row) {
  const variables = maybeJson(row.variables);
  const doc = String(row.document || "").trim();
  const vars = variables === undefined || variables === null || variables === "" ? "" : prettyJson(variables, 8000);
  return vars ? `${doc}\n\n# variables\n${vars}` : doc;
}

/* ============================================================================================
 * A turn
 * ========================================================================================== */

// How a turn's view shows each event type of core/events.py (tests/test_architecture.py checks
// that every public type has one here).
const EVENT_RENDERERS = {
  text_chunk(turn, event) {
    turn.answerText += String(event.content ?? "");
    turn.chat.markDirty(turn);
  },
  tool_call(turn, event) {
    turn.toolCard(event);
  },
  tool_result(turn, event) {
    const card = turn.tools.get(String(event.id)) || turn.toolCard({ id: event.id, name: event.name, args: {} });
    card.finish(event);
    const box = turn.confirms.get(String(event.id));
    if (box) box.resolved(event.result);
  },
  confirm_mutation(turn, event) {
    turn.confirmBox(event);
  },
  done(turn, event) {
    turn.setUsage(event.usage);
    turn.setOrchestration(event.orchestration);
  },
  error(turn, event) {
    turn.showError(event);
  },
  stream_reset(turn, event) {
    // the model request that was streaming failed and is asked again: its text is withdrawn
    turn.answerText = turn.answerText.slice(0, turn.answerMark);
    turn.chat.markDirty(turn);
    const reason = String(event.reason ?? "").trim();
    turn.note("reset", reason ? `The partial answer was withdrawn: ${reason}.` : "The partial answer was withdrawn.");
  },
  notice(turn, event) {
    turn.note(String(event.kind ?? "notice"), String(event.message ?? ""));
  },
};

/** One question and everything that answers it. */
class TurnView {
  /**
   * @param {ChatView} chat
   * @param {{index: number, question: string}} record
   * @param {boolean} placeholder created from an `events` message before its record was seen
   */
  constructor(chat, record, placeholder = false) {
    this.chat = chat;
    this.index = Number(record.index);
    this.question = String(record.question || "");
    this.placeholder = placeholder;
    this.answerText = "";
    this.answerMark = 0;
    this.lastSequence = -Infinity;
    this.eventCount = 0;
    this.running = true;
    this.finished = false;
    this.tools = new Map();
    this.confirms = new Map();
    this.pendingTables = new Map(); // call_id -> table, before its card exists
    this.tables = new Map(); // key -> TableView
    this.errorShown = false;
    this.evidence = null;
    this.evidenceRows = [];
    this.evidenceKey = "";
    this.orchestration = null;
    this.questionEl = h("div", { cls: "gmchat-question", testid: "gmchat-question", text: this.question });
    this.planSlot = h("div", { cls: "gmchat-plan-slot" });
    this.steps = h("div", { cls: "gmchat-steps" });
    this.bannerSlot = h("div", { cls: "gmchat-banner-slot" });
    this.answer = h("div", { cls: "gmchat-answer gmchat-md gmchat-streaming", testid: "gmchat-answer" });
    this.working = h("div", { cls: "gmchat-working", text: "Working\u2026", attrs: { "aria-hidden": "true" } });
    this.errors = h("div", { cls: "gmchat-turn-errors" });
    this.evidenceSlot = h("div", { cls: "gmchat-evidence-slot" });
    this.usage = h("span", { cls: "gmchat-usage", testid: "gmchat-usage" });
    this.el = h(
      "section",
      { cls: "gmchat-turn gmchat-running", testid: "gmchat-turn", attrs: { "data-index": this.index, "aria-label": `Turn ${this.index + 1}` } },
      [
        this.questionEl,
        h("div", { cls: "gmchat-reply" }, [
          this.planSlot,
          this.steps,
          this.bannerSlot,
          this.answer,
          this.working,
          this.errors,
          this.evidenceSlot,
          h("div", { cls: "gmchat-turn-footer" }, [this.usage]),
        ]),
      ],
    );
  }

  /** Bring the view up to a Turn record (snapshot, turn_start or turn_end). */
  sync(record) {
    if (this.placeholder && record.question) {
      this.question = String(record.question);
      this.questionEl.textContent = this.question;
      this.placeholder = false;
    }
    const events = Array.isArray(record.events) ? record.events : [];
    const sequenced = events.some((e) => e && typeof e.sequence === "number");
    this.applyEvents(sequenced ? events : events.slice(this.eventCount));
    for (const table of Array.isArray(record.tables) ? record.tables : []) this.addTable(table);
    if (record.running === false) this.finish(record);
  }

  applyEvents(events) {
    for (const event of events) {
      if (!event || typeof event !== "object") continue;
      if (typeof event.sequence === "number") {
        if (event.sequence <= this.lastSequence) continue;
        this.lastSequence = event.sequence;
      }
      this.eventCount++;
      this.applyEvent(event);
    }
  }

  applyEvent(event) {
    // One renderer per public event type (EVENT_RENDERERS); a type this view does not know is
    // skipped, as the event contract asks of older clients.
    if (!Object.hasOwn(EVENT_RENDERERS, event.type)) return;
    // where the text of the model request now streaming begins (what a stream_reset withdraws)
    if (event.type !== "text_chunk" && event.type !== "stream_reset") {
      this.answerMark = this.answerText.length;
    }
    EVENT_RENDERERS[event.type](this, event);
  }

  /** A short line among the steps: a retry, a fallback, a withdrawn answer, a guard. */
  note(kind, message) {
    const name = kind.replace(/[^a-z_]/g, "");
    this.steps.append(h("div", { cls: `gmchat-notice gmchat-notice-${name}`, testid: "notice", text: message, attrs: { "data-kind": name } }));
  }

  toolCard(call) {
    const id = String(call.id);
    const existing = this.tools.get(id);
    if (existing) return existing;
    const card = new ToolCard(call);
    this.tools.set(id, card);
    this.steps.append(card.el);
    const table = this.pendingTables.get(id);
    if (table) {
      this.pendingTables.delete(id);
      this.addTable(table);
    }
    return card;
  }

  confirmBox(event) {
    const id = String(event.id);
    if (this.confirms.has(id)) return;
    const box = new ConfirmBox(this.chat, event);
    this.confirms.set(id, box);
    this.steps.append(box.el);
    if (!this.running) box.close("closed");
    else this.chat.startCountdown(box);
  }

  /** A `table` message (or a record's table): attach it to its query card by call_id. */
  addTable(table) {
    if (!table || typeof table !== "object" || table.key === undefined) return;
    const key = String(table.key);
    if (this.tables.has(key)) return;
    const card = this.tools.get(String(table.call_id));
    if (!card && !this.finished) {
      this.pendingTables.set(String(table.call_id), table);
      return;
    }
    const view = new TableView(this.chat, table);
    this.tables.set(key, view);
    this.chat.tables.set(key, view);
    if (card) card.attachTable(view);
    else this.steps.append(view.el);
  }

  showError(error) {
    if (this.errorShown) return;
    this.errorShown = true;
    this.el.classList.add("gmchat-failed");
    this.errors.append(h("div", { cls: "gmchat-error", testid: "gmchat-error", text: errorText(error), attrs: { role: "alert", "data-code": error.code || "" } }));
  }

  setUsage(usage) {
    this.usage.textContent = usageText(usage);
  }

  /** A planned turn's `orchestration`: the plan above the steps, a banner over a partial answer. */
  setOrchestration(orchestration) {
    if (!orchestration || typeof orchestration !== "object" || Array.isArray(orchestration)) return;
    this.orchestration = orchestration;
    const partial = isPartial(orchestration);
    this.el.classList.toggle("gmchat-partial-answer", partial);
    this.planSlot.replaceChildren(new PlanPanel(orchestration).el);
    this.bannerSlot.replaceChildren(...(partial ? [partialBanner(orchestration)] : []));
    if (this.finished) this.renderEvidence();
  }

  /** The evidence panel: the record's queries and the plan's calculations (rebuilt when they change). */
  renderEvidence() {
    const calculations = planCalculations(this.orchestration);
    const key = `${this.evidenceRows.length}:${calculations.length}`;
    if ((!this.evidenceRows.length && !calculations.length) || key === this.evidenceKey) return;
    this.evidenceKey = key;
    this.evidence = new EvidencePanel(this.chat, this.evidenceRows, calculations);
    this.evidenceSlot.replaceChildren(this.evidence.el);
  }

  /** The turn ended: final answer, usage, error and evidence from the record. */
  finish(record) {
    this.running = false;
    this.finished = true;
    this.el.classList.remove("gmchat-running");
    this.answer.classList.remove("gmchat-streaming");
    this.working.remove();
    if (typeof record.answer === "string" && (record.answer || !this.answerText)) {
      if (record.answer !== this.answerText) {
        this.answerText = record.answer;
        this.chat.markDirty(this);
      }
    }
    if (record.usage && typeof record.usage === "object" && !this.usage.textContent) this.setUsage(record.usage);
    if (record.error && typeof record.error === "object") this.showError(record.error);
    for (const card of this.tools.values()) card.abandon();
    for (const box of this.confirms.values()) box.close("closed");
    for (const table of this.pendingTables.values()) this.addTable(table);
    this.pendingTables.clear();
    // The record's orchestration stands in for a `done` event this view did not get.
    if (!this.orchestration) this.setOrchestration(record.orchestration);
    const evidence = Array.isArray(record.evidence) ? record.evidence : [];
    if (evidence.length) this.evidenceRows = evidence;
    this.renderEvidence();
  }

  /** Re-render the answer's markdown (called once per incoming message, not per chunk). */
  renderAnswer() {
    const fragment = this.answer.ownerDocument.createDocumentFragment();
    appendMarkdown(fragment, parseMarkdown(this.answerText));
    this.answer.replaceChildren(fragment);
  }

  dispose() {
    for (const box of this.confirms.values()) this.chat.stopCountdown(box);
    for (const key of this.tables.keys()) this.chat.tables.delete(key);
    this.el.remove();
  }
}

/* ============================================================================================
 * The view
 * ========================================================================================== */

const PIN_SLACK_PX = 32;

/** One rendered view of the chat widget. */
class ChatView {
  /**
   * @param {object} model the anywidget model proxy
   * @param {HTMLElement} el the view's element
   */
  constructor(model, el) {
    this.model = model;
    this.host = el;
    this.turns = new Map(); // index -> TurnView
    this.tables = new Map(); // table key -> TableView
    this.dirty = new Set();
    this.countdowns = new Set();
    this.timers = new Set();
    this.ticker = null;
    this.ready = false;
    this.busy = false;
    this.pinned = true;
    this.conversationId = null;
    this.pendingAsk = null;
    this.lastListRequest = 0;
    this.disposed = false;
    this.records = new Map(); // index -> the turn record as rendered (what a reload restores)
    this.cursor = null; // ViewCursor: what this view has, for a replay
    this.syncs = { snapshot: 0, replay: 0 };
    this.widgetKey = quietly(() => model.get("storage_key"), null);
    this.storage = quietly(() => globalThis.sessionStorage ?? null, null);
    this.restored = loadView(this.storage, this.widgetKey); // rendered when a replay confirms it
    this.build();
    this.onMessage = (msg) => this.receive(msg);
    model.on("msg:custom", this.onMessage);
    const kernel = quietly(() => model.widget_manager?.kernel, null);
    this.connection = new ConnectionWatch(kernel, () => this.send(helloMessage(this.cursor), true));
    this.send(helloMessage(this.restored?.cursor));
  }

  /* ---------- layout ---------- */

  build() {
    this.projectEl = h("span", { cls: "gmchat-project", testid: "gmchat-project" });
    this.providerEl = h("span", { cls: "gmchat-provider", testid: "gmchat-provider", attrs: { title: "Provider" } });
    this.picker = h("select", {
      cls: "gmchat-conversations",
      testid: "gmchat-conversations",
      attrs: { "aria-label": "Conversations" },
      on: {
        change: () => this.openConversation(this.picker.value),
        focus: () => this.requestConversations(),
        pointerdown: () => this.requestConversations(),
      },
    });
    this.log = h("div", {
      cls: "gmchat-log",
      attrs: { role: "log", "aria-live": "polite", "aria-label": "Chat messages", tabindex: "0" },
      on: { scroll: () => this.updatePinned() },
    });
    this.empty = h("div", { cls: "gmchat-empty", text: "Ask a question about the project's data." });
    this.log.append(this.empty);
    this.notice = h("div", { cls: "gmchat-notice" });
    this.input = h("textarea", {
      cls: "gmchat-input",
      testid: "gmchat-input",
      attrs: {
        rows: "2",
        placeholder: "Ask about the data\u2026 (Enter to send, Shift+Enter for a new line)",
        "aria-label": "Message",
        spellcheck: "true",
      },
      on: { keydown: (e) => this.onKeyDown(e), input: () => this.autoGrow() },
    });
    this.sendButton = button("Send", { cls: "gmchat-primary", testid: "gmchat-send", aria: "Send message", onClick: () => this.submit() });
    this.stopButton = button("Stop", { testid: "gmchat-stop", aria: "Stop the running turn", disabled: true, onClick: () => this.send({ type: "stop" }) });
    this.root = h(
      "div",
      { cls: "gmchat", testid: "gmchat-root", attrs: { "data-lm-suppress-shortcuts": "true", "data-busy": "false" } },
      [
        h("div", { cls: "gmchat-header" }, [
          h("div", { cls: "gmchat-title" }, [h("span", { cls: "gmchat-brand", text: "gmchat" }), this.projectEl, this.providerEl]),
          h("div", { cls: "gmchat-controls" }, [
            button("New", { testid: "gmchat-new", aria: "New conversation", onClick: () => this.send({ type: "new_conversation" }) }),
            this.picker,
            button("Clear", { testid: "gmchat-clear", aria: "Clear the conversation", onClick: () => this.send({ type: "clear" }) }),
          ]),
        ]),
        this.log,
        this.notice,
        h("div", { cls: "gmchat-composer" }, [
          this.input,
          h("div", { cls: "gmchat-composer-buttons" }, [this.sendButton, this.stopButton]),
        ]),
      ],
    );
    this.setConversations([], null);
    this.host.append(this.root);
  }

  /* ---------- messages ---------- */

  /** Send a message to the kernel (never throws; `quiet`: no notice when it fails). */
  send(msg, quiet = false) {
    try {
      this.model.send(msg);
    } catch (error) {
      if (quiet) return;
      this.showNotice({ message: `Could not reach the kernel: ${error && error.message ? error.message : error}`, code: "send_failed" });
    }
  }

  /** Dispatch one kernel message; one bad message must not break the view. */
  receive(msg) {
    if (this.disposed || !msg || typeof msg !== "object") return;
    const wasPinned = this.pinned;
    try {
      this.dispatch(msg);
    } catch (error) {
      console.error("gmchat: could not apply message", msg && msg.type, error); // eslint-disable-line no-console
    }
    this.flush();
    if (wasPinned) this.scrollToBottom();
  }

  dispatch(msg) {
    if (msg.type === "snapshot") return this.applySnapshot(msg);
    if (msg.type === "replay") return this.applyReplay(msg);
    if (msg.type === "conversations") return this.setConversations(msg.items, msg.current);
    if (msg.type === "error") return this.kernelError(msg);
    if (msg.type === "frame_bound") return this.tables.get(String(msg.table))?.onFrameBound(msg);
    if (msg.type === "table_page") return this.tables.get(String(msg.table))?.onPage(msg);
    if (!this.ready) return; // the snapshot (or replay) this view asked for will contain it
    recordMessage(this.records, msg);
    switch (msg.type) {
      case "turn_start":
        this.pendingAsk = null;
        this.clearNotice();
        this.syncTurn(msg.turn);
        this.setBusy(true);
        break;
      case "events": {
        const turn = this.turnFor(msg.turn);
        if (turn) turn.applyEvents(Array.isArray(msg.events) ? msg.events : []);
        break;
      }
      case "table":
        this.turnFor(msg.turn)?.addTable(msg.table);
        break;
      case "turn_end":
        if (msg.turn && typeof msg.turn === "object") this.syncTurn({ ...msg.turn, running: false });
        this.setBusy(false);
        // This view saw the whole turn live: it is complete through the turn's cursor.
        this.setCursor(cursorOf(msg.cursor));
        break;
      default:
        break;
    }
    return undefined;
  }

  /** Rebuild from a snapshot, keeping the DOM (and its open cards, pages, inputs) of turns that did not change. */
  applySnapshot(snapshot) {
    if (!this.ready) this.pinned = true;
    this.ready = true;
    this.projectEl.textContent = displayName(snapshot.project);
    this.providerEl.textContent = displayName(snapshot.provider);
    const conversation = snapshot.conversation_id ?? null;
    if (conversation !== this.conversationId) {
      for (const turn of this.turns.values()) turn.dispose();
      this.turns.clear();
      this.conversationId = conversation;
    }
    const records = Array.isArray(snapshot.turns) ? snapshot.turns : [];
    const seen = new Set();
    records.forEach((record, position) => {
      if (!record || typeof record !== "object") return;
      const index = Number.isFinite(Number(record.index)) ? Number(record.index) : position;
      seen.add(index);
      this.syncTurn({ ...record, index });
    });
    for (const [index, turn] of [...this.turns]) {
      if (!seen.has(index)) {
        turn.dispose();
        this.turns.delete(index);
      }
    }
    this.setBusy(Boolean(snapshot.busy));
    this.applyConversations(snapshot.conversations, conversation);
    this.updateEmpty();
    this.records = new Map(records.filter((r) => r && typeof r === "object").map((r, i) => [Number.isFinite(Number(r.index)) ? Number(r.index) : i, r]));
    this.restored = null;
    this.noteSync("snapshot");
    this.setCursor(cursorOf(snapshot.cursor));
  }

  /**
   * Bring the view up to date from a replay: the turns that changed after its cursor, whole
   * (a turn it partly has skips the events it has, by their per-turn `sequence`). A new view
   * (a reload) first renders the turns it saved, which the replay's cursor refers to.
   */
  applyReplay(replay) {
    // Every view of a widget gets every answer: a view takes only a replay of its own cursor
    // (a view that holds another cursor asks with it, and gets its own replay or a snapshot).
    if (!this.ready) {
      const restored = this.restored;
      if (!restored || !replayAnswers(restored.cursor, replay)) return;
      this.restored = null;
      this.pinned = true;
      this.conversationId = restored.cursor.conversationId;
      for (const record of restored.turns) {
        this.records.set(record.index, record);
        this.syncTurn(record);
      }
    } else if (!replayAnswers(this.cursor, replay)) {
      return;
    }
    this.ready = true;
    if (typeof replay.conversation_id === "string") this.conversationId = replay.conversation_id;
    this.projectEl.textContent = displayName(replay.project);
    this.providerEl.textContent = displayName(replay.provider);
    let running = null;
    for (const record of Array.isArray(replay.turns) ? replay.turns : []) {
      if (!record || typeof record !== "object" || !Number.isSafeInteger(record.index)) continue;
      this.records.set(record.index, record);
      const turn = this.syncTurn(record);
      if (record.running) running = turn;
    }
    const pending = replay.pending_confirmation;
    if (running && pending && typeof pending === "object") running.confirmBox(pending);
    this.setBusy(Boolean(replay.busy));
    this.applyConversations(replay.conversations, this.conversationId);
    this.updateEmpty();
    this.noteSync("replay");
    this.setCursor(cursorOf(replay.cursor));
  }

  applyConversations(list, conversation) {
    if (Array.isArray(list)) this.setConversations(list, conversation);
    else if (list && typeof list === "object") this.setConversations(list.items, list.current ?? conversation);
    else this.setConversations([], conversation);
  }

  /** Count how this view was brought up to date (tests and debugging read the attributes). */
  noteSync(kind) {
    this.syncs[kind]++;
    this.root.setAttribute("data-sync", kind);
    this.root.setAttribute(`data-${kind}s`, String(this.syncs[kind]));
  }

  /** Remember what this view has, and save it (with its turns) for a reload of this tab. */
  setCursor(cursor) {
    if (!cursor) return;
    this.cursor = cursor;
    this.root.setAttribute("data-position", String(cursor.position));
    const turns = [...this.records.values()].sort((a, b) => a.index - b.index);
    saveView(this.storage, this.widgetKey, cursor, turns);
  }

  /** Create or update the view of a Turn record. */
  syncTurn(record) {
    if (!record || typeof record !== "object") return null;
    const index = Number(record.index);
    if (!Number.isFinite(index)) return null;
    let turn = this.turns.get(index);
    if (turn && !turn.placeholder && record.question !== undefined && String(record.question) !== turn.question) {
      turn.dispose();
      this.turns.delete(index);
      turn = null;
    }
    if (!turn) {
      turn = new TurnView(this, { ...record, index });
      this.turns.set(index, turn);
      this.insertTurn(turn);
    }
    turn.sync(record);
    return turn;
  }

  /** The turn with `index`; a placeholder when its record has not arrived (it will). */
  turnFor(index) {
    const key = Number(index);
    if (!Number.isFinite(key)) return null;
    let turn = this.turns.get(key);
    if (!turn) {
      turn = new TurnView(this, { index: key, question: "" }, true);
      this.turns.set(key, turn);
      this.insertTurn(turn);
    }
    return turn;
  }

  insertTurn(turn) {
    const after = [...this.turns.values()]
      .filter((t) => t !== turn && t.index > turn.index && t.el.parentNode === this.log)
      .sort((a, b) => a.index - b.index)[0];
    if (after) this.log.insertBefore(turn.el, after.el);
    else this.log.append(turn.el);
    this.updateEmpty();
  }

  updateEmpty() {
    this.empty.hidden = this.turns.size > 0;
  }

  markDirty(turn) {
    this.dirty.add(turn);
  }

  /** Re-render the answers that changed during the last message. */
  flush() {
    for (const turn of this.dirty) turn.renderAnswer();
    this.dirty.clear();
  }

  setBusy(busy) {
    this.busy = busy;
    this.root.setAttribute("data-busy", String(busy));
    this.stopButton.disabled = !busy;
    this.sendButton.disabled = busy;
  }

  kernelError(msg) {
    this.showNotice(msg);
    for (const table of this.tables.values()) table.unblock();
    if (this.pendingAsk !== null && !this.input.value) {
      this.input.value = this.pendingAsk; // the question was refused: give it back
      this.autoGrow();
    }
    this.pendingAsk = null;
  }

  showNotice(error) {
    const dismiss = button("\u00d7", { cls: "gmchat-dismiss", aria: "Dismiss", onClick: () => this.clearNotice() });
    this.notice.replaceChildren(
      h("div", { cls: "gmchat-error", testid: "gmchat-error", attrs: { role: "alert", "data-code": error.code || "" } }, [
        h("span", { text: errorText(error) }),
        dismiss,
      ]),
    );
  }

  clearNotice() {
    this.notice.replaceChildren();
  }

  /* ---------- conversations ---------- */

  setConversations(items, current) {
    const list = Array.isArray(items) ? items : [];
    const currentId = current ?? this.conversationId;
    const options = list
      .filter((item) => item && typeof item === "object" && item.id !== undefined)
      .map((item) => h("option", { text: conversationLabel(item), attrs: { value: String(item.id) } }));
    const known = list.some((item) => item && String(item.id) === String(currentId));
    if (currentId !== null && currentId !== undefined && !known) {
      options.unshift(h("option", { text: "Current conversation (new)", attrs: { value: String(currentId) } }));
    }
    if (currentId === null || currentId === undefined || !options.length) {
      options.unshift(h("option", { text: options.length ? "Open a conversation\u2026" : "No conversations yet", attrs: { value: "" } }));
    }
    this.picker.replaceChildren(...options);
    this.picker.value = currentId === null || currentId === undefined ? "" : String(currentId);
  }

  requestConversations() {
    const now = Date.now();
    if (now - this.lastListRequest < 2000) return;
    this.lastListRequest = now;
    this.send({ type: "list_conversations" });
  }

  openConversation(id) {
    if (!id || id === String(this.conversationId)) return;
    this.send({ type: "open_conversation", conversation_id: id });
  }

  /* ---------- composing ---------- */

  onKeyDown(event) {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    this.submit();
  }

  submit() {
    const text = this.input.value.trim();
    if (!text || this.busy) return;
    this.pendingAsk = this.input.value;
    this.input.value = "";
    this.autoGrow();
    this.pinned = true;
    this.send({ type: "ask", text });
  }

  autoGrow() {
    this.input.style.height = "auto";
    const height = Math.min(this.input.scrollHeight, 200);
    if (height > 0) this.input.style.height = `${height}px`;
  }

  /* ---------- scrolling ---------- */

  updatePinned() {
    const log = this.log;
    this.pinned = log.scrollHeight - log.scrollTop - log.clientHeight < PIN_SLACK_PX;
  }

  scrollToBottom() {
    this.log.scrollTop = this.log.scrollHeight;
    this.pinned = true;
  }

  /* ---------- timers ---------- */

  startCountdown(box) {
    if (!box.tick(Date.now())) return;
    this.countdowns.add(box);
    if (this.ticker === null) {
      this.ticker = setInterval(() => {
        const now = Date.now();
        for (const b of [...this.countdowns]) if (!b.tick(now)) this.countdowns.delete(b);
        if (!this.countdowns.size) this.stopTicker();
      }, 250);
    }
  }

  stopCountdown(box) {
    this.countdowns.delete(box);
    if (!this.countdowns.size) this.stopTicker();
  }

  stopTicker() {
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
  }

  later(fn, ms) {
    if (this.disposed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.disposed) fn();
    }, ms);
    this.timers.add(timer);
  }

  /**
   * Copy text to the clipboard: `navigator.clipboard`, else a selected textarea with
   * `execCommand("copy")`; the textarea stays visible (selected) when both fail.
   * @param {string} text
   * @param {HTMLElement} status where "copied" shows
   * @param {HTMLElement} fallbackParent where a fallback textarea goes
   */
  async copyText(text, status, fallbackParent) {
    const done = (message) => {
      status.textContent = message;
      this.later(() => {
        if (status.textContent === message) status.textContent = "";
      }, 2000);
    };
    try {
      if (navigator.clipboard && typeof navigator.clipboard.writeText === "function") {
        await navigator.clipboard.writeText(text);
        done("copied");
        return;
      }
    } catch {
      // denied (no focus, no permission, insecure context): fall back below
    }
    const area = h("textarea", { cls: "gmchat-copy-area", attrs: { readonly: true, "aria-label": "Code to copy", rows: "6" } });
    area.value = text;
    const parent = fallbackParent && fallbackParent.isConnected ? fallbackParent : this.notice;
    parent.querySelector(".gmchat-copy-area")?.remove();
    parent.append(area);
    area.focus();
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    if (ok) {
      area.remove();
      done("copied");
    } else {
      status.textContent = "select and copy (Ctrl+C)";
    }
  }

  /** Remove listeners and timers; take the view's DOM out of the element. */
  dispose() {
    this.disposed = true;
    this.connection.dispose();
    try {
      this.model.off("msg:custom", this.onMessage);
    } catch {
      // the model proxy may already be gone
    }
    this.stopTicker();
    this.countdowns.clear();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.root.remove();
  }
}

/* ============================================================================================
 * anywidget entry point
 * ========================================================================================== */

/**
 * Render one view. Sends `hello` (with its saved cursor after a reload); the kernel answers with
 * a `replay` or a `snapshot`.
 * @param {{model: object, el: HTMLElement}} context
 * @returns {() => void} cleanup: removes listeners and timers
 */
function render({ model, el }) {
  const view = new ChatView(model, el);
  return () => view.dispose();
}

export default { render };
