// Tests of the chat widget's front end, pure parts: markdown rendering and its sanitisation (in a
// jsdom document: the rendered, sanitized DOM is what is checked) and the formatting helpers.
// Run: node tests/widget/js/test_markdown.mjs   (node >= 20, after `npm ci` in frontend/; exit
// code 1 on failure). It imports the built module, gmchat_nb/widget/static/chat.js.

import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { test } from "node:test";

import { CHAT_JS, newWindow } from "./dom.mjs";

const chat = await import(CHAT_JS.href);
const {
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
  markdownFragment,
  partialText,
  planCalculations,
  planTasks,
  reasonText,
  renderMarkdown,
  sanitizedFragment,
  taskState,
  taskStateText,
  unresolvedTasks,
  querySummary,
  safeHref,
  sortRows,
  summarizeArgs,
  toolOutcome,
  usageText,
} = chat;

const window = newWindow();
const document = window.document;

/** The rendered answer, in an element of the page's document. */
function render(text) {
  const el = document.createElement("div");
  renderMarkdown(el, text);
  return el;
}

/** The rendered answer serialised (read back for the assertions; the module never writes HTML). */
const md = (text) => render(text).innerHTML;

const TAGS = new Set([
  "p", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "ul", "ol", "li",
  "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "a", "span",
]);

/** Every element: an allowed tag with allowed attributes; links only to http(s)/mailto. */
function assertSafeDom(root) {
  for (const el of root.querySelectorAll("*")) {
    const tag = el.localName;
    assert.ok(TAGS.has(tag), `unexpected tag ${tag}`);
    const names = el.getAttributeNames();
    if (tag === "a") {
      assert.match(el.getAttribute("href"), /^(https?:\/\/|mailto:)/);
      assert.equal(el.getAttribute("rel"), "noopener noreferrer");
      assert.equal(el.getAttribute("target"), "_blank");
      for (const name of names) assert.ok(["href", "rel", "target", "title"].includes(name), `a[${name}]`);
    } else if (tag === "span") {
      // only the host shown after a link (linkHost), as text
      assert.deepEqual(names.sort(), ["class", "data-testid"]);
      assert.equal(el.className, "gmchat-link-host");
      assert.equal(el.getAttribute("data-testid"), "link-host");
      assert.equal(el.children.length, 0);
      assert.equal(el.previousElementSibling?.localName, "a");
    } else if (tag === "ol") {
      for (const name of names) assert.equal(name, "start");
      if (names.length) assert.match(el.getAttribute("start"), /^\d{1,9}$/);
    } else if (tag === "code") {
      for (const name of names) assert.equal(name, "class");
      if (names.length) assert.match(el.className, /^language-[A-Za-z0-9_+-]{1,32}$/);
    } else if (tag === "th" || tag === "td") {
      for (const name of names) assert.equal(name, "style");
      if (names.length) assert.match(el.getAttribute("style"), /^text-align:(left|center|right)$/);
    } else {
      assert.deepEqual(names, [], `${tag} has attributes ${names}`);
    }
  }
}

const A = (href, text, title) =>
  `<a href="${href}"${title ? ` title="${title}"` : ""} rel="noopener noreferrer" target="_blank">${text}</a>`;
const HOST = (host) => `<span class="gmchat-link-host" data-testid="link-host"> (${host})</span>`;

// ------------------------------------------------------------------ the module itself

const SOURCES = new URL("../../../frontend/src/", import.meta.url);
const HTML_SINKS = /innerHTML|outerHTML|insertAdjacentHTML|document\.write|createContextualFragment|parseFromString|srcdoc|setHTML|\beval\s*\(|new Function/;

function sourceFiles(dir = SOURCES) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(new URL(`${entry.name}/`, dir)) : entry.name.endsWith(".ts") ? [new URL(entry.name, dir)] : [],
  );
}

test("the bundle imports nothing and the sources never write HTML strings into the DOM", () => {
  const bundle = readFileSync(CHAT_JS, "utf8");
  assert.doesNotMatch(bundle, /^\s*import[\s{*"']/m); // anywidget loads it from a Blob URL
  // one dynamic import: the chart library's module text, from a Blob URL (widget.ts), never a path
  assert.equal((bundle.match(/\bimport\s*\(/g) || []).length, 1);
  assert.doesNotMatch(bundle, /\bimport\s*\(\s*["'`]/);
  assert.doesNotMatch(bundle, /\brequire\s*\(/);
  assert.equal(typeof chat.default.render, "function");
  // Our code: no HTML-string sink anywhere (DOMPurify, bundled beside it, has its own inside its
  // inert document); the one sanitize call asks for a DocumentFragment, never a string.
  const files = sourceFiles();
  assert.ok(files.length >= 15, files.map(String));
  for (const file of files) {
    const source = readFileSync(file, "utf8");
    assert.doesNotMatch(source, HTML_SINKS, String(file));
  }
  const markdown = readFileSync(new URL("markdown.ts", SOURCES), "utf8");
  assert.equal((markdown.match(/\.sanitize\(/g) || []).length, 1);
  assert.match(markdown, /RETURN_DOM_FRAGMENT: true/);
  assert.doesNotMatch(markdown, /RETURN_DOM\b|RETURN_TRUSTED_TYPE/);
});

test("rendering writes no HTML string into the page's document", () => {
  // Every HTML-string sink of the page's own document records its use while answers render.
  const used = [];
  const proto = window.Element.prototype;
  const restore = [];
  for (const name of ["innerHTML", "outerHTML"]) {
    const descriptor = Object.getOwnPropertyDescriptor(proto, name);
    Object.defineProperty(proto, name, {
      ...descriptor,
      set(value) {
        if (this.ownerDocument === document) used.push(name);
        descriptor.set.call(this, value);
      },
    });
    restore.push(() => Object.defineProperty(proto, name, descriptor));
  }
  const insert = proto.insertAdjacentHTML;
  proto.insertAdjacentHTML = function (...args) {
    if (this.ownerDocument === document) used.push("insertAdjacentHTML");
    return insert.apply(this, args);
  };
  restore.push(() => (proto.insertAdjacentHTML = insert));
  const write = window.Document.prototype.write;
  window.Document.prototype.write = function (...args) {
    if (this === document) used.push("document.write");
    return write.apply(this, args);
  };
  restore.push(() => (window.Document.prototype.write = write));
  try {
    const probe = document.createElement("div");
    probe.innerHTML = "<b>x</b>"; // the probe itself: the recorder works
    assert.deepEqual(used.splice(0), ["innerHTML"]);
    for (const text of ["# Title\n\n**bold** [x](https://a.example) <b>raw</b>", "| a |\n|---|\n| 1 |", "```\ncode\n```", "- [ ] task"]) {
      const el = document.createElement("div");
      document.body.append(el);
      renderMarkdown(el, text);
      assert.ok(el.childNodes.length > 0, text);
      el.remove();
    }
    assert.deepEqual(used, []);
  } finally {
    for (const undo of restore) undo();
  }
});

// ------------------------------------------------------------------ injection attempts

test("raw HTML renders as literal text", () => {
  for (const attack of [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '<a href="javascript:alert(1)">x</a>',
    "<iframe src=https://evil.example></iframe>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<math><mi xlink:href=\"javascript:alert(1)\">x</mi></math>",
    "<style>*{display:none}</style>",
    '<div onclick="alert(1)">x</div>',
    "**<b>bold</b>**",
  ]) {
    const el = render(attack);
    assertSafeDom(el);
    assert.ok(el.textContent.includes("<"), attack);
    assert.equal(el.querySelectorAll("img, script, iframe, svg, math, style, div, b").length, 0, attack);
  }
  assert.equal(md("<script>alert(1)</script>"), "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>");
  assert.equal(render("<img src=x onerror=alert(1)>").textContent, "<img src=x onerror=alert(1)>");
});

test("javascript:, data: and other unsafe links become plain text", () => {
  for (const attack of [
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x]( javascript:alert(1))",
    "[x](<javascript:alert(1)>)",
    "[x](java&#x73;cript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "[x](data:image/png;base64,iVBORw0KGgo=)",
    "[x](vbscript:msgbox(1))",
    "[x](file:///etc/passwd)",
    "[x](//evil.example/path)",
    "[x](/relative/path)",
    "[x](#anchor)",
  ]) {
    const el = render(attack);
    assertSafeDom(el);
    assert.equal(el.querySelectorAll("a").length, 0, attack);
    assert.equal(el.textContent, "x", attack);
  }
  // (a control character in the destination: no link at all, the source stays as text)
  for (const attack of ["[x](\u0001javascript:alert(1))", "<javascript:alert(1)>", "![img](javascript:alert(1))", "![img](data:image/png;base64,iVBORw0KGgo=)", "[**bold**](javascript:x)"]) {
    const el = render(attack);
    assertSafeDom(el);
    assert.equal(el.querySelectorAll("a, img").length, 0, attack);
  }
  assert.equal(md("[**bold**](javascript:x)"), "<p><strong>bold</strong></p>");
});

test("HTML in table cells is text", () => {
  const el = render("| a | b |\n|---|---|\n| <img src=x onerror=alert(1)> | <script>x</script> |\n| [y](javascript:z) | ok |");
  assertSafeDom(el);
  const cells = [...el.querySelectorAll("td")].map((td) => td.textContent);
  assert.deepEqual(cells, ["<img src=x onerror=alert(1)>", "<script>x</script>", "y", "ok"]);
  assert.equal(el.querySelectorAll("a").length, 0);
});

test("the sanitizer holds even against HTML the parser never writes", () => {
  // as if markdown-it had a bug: DOMPurify and the link pass must still leave only safe nodes
  const frag = sanitizedFragment(
    document,
    [
      "<script>alert(1)</script>",
      '<img src="x" onerror="alert(1)">',
      '<a href="javascript:alert(1)">click</a>',
      '<a href="https://ok.example/" onclick="x" target="_self" data-testid="x">ok</a>',
      '<p onclick="x" style="color:red" class="evil" data-x="1" aria-label="y">&lt;b&gt;text&lt;/b&gt;</p>',
      '<code class="language-x&quot; onload=&quot;y">c</code>',
      '<ol start="1 onclick=x"><li>i</li></ol>',
      '<table><tbody><tr><td style="background:url(https://evil.example/)">t</td></tr></tbody></table>',
      '<span class="gmchat-link-host" onclick="x"><img src="x">host</span>',
      "<svg><a href=\"javascript:alert(1)\">s</a></svg>",
      '<form action="https://evil.example/"><input name="q"></form>',
      '<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>',
    ].join(""),
  );
  const root = document.createElement("div");
  root.append(frag);
  assertSafeDom(root);
  assert.equal(root.querySelectorAll("script, img, svg, form, input, iframe").length, 0);
  assert.deepEqual([...root.querySelectorAll("a")].map((a) => a.getAttribute("href")), ["https://ok.example/"]);
  assert.equal(root.querySelector("a").getAttribute("target"), "_blank");
  assert.equal(root.querySelector("p").textContent, "<b>text</b>");
  assert.equal(root.querySelector("code").getAttribute("class"), null);
  assert.equal(root.querySelector("ol").getAttribute("start"), null);
  assert.equal(root.querySelector("td").getAttribute("style"), null);
  // the only span is the host the link pass added after the one safe link
  assert.deepEqual([...root.querySelectorAll("span")].map((s) => s.textContent), [" (ok.example)"]);
  assert.ok(root.textContent.includes("click") && root.textContent.includes("host"));
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
    md('[docs](https://example.com/a_(b) "Title")'),
    `<p>${A("https://example.com/a_(b)", "docs", "Title")}${HOST("example.com")}</p>`,
  );
  assert.equal(
    md("<https://example.com> and <me@example.com>"),
    `<p>${A("https://example.com/", "https://example.com")} and ${A("mailto:me@example.com", "me@example.com")}</p>`,
  );
  assert.equal(
    md("See https://example.com/x. Or (http://example.org/y)!"),
    `<p>See ${A("https://example.com/x", "https://example.com/x")}. Or (${A("http://example.org/y", "http://example.org/y")})!</p>`,
  );
  assert.equal(md("[a [nested] label](https://x.org)"), `<p>${A("https://x.org/", "a [nested] label")}${HOST("x.org")}</p>`);
  assert.equal(md("[no link] here"), "<p>[no link] here</p>");
  assert.equal(md("![chart](https://x.org/c.png)"), `<p>${A("https://x.org/c.png", "[image: chart]")}${HOST("x.org")}</p>`);
  assert.equal(md("`https://x.org` stays code"), "<p><code>https://x.org</code> stays code</p>");
  // only explicit http(s) URLs are linkified: no bare domains, addresses or other schemes
  assert.equal(md("example.com, www.example.com, me@example.com, ftp://example.com"), "<p>example.com, www.example.com, me@example.com, ftp://example.com</p>");
  assert.equal(md("word-https://example.com/x"), "<p>word-https://example.com/x</p>".replace("https://example.com/x", A("https://example.com/x", "https://example.com/x")));
});

// ------------------------------------------------------------------ inline

test("inline formatting", () => {
  assert.equal(md("**bold** *it* _it_ __b__ ~~gone~~ `co*de*`"), "<p><strong>bold</strong> <em>it</em> <em>it</em> <strong>b</strong> <del>gone</del> <code>co*de*</code></p>");
  assert.equal(render("***both***").querySelectorAll("strong em, em strong").length, 1);
  assert.equal(md("*a **b** c*"), "<p><em>a <strong>b</strong> c</em></p>");
  assert.equal(md("snake_case_name and 2 * 3 * 4"), "<p>snake_case_name and 2 * 3 * 4</p>");
  assert.equal(md("file_name_ and __init__.py"), "<p>file_name_ and <strong>init</strong>.py</p>");
  assert.equal(md("x_y_ z"), "<p>x_y_ z</p>");
  assert.equal(md("**not closed"), "<p>**not closed</p>");
  assert.equal(md("\\*literal\\* and \\<tag>"), "<p>*literal* and &lt;tag&gt;</p>");
  assert.equal(md("`` a ` b ``"), "<p><code>a ` b</code></p>");
  assert.equal(md("a  \nb\\\nc\nd"), "<p>a<br>b<br>c\nd</p>");
  assert.equal(md("plain"), "<p>plain</p>");
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
  assert.equal(md("- a\n- b\n* c"), "<ul><li>a</li><li>b</li></ul><ul><li>c</li></ul>"); // CommonMark: a new marker, a new list
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
  assert.equal(render("- [x] done").querySelectorAll("input").length, 0); // a character, no form control
});

test("GitHub tables", () => {
  assert.equal(
    md("| Part | Qty | Note |\n|:-----|----:|:----:|\n| Bolt | 3 | `a\\|b` |\n| Nut \\| M4 | 10 |"),
    '<table><thead><tr><th style="text-align:left">Part</th><th style="text-align:right">Qty</th><th style="text-align:center">Note</th></tr></thead>' +
      '<tbody><tr><td style="text-align:left">Bolt</td><td style="text-align:right">3</td><td style="text-align:center"><code>a|b</code></td></tr>' +
      '<tr><td style="text-align:left">Nut | M4</td><td style="text-align:right">10</td><td style="text-align:center"></td></tr></tbody></table>',
  );
  assert.equal(md("a | b\n--|--\n1 | **2**"), "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td><strong>2</strong></td></tr></tbody></table>");
  assert.equal(md("Intro:\n| a |\n|---|\n| 1 |"), "<p>Intro:</p><table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>");
  // header and delimiter must agree; a half-streamed delimiter is still a paragraph
  assert.equal(md("| a | b |\n|---"), "<p>| a | b |\n|---</p>");
  const cell = render("| a |\n|--:|\n| 1 |").querySelector("td");
  assert.equal(cell.style.textAlign, "right");
});

test("fenced code blocks", () => {
  assert.equal(md("```python\nprint('<b>')\n\n  x = 1\n```"), "<pre><code class=\"language-python\">print('&lt;b&gt;')\n\n  x = 1</code></pre>");
  assert.equal(md("~~~\n```\n~~~"), "<pre><code>```</code></pre>");
  assert.equal(md("````\n```\ninner\n```\n````"), "<pre><code>```\ninner\n```</code></pre>");
  assert.equal(md("```js\nunclosed while streaming"), '<pre><code class="language-js">unclosed while streaming</code></pre>');
  assert.equal(md("```c\"><script>\nx\n```"), '<pre><code class="language-c">x</code></pre>');
  assert.equal(md("```\n**not bold** [x](https://a.b)\n```"), "<pre><code>**not bold** [x](https://a.b)</code></pre>");
  assert.equal(md("text ```inline``` text"), "<p>text <code>inline</code> text</p>");
});

test("every prefix of a streamed answer renders safely", () => {
  const answer = [
    "## Cobalt parts\n\nThe **3 projects** that use *cobalt* parts:\n\n",
    "| Project | Parts |\n|---|---:|\n| Apollo | 4 |\n| <b>Zeus</b> | 2 |\n\n",
    "1. First\n   - detail `code`\n2. Second\n\n```sql\nSELECT * FROM t;\n```\n",
    "See [docs](https://example.com/docs) or [bad](javascript:alert(1)).\n\n> Note: ~~old~~ new ![x](https://evil.example/i.png)",
  ].join("");
  for (let i = 0; i <= answer.length; i++) assertSafeDom(render(answer.slice(0, i)));
});

test("pathological input finishes quickly, and deep nesting is inert text", () => {
  const started = Date.now();
  for (const text of [
    ">".repeat(5000) + " deep",
    "- ".repeat(2000) + "x",
    "[".repeat(3000),
    "*".repeat(3000) + "a",
    "_a ".repeat(2000),
    "`".repeat(3000),
    "| a |\n|---|\n" + "| x |\n".repeat(1000),
    "**a *b ".repeat(1000),
    "[a](".repeat(2000),
    "<".repeat(3000) + "a",
  ]) {
    assertSafeDom(render(text));
  }
  assert.ok(Date.now() - started < 20000, `took ${Date.now() - started} ms`);
  // Nesting is bounded: what lies deeper shows as text, none of it lost.
  const deep = render(">".repeat(5000) + " deep");
  let depth = 0;
  for (let node = deep.firstElementChild; node; node = node.firstElementChild) depth++;
  assert.ok(depth <= chat.MAX_NESTING + 2, `nested ${depth} deep`);
  assert.ok(deep.textContent.endsWith("> deep"), deep.textContent.slice(-40));
  const list = render("- ".repeat(2000) + "x");
  assert.ok(list.querySelectorAll("ul").length <= chat.MAX_NESTING, `${list.querySelectorAll("ul").length} lists`);
  assert.ok(list.textContent.endsWith("- x"), list.textContent.slice(-40));
});

test("a megabyte answer renders whole", () => {
  const paragraph = `Part ${"lorem ipsum **dolor** sit amet ".repeat(60)}[source](https://example.com/p) \`x = 1\`\n\n`;
  const text = paragraph.repeat(Math.ceil(1_000_000 / paragraph.length));
  assert.ok(text.length >= 1_000_000);
  const started = Date.now();
  const el = render(text);
  const took = Date.now() - started;
  assert.equal(el.querySelectorAll("p").length, Math.ceil(1_000_000 / paragraph.length));
  assert.equal(el.querySelectorAll("a").length, el.querySelectorAll("p").length);
  assert.ok(el.textContent.length > 800_000);
  assert.ok(took < 30000, `took ${took} ms`); // jsdom; a browser is many times faster
});

test("non-strings and empty input", () => {
  for (const nothing of ["", undefined, null, 42, { text: "x" }]) assert.equal(md(nothing), "", String(nothing));
  assert.equal(md("\r\n\r\nWindows\r\nlines\r\n"), "<p>Windows\nlines</p>");
  // each render replaces what was there
  const el = render("first");
  renderMarkdown(el, "second");
  assert.equal(el.innerHTML, "<p>second</p>");
  // a document without a window has no sanitizer: the text, as text
  const bare = document.implementation.createHTMLDocument("");
  const frag = markdownFragment(bare, "**<b>x</b>**");
  assert.equal(frag.childNodes.length, 1);
  assert.equal(frag.firstChild.nodeType, 3);
  assert.equal(frag.textContent, "**<b>x</b>**");
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
