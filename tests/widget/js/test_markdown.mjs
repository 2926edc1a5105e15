// Tests of the chat widget's pure front-end functions (markdown, sanitisation, formatting).
// Run: node tests/widget/js/test_markdown.mjs   (node >= 18, no npm packages; exit code 1 on failure)

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const CHAT_JS = new URL("../../../gmchat_nb/widget/static/chat.js", import.meta.url);
const chat = await import(CHAT_JS.href);
const {
  appendMarkdown,
  calculationResult,
  compareCells,
  conversationLabel,
  coverageText,
  displayName,
  errorText,
  formatCell,
  formatDuration,
  formatPath,
  hiddenInputs,
  isPartial,
  partialText,
  planCalculations,
  planTasks,
  reasonText,
  taskState,
  taskStateText,
  unresolvedTasks,
  parseInline,
  parseMarkdown,
  querySummary,
  safeHref,
  sortRows,
  summarizeArgs,
  toolOutcome,
  treeToHtml,
  usageText,
} = chat;

const md = (text) => treeToHtml(parseMarkdown(text));

const TAGS = new Set([
  "p", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "ul", "ol", "li",
  "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "a", "span",
]);

/** Every element in a tree: allowed tag, and links only to http(s)/mailto. */
function assertSafeTree(nodes) {
  for (const n of nodes) {
    if (typeof n === "string") continue;
    assert.ok(TAGS.has(n.tag), `unexpected tag ${n.tag}`);
    for (const key of Object.keys(n.attrs || {})) {
      assert.ok(["href", "rel", "target", "title", "start", "class", "align"].includes(key), `attribute ${key}`);
    }
    if (n.tag === "span") {
      // only the host shown after a link (linkHost), as text
      assert.deepEqual(n.attrs, { class: "gmchat-link-host" });
      assert.ok((n.children || []).every((child) => typeof child === "string"));
    }
    if (n.tag === "a") {
      assert.match(n.attrs.href, /^(https?:\/\/|mailto:)/);
      assert.equal(n.attrs.rel, "noopener noreferrer");
      assert.equal(n.attrs.target, "_blank");
    }
    assertSafeTree(n.children || []);
  }
}

/** The text of a tree (what a reader sees). */
function textOf(nodes) {
  return nodes.map((n) => (typeof n === "string" ? n : textOf(n.children || []))).join("");
}

function findAll(nodes, tag, out = []) {
  for (const n of nodes) {
    if (typeof n === "string") continue;
    if (n.tag === tag) out.push(n);
    findAll(n.children || [], tag, out);
  }
  return out;
}

// ------------------------------------------------------------------ the module itself

test("the ESM imports nothing and never writes HTML strings into the DOM", () => {
  const source = readFileSync(CHAT_JS, "utf8");
  assert.doesNotMatch(source, /^\s*import[\s{*"']/m);
  assert.doesNotMatch(source, /\bimport\s*\(/);
  assert.doesNotMatch(source, /\brequire\s*\(/);
  assert.doesNotMatch(source, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\s*\(|new Function/);
  assert.match(source, /export default \{ render \}/);
  assert.equal(typeof chat.default.render, "function");
});

// ------------------------------------------------------------------ injection attempts

test("raw HTML renders as literal text", () => {
  for (const attack of [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '<a href="javascript:alert(1)">x</a>',
    "<iframe src=https://evil.example></iframe>",
    "<svg onload=alert(1)>",
    "**<b>bold</b>**",
  ]) {
    const tree = parseMarkdown(attack);
    assertSafeTree(tree);
    assert.ok(textOf(tree).includes("<"), attack);
    const html = md(attack);
    assert.doesNotMatch(html, /<(img|script|iframe|svg|b)\b/i, html);
  }
  assert.equal(md("<script>alert(1)</script>"), "<p>&#60;script&#62;alert(1)&#60;/script&#62;</p>");
  assert.equal(textOf(parseMarkdown("<img src=x onerror=alert(1)>")), "<img src=x onerror=alert(1)>");
});

test("javascript: and other unsafe links become plain text", () => {
  for (const attack of [
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x]( javascript:alert(1))",
    "[x](<javascript:alert(1)>)",
    "[x](java&#x73;cript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "[x](vbscript:msgbox(1))",
    "[x](file:///etc/passwd)",
    "[x](//evil.example/path)",
    "[x](/relative/path)",
    "[x](#anchor)",
    "[x](\u0001javascript:alert(1))",
  ]) {
    const tree = parseMarkdown(attack);
    assertSafeTree(tree);
    assert.equal(findAll(tree, "a").length, 0, attack);
    assert.equal(textOf(tree), "x", attack);
  }
  for (const attack of ["<javascript:alert(1)>", "![img](javascript:alert(1))", "[**bold**](javascript:x)"]) {
    const tree = parseMarkdown(attack);
    assertSafeTree(tree);
    assert.equal(findAll(tree, "a").length, 0, attack);
  }
  assert.equal(md("[**bold**](javascript:x)"), "<p><strong>bold</strong></p>");
});

test("HTML in table cells is text", () => {
  const tree = parseMarkdown("| a | b |\n|---|---|\n| <img src=x onerror=alert(1)> | <script>x</script> |\n| [y](javascript:z) | ok |");
  assertSafeTree(tree);
  const cells = findAll(tree, "td").map((td) => textOf(td.children));
  assert.deepEqual(cells, ["<img src=x onerror=alert(1)>", "<script>x</script>", "y", "ok"]);
  assert.equal(findAll(tree, "a").length, 0);
});

test("safeHref keeps only absolute http(s) and mailto URLs", () => {
  assert.equal(safeHref("https://example.com/a?b=1#c"), "https://example.com/a?b=1#c");
  assert.equal(safeHref("http://example.com"), "http://example.com/");
  assert.equal(safeHref("HTTPS://EXAMPLE.com/x"), "https://example.com/x");
  assert.equal(safeHref("mailto:someone@example.com"), "mailto:someone@example.com");
  for (const bad of [
    "javascript:alert(1)", "java\nscript:alert(1)", "java\tscript:alert(1)", " javascript:alert(1)",
    "\u0000javascript:alert(1)", "data:text/html,x", "vbscript:x", "ftp://example.com", "//example.com",
    "/path", "relative", "", "https:", "https:///x", "http:\\\\evil", null, undefined, 42,
  ]) {
    assert.equal(safeHref(bad), null, String(bad));
  }
});

// ------------------------------------------------------------------ links

test("links, autolinks and bare URLs", () => {
  assert.equal(
    md("[docs](https://example.com/a_(b) \"Title\")"),
    '<p><a href="https://example.com/a_(b)" rel="noopener noreferrer" target="_blank" title="Title">docs</a>' +
      '<span class="gmchat-link-host"> (example.com)</span></p>',
  );
  assert.equal(
    md("<https://example.com> and <me@example.com>"),
    '<p><a href="https://example.com/" rel="noopener noreferrer" target="_blank">https://example.com</a> and ' +
      '<a href="mailto:me@example.com" rel="noopener noreferrer" target="_blank">me@example.com</a></p>',
  );
  assert.equal(
    md("See https://example.com/x. Or (http://example.org/y)!"),
    '<p>See <a href="https://example.com/x" rel="noopener noreferrer" target="_blank">https://example.com/x</a>. ' +
      'Or (<a href="http://example.org/y" rel="noopener noreferrer" target="_blank">http://example.org/y</a>)!</p>',
  );
  assert.equal(
    md("[a [nested] label](https://x.org)"),
    '<p><a href="https://x.org/" rel="noopener noreferrer" target="_blank">a [nested] label</a><span class="gmchat-link-host"> (x.org)</span></p>',
  );
  assert.equal(md("[no link] here"), "<p>[no link] here</p>");
  assert.equal(
    md("![chart](https://x.org/c.png)"),
    '<p><a href="https://x.org/c.png" rel="noopener noreferrer" target="_blank">[image: chart]</a><span class="gmchat-link-host"> (x.org)</span></p>',
  );
  assert.equal(md("`https://x.org` stays code"), "<p><code>https://x.org</code> stays code</p>");
});

// ------------------------------------------------------------------ inline

test("inline formatting", () => {
  assert.equal(md("**bold** *it* _it_ __b__ ~~gone~~ `co*de*`"), "<p><strong>bold</strong> <em>it</em> <em>it</em> <strong>b</strong> <del>gone</del> <code>co*de*</code></p>");
  assert.equal(md("***both***"), "<p><strong><em>both</em></strong></p>");
  assert.equal(md("*a **b** c*"), "<p><em>a <strong>b</strong> c</em></p>");
  assert.equal(md("snake_case_name and 2 * 3 * 4"), "<p>snake_case_name and 2 * 3 * 4</p>");
  assert.equal(md("file_name_ and __init__.py"), "<p>file_name_ and <strong>init</strong>.py</p>");
  assert.equal(md("x_y_ z"), "<p>x_y_ z</p>");
  assert.equal(md("**not closed"), "<p>**not closed</p>");
  assert.equal(md("\\*literal\\* and \\<tag>"), "<p>*literal* and &#60;tag&#62;</p>");
  assert.equal(md("`` a ` b ``"), "<p><code>a ` b</code></p>");
  assert.equal(md("a  \nb\\\nc\nd"), "<p>a<br>b<br>c\nd</p>");
  assert.deepEqual(parseInline("plain"), ["plain"]);
});

// ------------------------------------------------------------------ blocks

test("headings, paragraphs, rules and quotes", () => {
  assert.equal(md("# One\n## Two ##\n###### Six"), "<h1>One</h1><h2>Two</h2><h6>Six</h6>");
  assert.equal(md("Title\n===\n\nSub\n---"), "<h1>Title</h1><h2>Sub</h2>");
  assert.equal(md("#hashtag"), "<p>#hashtag</p>");
  assert.equal(md("one\ntwo\n\nthree"), "<p>one\ntwo</p><p>three</p>");
  assert.equal(md("a\n\n---\n\nb"), "<p>a</p><hr><p>b</p>");
  assert.equal(md("> quoted **text**\n> more"), "<blockquote><p>quoted <strong>text</strong>\nmore</p></blockquote>");
});

test("bullet, numbered, nested, loose and task lists", () => {
  assert.equal(md("- a\n- b\n* c"), "<ul><li>a</li><li>b</li><li>c</li></ul>");
  assert.equal(md("1. one\n2. two"), "<ol><li>one</li><li>two</li></ol>");
  assert.equal(md("3. three\n4. four"), '<ol start="3"><li>three</li><li>four</li></ol>');
  assert.equal(md("- a\n  - b\n    - c\n- d"), "<ul><li>a<ul><li>b<ul><li>c</li></ul></li></ul></li><li>d</li></ul>");
  assert.equal(md("1. First\n   - x\n   - y\n2. Second"), "<ol><li>First<ul><li>x</li><li>y</li></ul></li><li>Second</li></ol>");
  assert.equal(md("1. **A**: text\n\n2. **B**: more"), "<ol><li><p><strong>A</strong>: text</p></li><li><p><strong>B</strong>: more</p></li></ol>");
  assert.equal(md("Results:\n- a\n- b\n\nAfter."), "<p>Results:</p><ul><li>a</li><li>b</li></ul><p>After.</p>");
  assert.equal(md("- item\ncontinued lazily"), "<ul><li>item\ncontinued lazily</li></ul>");
  assert.equal(md("- [ ] todo\n- [x] done"), "<ul><li>\u2610 todo</li><li>\u2611 done</li></ul>");
  assert.equal(md("- a\n\n1. b"), "<ul><li>a</li></ul><ol><li>b</li></ol>");
  assert.equal(md("-5 degrees and 1.5 million"), "<p>-5 degrees and 1.5 million</p>");
  assert.equal(md("- code:\n  ```\n  x = 1\n  ```"), "<ul><li>code:<pre><code>x = 1</code></pre></li></ul>");
});

test("GitHub tables", () => {
  assert.equal(
    md("| Part | Qty | Note |\n|:-----|----:|:----:|\n| Bolt | 3 | `a|b` |\n| Nut \\| M4 | 10 |"),
    '<table><thead><tr><th align="left">Part</th><th align="right">Qty</th><th align="center">Note</th></tr></thead>' +
      '<tbody><tr><td align="left">Bolt</td><td align="right">3</td><td align="center"><code>a|b</code></td></tr>' +
      '<tr><td align="left">Nut | M4</td><td align="right">10</td><td align="center"></td></tr></tbody></table>',
  );
  assert.equal(md("a | b\n--|--\n1 | **2**"), "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td><strong>2</strong></td></tr></tbody></table>");
  assert.equal(md("Intro:\n| a |\n|---|\n| 1 |"), "<p>Intro:</p><table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>");
  // header and delimiter must agree; a half-streamed delimiter is still a paragraph
  assert.equal(md("| a | b |\n|---"), "<p>| a | b |\n|---</p>");
});

test("fenced code blocks", () => {
  assert.equal(md("```python\nprint('<b>')\n\n  x = 1\n```"), '<pre><code class="language-python">print(&#39;&#60;b&#62;&#39;)\n\n  x = 1</code></pre>');
  assert.equal(md("~~~\n```\n~~~"), "<pre><code>```</code></pre>");
  assert.equal(md("````\n```\ninner\n```\n````"), "<pre><code>```\ninner\n```</code></pre>");
  assert.equal(md("```js\nunclosed while streaming"), '<pre><code class="language-js">unclosed while streaming</code></pre>');
  assert.equal(md("```c\"><script>\nx\n```"), '<pre><code class="language-c">x</code></pre>');
  assert.equal(md("```\n**not bold** [x](https://a.b)\n```"), "<pre><code>**not bold** [x](https://a.b)</code></pre>");
  assert.equal(md("text ```inline``` text"), "<p>text <code>inline</code> text</p>");
});

test("every prefix of a streamed answer parses safely", () => {
  const answer = [
    "## Cobalt parts\n\nThe **3 projects** that use *cobalt* parts:\n\n",
    "| Project | Parts |\n|---|---:|\n| Apollo | 4 |\n| <b>Zeus</b> | 2 |\n\n",
    "1. First\n   - detail `code`\n2. Second\n\n```sql\nSELECT * FROM t;\n```\n",
    "See [docs](https://example.com/docs) or [bad](javascript:alert(1)).\n\n> Note: ~~old~~ new",
  ].join("");
  for (let i = 0; i <= answer.length; i++) assertSafeTree(parseMarkdown(answer.slice(0, i)));
});

test("pathological input finishes quickly", () => {
  const started = Date.now();
  for (const text of [
    ">".repeat(5000) + " deep",
    "- ".repeat(2000) + "x",
    "[".repeat(3000),
    "*".repeat(3000) + "a",
    "_a ".repeat(2000),
    "`".repeat(3000),
    "| a |\n|---|\n" + "| x |\n".repeat(3000),
    "**a *b ".repeat(1000),
  ]) {
    assertSafeTree(parseMarkdown(text));
  }
  assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
});

test("non-strings and empty input", () => {
  assert.deepEqual(parseMarkdown(""), []);
  assert.deepEqual(parseMarkdown(undefined), []);
  assert.deepEqual(parseMarkdown(null), []);
  assert.equal(md("\r\n\r\nWindows\r\nlines\r\n"), "<p>Windows\nlines</p>");
});

// ------------------------------------------------------------------ the DOM layer (with a tiny fake DOM)

class FakeNode {
  constructor(doc, tag, text) {
    this.ownerDocument = doc;
    this.tag = tag;
    this.text = text;
    this.attributes = {};
    this.children = [];
    this.style = {};
    this.className = "";
  }
  appendChild(child) {
    this.children.push(child);
    return child;
  }
  setAttribute(name, value) {
    this.attributes[name] = String(value);
  }
}

class FakeDocument {
  createElement(tag) {
    return new FakeNode(this, tag);
  }
  createTextNode(text) {
    return new FakeNode(this, "#text", text);
  }
}

function walk(node, visit) {
  visit(node);
  for (const child of node.children) walk(child, visit);
}

test("appendMarkdown builds only allow-listed elements and re-checks hrefs", () => {
  const doc = new FakeDocument();
  const root = doc.createElement("div");
  // a hostile tree, as if the parser had a bug: the DOM layer must still be safe
  appendMarkdown(root, [
    { tag: "script", children: ["alert(1)"] },
    { tag: "img", attrs: { src: "x", onerror: "alert(1)" }, children: [] },
    { tag: "a", attrs: { href: "javascript:alert(1)" }, children: ["click"] },
    { tag: "a", attrs: { href: "https://ok.example/", onclick: "x" }, children: ["ok"] },
    { tag: "p", attrs: { onclick: "x", style: "color:red", class: "evil" }, children: ["<b>text</b>"] },
    { tag: "code", attrs: { class: 'language-x" onload="y' }, children: [] },
    { tag: "ol", attrs: { start: "1 onclick=x" }, children: [] },
    { tag: "td", attrs: { align: "expression(alert(1))" }, children: [] },
  ]);
  const tags = [];
  walk(root, (n) => tags.push(n.tag));
  assert.deepEqual(tags, ["div", "#text", "#text", "a", "#text", "p", "#text", "code", "ol", "td"]);
  const link = root.children[2];
  assert.deepEqual(link.attributes, { href: "https://ok.example/", rel: "noopener noreferrer", target: "_blank" });
  assert.equal(root.children[0].text, "alert(1)");
  assert.equal(root.children[1].text, "click");
  assert.deepEqual(root.children[3].attributes, {});
  assert.equal(root.children[3].children[0].text, "<b>text</b>");
  assert.equal(root.children[4].className, "");
  assert.deepEqual(root.children[5].attributes, {});
  assert.deepEqual(root.children[6].style, {});
});

test("appendMarkdown renders a parsed table with alignment", () => {
  const doc = new FakeDocument();
  const root = doc.createElement("div");
  appendMarkdown(root, parseMarkdown("| a |\n|--:|\n| 1 |"));
  const cells = [];
  walk(root, (n) => n.tag === "td" && cells.push(n));
  assert.equal(cells.length, 1);
  assert.equal(cells[0].style.textAlign, "right");
});

// ------------------------------------------------------------------ formatting helpers

test("summarizeArgs", () => {
  assert.equal(
    summarizeArgs("query", { manager: "Part", fields: ["name", { material: ["name"] }], filters: { name__icontains: "bolt" }, limit: 10 }),
    'Part \u00b7 filters {"name__icontains":"bolt"} \u00b7 limit 10',
  );
  assert.equal(summarizeArgs("query_part", { fields: ["name"], order_by: ["-name"] }), 'order_by ["-name"]');
  assert.equal(summarizeArgs("search_managers", { query: "cobalt parts", limit: 5 }), '"cobalt parts" \u00b7 limit 5');
  assert.equal(summarizeArgs("find_path", { from_manager: "Part", to_manager: "Project" }), "Part \u2192 Project");
  assert.equal(summarizeArgs("mutate", { mutation: "createPart", input: { name: "Bolt" } }), 'createPart \u00b7 input {"name":"Bolt"}');
  assert.equal(summarizeArgs("get_manager_schema", { manager: "Part" }), "Part");
  assert.equal(summarizeArgs("other", {}), "");
  assert.equal(summarizeArgs("other", null), "");
  assert.ok(summarizeArgs("query", { manager: "Part", filters: { x: "y".repeat(500) } }).length <= 160);
});

test("formatCell shows nested values as compact text", () => {
  assert.equal(formatCell(null), "");
  assert.equal(formatCell(undefined), "");
  assert.equal(formatCell("<b>x</b>"), "<b>x</b>");
  assert.equal(formatCell(3.5), "3.5");
  assert.equal(formatCell(false), "false");
  assert.equal(formatCell({ name: "Steel", tags: [1, 2] }), '{"name":"Steel","tags":[1,2]}');
  assert.equal(formatCell([{ a: 1 }, { a: 2 }]), '[{"a":1},{"a":2}]');
  assert.ok(formatCell({ long: "x".repeat(1000) }).length <= 300);
});

test("sortRows sorts list and object rows, empty values last", () => {
  const columns = ["name", "qty"];
  const rows = [["b", 10], ["a", null], ["c", 2], ["d", 33]];
  assert.deepEqual(sortRows(rows, columns, { column: "qty", descending: false }).map((r) => r[0]), ["c", "b", "d", "a"]);
  assert.deepEqual(sortRows(rows, columns, { column: "qty", descending: true }).map((r) => r[0]), ["d", "b", "c", "a"]);
  assert.deepEqual(sortRows(rows, columns, { column: "name", descending: true }).map((r) => r[0]), ["d", "c", "b", "a"]);
  const objects = [{ name: "Part 10" }, { name: "Part 9" }, { name: "part 1" }];
  assert.deepEqual(sortRows(objects, ["name"], { column: "name", descending: false }).map((r) => r.name), ["part 1", "Part 9", "Part 10"]);
  assert.deepEqual(sortRows(rows, columns, { column: "missing", descending: false }), rows);
  assert.ok(compareCells(1, 2) < 0 && compareCells("", 1) > 0 && compareCells(null, null) === 0);
});

test("errors, usage, durations and results", () => {
  assert.equal(errorText({ message: "Chat rate limit exceeded. Try again later.", code: "rate_limited", retry_after_seconds: 12 }),
    "Chat rate limit exceeded. Try again later. (rate_limited) \u2014 retry in 12 s");
  assert.equal(errorText({ message: "Chat rate limit exceeded. Try again later.", code: "rate_limited" }), "Chat rate limit exceeded. Try again later. (rate_limited)");
  assert.equal(errorText({ message: "The provider could not complete the request.", code: "provider_failed", retry_after_seconds: 3 }),
    "The provider could not complete the request. (provider_failed)");
  assert.equal(usageText({ input_tokens: 1200, output_tokens: 85 }), "1200 in \u00b7 85 out tokens");
  assert.equal(usageText(null), "");
  // A tool_result's duration_ms: microseconds under 1 ms, milliseconds under 1 s, seconds above.
  assert.equal(formatDuration(0.0412), "41 \u00b5s");
  assert.equal(formatDuration(0.0002), "<1 \u00b5s");
  assert.equal(formatDuration(0.9996), "1.0 ms");
  assert.equal(formatDuration(3.42), "3.4 ms");
  assert.equal(formatDuration(340.4), "340 ms");
  assert.equal(formatDuration(999.7), "1.0 s");
  assert.equal(formatDuration(2400), "2.4 s");
  assert.equal(formatDuration(65000), "1 min 5 s");
  for (const missing of [NaN, undefined, null, "12", -1]) assert.equal(formatDuration(missing), "");
  assert.deepEqual(toolOutcome({ status: "error", code: "unknown_manager", message: "No such manager." }),
    { status: "error", code: "unknown_manager", message: "No such manager." });
  assert.deepEqual(toolOutcome({ data: [] }), { status: "ok" });
  assert.deepEqual(toolOutcome({ status: "cancelled", reason: "user_rejected" }), { status: "cancelled", reason: "user_rejected" });
  assert.equal(querySummary({ total_count: 8, has_more: false, complete: true, rows: 8 }), "8 of 8 rows \u00b7 complete");
  assert.equal(querySummary({ total_count: 90, complete: false }, { rows: 50, columns: ["name"] }), "50 of 90 rows \u00b7 more available");
  assert.equal(querySummary({ data: [1, 2], total_count: 40, has_more: true, complete: false }), "2 of 40 rows \u00b7 more available");
  assert.equal(querySummary({ data: [1, 2], total_count: 2, has_more: false, complete: true }), "2 of 2 rows \u00b7 complete");
  assert.equal(querySummary({ status: "error" }), "");
});

test("names and conversation labels", () => {
  assert.equal(displayName("openai:gpt-4.1-mini"), "openai:gpt-4.1-mini");
  assert.equal(displayName({ name: "demo" }), "demo");
  assert.equal(displayName(null), "");
  const label = conversationLabel({ id: "c1", title: "Cobalt", updated_at: "2024-11-29T10:00:00", messages: 1 });
  assert.equal(label, "Cobalt \u00b7 1 message \u00b7 2024-11-29 10:00");
  assert.equal(conversationLabel({ id: "c2", title: "", messages: 3 }), "Untitled conversation \u00b7 3 messages");
});

test("planned turns: task states, reasons, coverage and the partial banner", () => {
  assert.equal(taskState("resolved"), "resolved");
  assert.equal(taskState("budget_exhausted"), "budget_exhausted");
  for (const odd of ["constructor", "__proto__", "<b>", null, 3]) assert.equal(taskState(odd), "unknown");
  assert.equal(taskStateText("resolved"), "\u2713 resolved");
  assert.equal(taskStateText("blocked"), "\u2715 blocked");
  assert.equal(taskStateText("budget_exhausted"), "\u29d7 budget exhausted");
  assert.equal(taskStateText("exploded"), "? exploded");
  assert.equal(reasonText("manager_unresolved"), "no matching data found");
  assert.equal(reasonText("dependency_blocked"), "a task it depends on failed");
  assert.equal(reasonText("budget_exhausted"), "reached its execution limit");
  assert.equal(reasonText("deadline_exceeded"), "reached its time limit");
  assert.equal(reasonText("provider_failed"), "the model failed");
  for (const odd of ["toString", undefined, "new_reason"]) assert.equal(reasonText(odd), "could not be completed");
  const plan = {
    status: "partial",
    coverage: { resolved: 1, total: 2 },
    unresolved: [{ task_id: "task_2", reason: "manager_unresolved" }, "junk"],
    tasks: [
      { task_id: "task_1", objective: "Parts made of steel", status: "resolved" },
      { task_id: "task_2", objective: "Vehicles", status: "blocked", reason: "manager_unresolved" },
      { task_id: "task_3", objective: "Owners", status: "budget_exhausted", reason: "budget_exhausted" },
      null,
      ["not", "a", "task"],
    ],
  };
  assert.equal(planTasks(plan).length, 3);
  assert.equal(coverageText(plan), "1 of 2 tasks resolved");
  assert.equal(coverageText({ tasks: [{ status: "resolved" }] }), "1 of 1 task resolved");
  assert.equal(partialText(plan), "Partial answer: 1 of 2 parts of the question could be answered.");
  assert.ok(isPartial(plan) && !isPartial({ status: "complete" }) && !isPartial(null));
  // The listed ones first, then unresolved tasks the list left out.
  assert.deepEqual(unresolvedTasks(plan), [
    { taskId: "task_2", reason: "manager_unresolved", objective: "Vehicles" },
    { taskId: "task_3", reason: "budget_exhausted", objective: "Owners" },
  ]);
  assert.deepEqual(unresolvedTasks(null), []);
});

test("planned turns: calculations, their paths and their hidden inputs", () => {
  assert.equal(formatPath(["data", 0, "unitPrice"]), "data[0].unitPrice");
  assert.equal(formatPath(["data", 3, "material", "name"]), "data[3].material.name");
  assert.equal(formatPath("data.0"), "data.0");
  assert.equal(formatPath([]), "");
  const calculation = {
    evidence_id: "task_1:calculation:2",
    operation: "sum",
    text: "1234.50 EUR",
    value: "1234.5",
    unit: "EUR",
    inputs: [{ evidence_id: "task_1:query:1", path: ["data", 0, "unitPrice"], value: "12.5 EUR" }],
    input_count: 7,
  };
  assert.equal(calculationResult(calculation), "1234.50 EUR");
  assert.equal(calculationResult({ value: "1234.5", unit: "EUR" }), "1234.5 EUR");
  assert.equal(calculationResult({ value: 3 }), "3");
  assert.equal(hiddenInputs(calculation), 6);
  assert.equal(hiddenInputs({ inputs: [1, 2], input_count: 2 }), 0);
  assert.equal(hiddenInputs({ input_count: "x" }), 0);
  assert.deepEqual(planCalculations({ calculations: [calculation, null, "x"] }), [calculation]);
  assert.deepEqual(planCalculations(undefined), []);
});
