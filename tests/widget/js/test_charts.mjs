// Charts in the front end: checkSpec (what a spec may hold before it is drawn), a chart event's
// view (refused, failed and drawn: the real chart library, charts.js, in a jsdom document), a
// table's chart pickers, and the widget's loader of the chart library.
// Run: node tests/widget/js/test_charts.mjs   (node >= 20, after `npm ci` in frontend/; exit code
// 1 on failure). It imports the built modules, gmchat_nb/widget/static/chat.js and charts.js.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CHAT_JS, newWindow } from "./dom.mjs";

const CHARTS_JS = new URL("../../../gmchat_nb/widget/static/charts.js", import.meta.url);

const window = newWindow();
// No canvas in jsdom: Vega measures text by estimate (and jsdom says nothing about it).
window.HTMLCanvasElement.prototype.getContext = () => null;
globalThis.window = window;
globalThis.document = window.document;
globalThis.getComputedStyle = window.getComputedStyle.bind(window);

// Vega's expressions must be interpreted, never compiled: any use of Function is recorded (but
// jsdom's own selector engine, nwsapi, which compiles its selectors, is let through).
const compiled = [];
const ownSelectors = (args) => String(args[args.length - 1] ?? "").includes("function Resolver(");
globalThis.Function = new Proxy(Function, {
  apply(target, _self, args) {
    if (ownSelectors(args)) return Reflect.construct(target, args);
    compiled.push(args);
    throw new Error("Function() called");
  },
  construct(target, args) {
    if (ownSelectors(args)) return Reflect.construct(target, args);
    compiled.push(args);
    throw new Error("new Function() called");
  },
});

const { ChartPicker, ChartView, DENIED_KEYS, SCHEMA, checkSpec, kernelChartLoader } = await import(CHAT_JS.href);
const library = await import(CHARTS_JS.href);

const HOSTILE = "<img src=x onerror=alert(1)>";
const SCRIPT = "<script>alert(1)</script>";

/** A spec as gmchat_nb/core/charts builds one: a bar per category. */
function barSpec() {
  return {
    $schema: SCHEMA,
    title: "Sum of quantity by material.name",
    width: "container",
    height: 240,
    data: {
      values: [
        { x: HOSTILE, y: 5 },
        { x: "steel", y: 4 },
        { x: "wood", y: 1 },
      ],
    },
    mark: { type: "bar", tooltip: true },
    encoding: {
      x: { field: "x", type: "nominal", title: SCRIPT, sort: null },
      y: { field: "y", type: "quantitative", title: "Sum of quantity" },
    },
  };
}

function chartEvent(spec = barSpec(), title = "Sum of quantity by material.name") {
  return { type: "chart", id: "chart-1", evidence_id: "q1", title, spec, intent: { mark: "bar", x: "material.name" }, marks: 3 };
}

const nextTick = () => new Promise((resolve) => setTimeout(resolve, 0));

async function settled(view) {
  for (let i = 0; i < 200 && view.el.getAttribute("data-state") === "drawing"; i++) await new Promise((r) => setTimeout(r, 10));
  return view.el.getAttribute("data-state");
}

// ------------------------------------------------------------------ checkSpec

test("a spec as the core builds it may be drawn", () => {
  assert.equal(checkSpec(barSpec()), null);
  const arc = barSpec();
  arc.mark = { type: "arc", tooltip: true };
  arc.encoding = { theta: { field: "y", type: "quantitative" }, color: { field: "x", type: "nominal" } };
  assert.equal(checkSpec(arc), null);
});

test("a key of the deny-list is refused at any depth, whatever its case", () => {
  for (const key of ["url", "expr", "signals", "params", "calculate", "labelExpr", "filter", "transform", "datasets", "href", "image", "usermeta", "test"]) {
    assert.ok(DENIED_KEYS.has(key.toLowerCase()), key);
    const top = { ...barSpec(), [key]: "x" };
    assert.match(checkSpec(top), new RegExp(`holds "${key.replace("$", "\\$")}"`), key);
    const nested = barSpec();
    nested.encoding.x.axis = { [key]: "datum.value" };
    assert.match(checkSpec(nested), /holds/, key);
    const inArray = barSpec();
    inArray.layer = [{ mark: "bar", encoding: { y: { condition: { [key]: 1 } } } }];
    assert.match(checkSpec(inArray), /holds/, key);
  }
  const shouting = barSpec();
  shouting.encoding.y.URL = "https://evil.example/";
  assert.equal(checkSpec(shouting), 'it holds "URL"');
  const label = barSpec();
  label.encoding.x.axis = { LabelExpr: "1" };
  assert.equal(checkSpec(label), 'it holds "LabelExpr"');
  // data values are checked too, as the core's check_spec does
  const row = barSpec();
  row.data.values[0].url = "https://evil.example/";
  assert.match(checkSpec(row), /holds "url"/);
});

test("a spec is refused unless it names the v5 schema, holds inline values only and a plain mark", () => {
  assert.equal(checkSpec(null), "the spec is not an object");
  assert.equal(checkSpec([barSpec()]), "the spec is not an object");
  assert.equal(checkSpec("{}"), "the spec is not an object");
  const noSchema = barSpec();
  delete noSchema.$schema;
  assert.match(checkSpec(noSchema), /schema/);
  assert.match(checkSpec({ ...barSpec(), $schema: "https://vega.github.io/schema/vega/v5.json" }), /schema/);
  assert.match(checkSpec({ ...barSpec(), data: { url: "https://evil.example/data.json" } }), /inline/);
  assert.match(checkSpec({ ...barSpec(), data: { name: "table" } }), /inline/);
  assert.match(checkSpec({ ...barSpec(), data: { values: [], format: { type: "json" } } }), /inline/);
  assert.match(checkSpec({ ...barSpec(), data: { values: "a,b" } }), /inline/);
  for (const mark of ["image", "text", "geoshape", { type: "image" }, undefined]) {
    assert.match(checkSpec({ ...barSpec(), mark }), /mark/, JSON.stringify(mark));
  }
  let deep = { a: 1 };
  for (let i = 0; i < 20; i++) deep = { nested: deep };
  assert.equal(checkSpec({ ...barSpec(), encoding: deep }), "it is nested too deep");
});

// ------------------------------------------------------------------ ChartView

test("a refused spec shows why as text, and the chart library is never loaded", async () => {
  let loads = 0;
  const loader = () => {
    loads++;
    return Promise.resolve(library);
  };
  const spec = { ...barSpec(), data: { url: "https://evil.example/data.json" } };
  const view = new ChartView(chartEvent(spec, HOSTILE), loader);
  document.body.append(view.el);
  await nextTick();
  assert.equal(view.el.getAttribute("data-state"), "refused");
  assert.equal(view.el.querySelector("[data-testid=gmchat-chart-status]").textContent, "chart refused: its data is not inline values only");
  assert.equal(loads, 0);
  assert.equal(view.el.querySelector("svg"), null);
  // the title is text: no element made of it
  assert.equal(view.el.querySelector("figcaption").textContent, HOSTILE);
  assert.equal(view.el.querySelectorAll("img, script").length, 0);
  const expression = barSpec();
  expression.encoding.y.axis = { labelExpr: "alert(1)" };
  const refused = new ChartView(chartEvent(expression), loader);
  assert.equal(refused.el.textContent.includes('chart refused: it holds "labelExpr"'), true);
  assert.equal(loads, 0);
  view.dispose();
  refused.dispose();
});

test("a chart without a loader, or whose library fails to load, says so as text", async () => {
  const none = new ChartView(chartEvent(), null);
  assert.equal(none.el.getAttribute("data-state"), "failed");
  assert.match(none.el.textContent, /chart unavailable: this view cannot draw charts/);
  const failing = new ChartView(chartEvent(), () => Promise.reject(new Error("The chart library is not built")));
  assert.equal(await settled(failing), "failed");
  assert.match(failing.el.querySelector("[data-testid=gmchat-chart-status]").textContent, /^chart unavailable: The chart library is not built$/);
});

test("a chart is drawn as SVG with a mark per value, its text as text, and toggles to its data", async () => {
  const view = new ChartView(chartEvent(barSpec(), `${HOSTILE} ${SCRIPT}`), () => Promise.resolve(library));
  document.body.append(view.el);
  assert.equal(await settled(view), "drawn");
  assert.deepEqual(compiled, []); // no expression compiled with Function
  const canvas = view.el.querySelector("[data-testid=gmchat-chart-canvas]");
  assert.equal(canvas.querySelectorAll("svg").length, 1);
  assert.equal(canvas.querySelectorAll("g.mark-rect path").length, 3);
  assert.equal(view.el.getAttribute("data-marks"), "3");
  const texts = [...canvas.querySelectorAll("text")].map((t) => t.textContent);
  assert.ok(texts.includes(SCRIPT), texts.join(" | ")); // the axis title, as text
  assert.ok(texts.some((t) => t.startsWith("<img")), texts.join(" | ")); // a label (cut), as text
  assert.equal(view.el.querySelectorAll("img, script, foreignObject, a").length, 0);
  assert.equal(view.el.querySelector("[data-testid=gmchat-chart-title]").textContent, `${HOSTILE} ${SCRIPT}`);
  // the title is the caption's: not drawn again inside the chart
  assert.ok(!texts.includes("Sum of quantity by material.name"));
  // Chart / Table
  const table = view.el.querySelector(".gmchat-chart-data");
  assert.equal(table.hidden, true);
  view.el.querySelector("[data-testid=gmchat-chart-table-show]").click();
  assert.equal(table.hidden, false);
  assert.equal(canvas.hidden, true);
  assert.deepEqual([...table.querySelectorAll("th")].map((th) => th.textContent), [SCRIPT, "Sum of quantity"]);
  assert.deepEqual([...table.querySelectorAll("tbody tr")].map((tr) => tr.cells[0].textContent), [HOSTILE, "steel", "wood"]);
  assert.equal(view.el.querySelector("[data-testid=gmchat-chart-table-show]").getAttribute("aria-pressed"), "true");
  view.el.querySelector("[data-testid=gmchat-chart-show]").click();
  assert.equal(table.hidden, true);
  assert.equal(canvas.hidden, false);
  view.dispose();
  assert.equal(view.el.isConnected, false);
});

test("the chart library refuses every load: a spec can fetch nothing", async () => {
  const options = library.embedOptions();
  assert.equal(options.ast, true);
  assert.equal(options.actions, false);
  assert.equal(options.renderer, "svg");
  assert.equal(options.mode, "vega-lite");
  for (const method of ["load", "sanitize", "http", "file"]) {
    await assert.rejects(options.loader[method]("https://evil.example/x.png", {}), /load nothing/);
  }
  // even a spec that was not checked: its data URL is asked of the loader, which refuses
  const el = document.createElement("div");
  const drawn = await library.drawChart(el, { ...barSpec(), data: { url: "https://evil.example/data.json" } });
  assert.equal(el.querySelectorAll("g.mark-rect path").length, 0);
  drawn.finalize();
});

test("the tooltip is text", () => {
  library.showTooltip(null, { clientX: 10, clientY: 10 }, null, { [HOSTILE]: SCRIPT, image: "https://evil.example/x.png" });
  const tip = document.querySelector(".gmchat-chart-tooltip");
  assert.equal(tip.hidden, false);
  assert.equal(tip.querySelectorAll("img, script").length, 0);
  assert.deepEqual([...tip.querySelectorAll("td")].map((td) => td.textContent), [HOSTILE, SCRIPT, "image", "https://evil.example/x.png"]);
  library.showTooltip(null, undefined, null, undefined);
  assert.equal(tip.hidden, true);
});

// ------------------------------------------------------------------ a table's chart pickers

const OPTIONS = {
  type: "chart_options",
  table: "t0-q1",
  columns: [
    { name: "material.name", kind: "nominal" },
    { name: "quantity", kind: "quantitative" },
    { name: HOSTILE, kind: "quantitative" },
    { name: "suppliers", kind: "list" },
  ],
  marks: ["bar", "line", "point", "area", "arc", "histogram"],
  aggregates: ["count", "sum", "mean", "min", "max"],
  intent: { mark: "bar", x: "material.name", y: "quantity", aggregate: "sum", sort: "-y", limit: 25, query: "q1" },
  chart: { ...chartEvent(), id: "suggested:q1" },
  error: null,
};

test("the Chart button asks for the suggested chart; the pickers ask for the one chosen", async () => {
  const sent = [];
  const picker = new ChartPicker((msg) => sent.push(msg), "t0-q1", () => Promise.resolve(library));
  document.body.append(picker.toggleButton, picker.el);
  assert.equal(picker.el.hidden, true);
  picker.toggleButton.click();
  assert.equal(picker.el.hidden, false);
  assert.deepEqual(sent, [{ type: "chart_request", table: "t0-q1" }]);
  picker.onOptions(OPTIONS);
  const select = (field) => picker.el.querySelector(`[data-testid=gmchat-chart-${field}]`);
  assert.deepEqual(
    ["mark", "x", "y", "color", "aggregate"].map((field) => select(field).value),
    ["bar", "material.name", "quantity", "", "sum"],
  );
  // a column name is an option's text; a to-many column is shown, not chosen
  const hostile = [...select("x").options].find((option) => option.value === HOSTILE);
  assert.equal(hostile.textContent, HOSTILE);
  assert.equal([...select("x").options].find((option) => option.value === "suppliers").disabled, true);
  assert.equal(picker.el.querySelectorAll("img, script").length, 0);
  const chart = picker.el.querySelector("[data-testid=gmchat-chart]");
  assert.equal(chart.getAttribute("data-chart"), "suggested:q1");
  select("mark").value = "line";
  select("mark").dispatchEvent(new window.Event("change"));
  assert.deepEqual(sent[1], { type: "chart_request", table: "t0-q1", intent: { mark: "line", x: "material.name", y: "quantity", aggregate: "sum", limit: 25 } });
  assert.equal(select("x").disabled, true); // waiting for the answer
  // a chart that cannot be drawn: the reason as text, no chart
  picker.onOptions({ ...OPTIONS, intent: { mark: "line", x: "material.name", y: "quantity" }, chart: null, error: { code: "invalid_chart", message: `A line chart needs dates ${HOSTILE}` } });
  assert.equal(select("x").disabled, false);
  assert.equal(picker.el.querySelector("[data-testid=gmchat-chart]"), null);
  assert.equal(picker.el.querySelector("[data-testid=gmchat-chart-picker-status]").textContent, `A line chart needs dates ${HOSTILE} (invalid_chart)`);
  assert.equal(select("mark").value, "line");
  // hidden and shown again: nothing asked twice
  picker.toggleButton.click();
  picker.toggleButton.click();
  assert.equal(sent.length, 2);
  picker.dispose();
});

test("a table whose columns suggest no chart says to pick one", () => {
  const picker = new ChartPicker(() => {}, "t0-q2", null);
  picker.toggle();
  picker.onOptions({ ...OPTIONS, intent: null, chart: null });
  assert.match(picker.el.textContent, /pick a mark and the columns/);
  picker.unblock(); // nothing waiting: nothing changes
});

// ------------------------------------------------------------------ the widget's library loader

class FakeTransport {
  constructor() {
    this.sent = [];
    this.handlers = new Set();
  }
  send(msg) {
    this.sent.push(msg);
  }
  onMessage(handler) {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }
  deliver(msg) {
    for (const handler of [...this.handlers]) handler(msg);
  }
  storageKey() {
    return null;
  }
}

test("the widget asks the kernel for the library once, and again after a refusal", async () => {
  const transport = new FakeTransport();
  const load = kernelChartLoader(transport, 5000);
  const first = load();
  const second = load();
  assert.equal(first, second);
  assert.deepEqual(transport.sent, [{ type: "chart_library" }]);
  transport.deliver({ type: "error", code: "bad_event", message: "unrelated" }); // not its answer
  transport.deliver({ type: "error", code: "charts_unavailable", message: "The chart library is not built" });
  await assert.rejects(first, /The chart library is not built/);
  assert.equal(transport.handlers.size, 0);
  const again = load();
  assert.notEqual(again, first);
  assert.equal(transport.sent.length, 2);
  transport.deliver({ type: "chart_library", source: "" });
  await assert.rejects(again, /no chart library/);
  const late = kernelChartLoader(transport, 20)();
  await assert.rejects(late, /did not send the chart library/);
  assert.equal(transport.handlers.size, 0);
});
