/**
 * The chart library: Vega, Vega-Lite and vega-embed, loaded only when a chart is drawn. It is
 * never imported by the rest of the front end (chart.ts knows its type only): the widget's
 * build makes it a second module, `charts.js`, which the kernel sends when the first chart needs
 * it (`chart_library`); the side panel imports it dynamically, so webpack puts it in a lazy chunk.
 *
 * Drawing is safe by construction, whatever the spec holds (chart.ts's `checkSpec` refused the
 * dangerous keys before): Vega's expressions are interpreted from their syntax tree (`ast` and
 * vega-interpreter: no code compiled from strings, so a strict Content-Security-Policy holds);
 * the loader refuses every URL (a spec can never fetch, not even an image); the spec is read as
 * Vega-Lite only; the renderer is SVG, whose text Vega sets as text; no actions menu, no style
 * element; the tooltip is this module's own, text only (vega-tooltip writes HTML, and turns a
 * field titled "image" into an image it loads).
 */

import embed, { type EmbedOptions } from "vega-embed";
import { expressionInterpreter } from "vega-interpreter";

/** A drawn chart: `finalize` removes its listeners and timers. */
export interface DrawnChart {
  finalize(): void;
}

function refuse(): Promise<never> {
  return Promise.reject(new Error("charts load nothing: the data is in the spec"));
}

/** A Vega loader that loads nothing: every data URL, image and file is refused. */
export const NO_LOADER = Object.freeze({
  load: refuse,
  sanitize: refuse,
  http: refuse,
  file: refuse,
});

const TOOLTIP_ROWS = 20;
let tooltipEl: HTMLDivElement | null = null;

function tooltipText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") {
    try {
      return JSON.stringify(value).slice(0, 300);
    } catch {
      return String(value);
    }
  }
  return String(value).slice(0, 300);
}

/**
 * Vega's tooltip handler: one `div` of text (a table of the datum's titled fields), near the
 * pointer; an empty value hides it.
 */
export function showTooltip(_handler: unknown, event: MouseEvent | undefined, _item: unknown, value: unknown): void {
  const doc = globalThis.document;
  if (!doc) return;
  if (value === null || value === undefined || value === "") {
    if (tooltipEl) tooltipEl.hidden = true;
    return;
  }
  if (!tooltipEl || !tooltipEl.isConnected) {
    tooltipEl = doc.createElement("div");
    tooltipEl.className = "gmchat-chart-tooltip";
    tooltipEl.setAttribute("role", "tooltip");
    doc.body.append(tooltipEl);
  }
  const el = tooltipEl;
  if (typeof value === "object" && !Array.isArray(value)) {
    const table = doc.createElement("table");
    for (const [key, item] of Object.entries(value as Record<string, unknown>).slice(0, TOOLTIP_ROWS)) {
      const row = table.insertRow();
      row.insertCell().textContent = key;
      row.insertCell().textContent = tooltipText(item);
    }
    el.replaceChildren(table);
  } else {
    el.textContent = tooltipText(value);
  }
  el.hidden = false;
  const x = event && Number.isFinite(event.clientX) ? event.clientX : 0;
  const y = event && Number.isFinite(event.clientY) ? event.clientY : 0;
  el.style.left = `${Math.max(0, Math.min(x + 12, (globalThis.innerWidth || 800) - el.offsetWidth - 8))}px`;
  el.style.top = `${Math.max(0, y + 12)}px`;
}

/** The page's text colour where the chart is drawn (JupyterLab's light or dark theme). */
function textColour(el: HTMLElement): string | null {
  try {
    const colour = globalThis.getComputedStyle?.(el).color;
    return colour && /^(rgb|rgba|#)/.test(colour) ? colour : null;
  } catch {
    return null;
  }
}

/** Vega-Lite's config: no background of its own, axes and legends in the page's text colour. */
function themeConfig(colour: string | null): Record<string, unknown> {
  const config: Record<string, unknown> = { background: null, view: { stroke: null } };
  if (colour) {
    const text = { labelColor: colour, titleColor: colour };
    config.axis = { ...text, domainColor: colour, tickColor: colour, gridOpacity: 0.3 };
    config.legend = text;
    config.title = { color: colour };
  }
  return config;
}

/** The embed options every chart is drawn with (`colour`: the text's, for axes and legends). */
export function embedOptions(colour: string | null = null): EmbedOptions {
  return {
    mode: "vega-lite",
    renderer: "svg",
    actions: false,
    ast: true,
    expr: expressionInterpreter,
    loader: NO_LOADER,
    defaultStyle: false,
    hover: false,
    tooltip: showTooltip,
    config: themeConfig(colour),
    logLevel: 0, // (Vega's warnings would go to the console; the view shows what matters)
  };
}

/**
 * Draw a Vega-Lite spec (already checked by chart.ts) into `el`.
 * @returns the drawn chart, to finalize when its view goes
 */
export async function drawChart(el: HTMLElement, spec: Record<string, unknown>): Promise<DrawnChart> {
  // The schema names the Vega-Lite version the spec was written for; it is never fetched, and
  // a major version behind the library's only makes vega-embed warn: it is left out.
  const { $schema: _schema, usermeta: _usermeta, ...rest } = spec;
  const result = await embed(el, rest as Parameters<typeof embed>[1], embedOptions(textColour(el)));
  return {
    finalize: () => {
      result.finalize();
      if (tooltipEl) tooltipEl.hidden = true;
    },
  };
}

/** What the library module exports (chart.ts's `ChartLibrary`). */
export const CHART_LIBRARY_VERSION = 1;
