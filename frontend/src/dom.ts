/**
 * DOM helpers: `h` creates an element (text only through `textContent` and text nodes, never
 * markup), `button` a `<button type="button">` with the widget's classes.
 */

export interface ElementOptions {
  cls?: string;
  testid?: string;
  text?: unknown;
  /** Attributes; `true` sets an empty one, `false`, null and undefined leave it out. */
  attrs?: Record<string, string | number | boolean | null | undefined>;
  on?: { [K in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[K]) => void };
}

export type Child = Node | string | null | undefined;

/** Create an element. Text goes through `textContent`/text nodes only. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  opts: ElementOptions = {},
  children: readonly Child[] = [],
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (opts.cls) el.className = opts.cls;
  if (opts.testid) el.setAttribute("data-testid", opts.testid);
  if (opts.text !== undefined && opts.text !== null) el.textContent = String(opts.text);
  for (const [key, value] of Object.entries(opts.attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const [event, handler] of Object.entries(opts.on ?? {})) {
    if (handler) el.addEventListener(event, handler as EventListener);
  }
  for (const child of children) if (child !== null && child !== undefined) el.append(child);
  return el;
}

export interface ButtonOptions {
  testid?: string;
  aria?: string;
  cls?: string;
  title?: string;
  onClick?: (event: MouseEvent) => void;
  disabled?: boolean;
}

/** A `<button type="button">` with a visible label and an optional accessible name. */
export function button(label: string, { testid, aria, cls, title, onClick, disabled }: ButtonOptions = {}): HTMLButtonElement {
  return h("button", {
    cls: cls ? `gmchat-btn ${cls}` : "gmchat-btn",
    testid,
    text: label,
    attrs: { type: "button", "aria-label": aria, title, disabled: Boolean(disabled) },
    on: onClick ? { click: onClick } : {},
  });
}
