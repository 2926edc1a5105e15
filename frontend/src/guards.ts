/**
 * The guards' displays, pure helpers: a tool result's `flags` (text in the data that looks
 * written for the model, core/guards/scorer.py) and a confirmation's `provenance` (which input
 * values are not in the user's words). Both carry data (paths, excerpts): shown as text only.
 */

import { formatCell, isObject, plural, wholeNumber } from "./format";

// A flag's reasons (scorer.REASONS) in the words a reader needs.
const FLAG_REASON_TEXTS: Readonly<Record<string, string>> = {
  instruction: "instructions to the assistant",
  chat_template: "chat-template tokens",
  tool_name: "tool names",
  markdown_image: "a markdown image",
  url_query: "a URL with a query string",
  invisible: "invisible characters",
};

export const FLAGGED_WARNING = "Text that looks like instructions was read in this turn; check this change carefully.";
// provenance.request_unread: the user's words are in a language the intent gate cannot read.
export const UNREAD_REQUEST_NOTE =
  "Your message could not be read as asking for this change (it is in a language the change check does not read): confirm only if you asked for it.";

export interface Flag {
  path: string;
  reasons: string[];
  excerpt: string;
}

/** A flag's reason in plain words (an unknown reason as it is). */
export function flagReasonText(reason: unknown): string {
  if (typeof reason === "string" && Object.hasOwn(FLAG_REASON_TEXTS, reason)) return FLAG_REASON_TEXTS[reason] as string;
  return formatCell(reason) || "suspicious text";
}

/** A tool result's flags as `{path, reasons, excerpt}` with string fields (malformed entries left out). */
export function resultFlags(flags: unknown): Flag[] {
  if (!Array.isArray(flags)) return [];
  return (flags as unknown[]).filter(isObject).map((flag) => ({
    path: formatCell(flag.path) || "$",
    reasons: (Array.isArray(flag.reasons) ? (flag.reasons as unknown[]) : [flag.reasons]).map(formatCell).filter(Boolean),
    excerpt: formatCell(flag.excerpt),
  }));
}

/** The badge of a flagged result: `⚠ 3 suspicious fields`. */
export function flagsLabel(count: unknown): string {
  return `\u26a0 ${plural(wholeNumber(count), "suspicious field")}`;
}

/** One flag in a line: `data[0].name: instructions to the assistant, a markdown image`. */
export function flagText(flag: Flag): string {
  const reasons = (flag.reasons || []).map(flagReasonText).join(", ");
  return reasons ? `${flag.path}: ${reasons}` : flag.path;
}

export interface ConfirmProvenance {
  fromData: string[];
  flagged: boolean;
  requestUnread: boolean;
}

/**
 * A confirmation's provenance: the input paths whose values are not in the user's words,
 * whether text flagged as suspicious was read in the turn, and whether the user's words could
 * not be read as a request at all (their language).
 */
export function confirmProvenance(provenance: unknown): ConfirmProvenance {
  if (!isObject(provenance)) return { fromData: [], flagged: false, requestUnread: false };
  const paths = Array.isArray(provenance.from_data) ? (provenance.from_data as unknown[]) : [];
  return {
    fromData: [...new Set(paths.map(formatCell).filter(Boolean))],
    flagged: provenance.flagged_data_read === true,
    requestUnread: provenance.request_unread === true,
  };
}

/**
 * Which top-level input key each provenance path belongs to (`supplier.name` and `lines[0]`
 * belong to `supplier` and `lines`; the longest key that fits wins); paths no key fits map to null.
 */
export function pathsByKey(keys: readonly string[], paths: readonly string[]): Map<string, string | null> {
  const out = new Map<string, string | null>();
  for (const path of paths) {
    let best: string | null = null;
    for (const key of keys) {
      const fits = path === key || path.startsWith(`${key}.`) || path.startsWith(`${key}[`);
      if (fits && (best === null || key.length > best.length)) best = key;
    }
    out.set(path, best);
  }
  return out;
}
