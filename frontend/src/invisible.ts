/**
 * Invisible characters written out: every character a person cannot see (or that makes text
 * display in another order than it is stored) becomes a visible escape `⟨U+202E⟩`, so a
 * confirmation card cannot show something other than what is stored. No DOM here.
 */

/**
 * Inclusive code point ranges of the invisible characters. They mirror `INVISIBLE_RANGES` in
 * gmchat_nb/core/guards/invisible.py (the characters removed from tool results): change both
 * together.
 */
export const INVISIBLE_RANGES: readonly (readonly [number, number])[] = [
  [0x00ad, 0x00ad], // soft hyphen
  [0x0600, 0x0605], // Arabic number signs (Cf)
  [0x061c, 0x061c], // Arabic letter mark (bidi)
  [0x06dd, 0x06dd], // Arabic end of ayah (Cf)
  [0x070f, 0x070f], // Syriac abbreviation mark (Cf)
  [0x0890, 0x0891], // Arabic pound/piastre mark above (Cf)
  [0x08e2, 0x08e2], // Arabic disputed end of ayah (Cf)
  [0x180e, 0x180e], // Mongolian vowel separator (Cf)
  [0x200b, 0x200f], // zero width space/non-joiner/joiner, LRM, RLM
  [0x202a, 0x202e], // bidi embeddings and overrides
  [0x2060, 0x206f], // word joiner, invisible operators, bidi isolates, deprecated controls
  [0xfe00, 0xfe0f], // variation selectors 1–16
  [0xfeff, 0xfeff], // zero width no-break space (BOM)
  [0xfff9, 0xfffb], // interlinear annotation controls
  [0x110bd, 0x110bd], // Kaithi number sign (Cf)
  [0x110cd, 0x110cd], // Kaithi number sign above (Cf)
  [0x13430, 0x1343f], // Egyptian hieroglyph format controls (Cf, Unicode 14 and 15)
  [0x1bca0, 0x1bca3], // shorthand format controls (Cf)
  [0x1d173, 0x1d17a], // musical symbol format controls (Cf)
  [0xe0000, 0xe007f], // tag characters: invisible ASCII
  [0xe0100, 0xe01ef], // variation selectors 17–256
];

/** `⟨U+202E⟩`: a code point as a visible escape (upper-case hex, at least four digits). */
export function codePointEscape(codePoint: number): string {
  return `\u27e8U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}\u27e9`;
}

/** Whether `text` holds an invisible character or a lone surrogate. */
export function hasInvisible(text: string): boolean {
  for (const char of text) if (isHidden(char.codePointAt(0) ?? 0)) return true;
  return false;
}

/** `text` with every invisible character and lone surrogate written as `⟨U+XXXX⟩`; all else,
 * astral characters such as emoji included, kept as it is. */
export function revealInvisible(text: string): string {
  let out = "";
  for (const char of text) {
    // for…of walks code points: a pair is one character, a lone surrogate one of its own.
    const code = char.codePointAt(0) ?? 0;
    out += isHidden(code) ? codePointEscape(code) : char;
  }
  return out;
}

// A character of INVISIBLE_RANGES or a lone surrogate (for…of meets a surrogate alone only when
// it is unpaired), which cannot be shown or stored as UTF-8.
function isHidden(code: number): boolean {
  if (code >= 0xd800 && code <= 0xdfff) return true;
  for (const [low, high] of INVISIBLE_RANGES) {
    if (code < low) return false; // the ranges are sorted
    if (code <= high) return true;
  }
  return false;
}

/**
 * A copy of the JSON-like `value` with every string (object keys included, at any depth)
 * revealed, and whether anything was. Other values come back as they are; an object met again
 * inside itself (a cycle) is shown as `"[cycle]"`.
 */
export function revealInvisibleIn(value: unknown): { value: unknown; revealed: boolean } {
  let revealed = false;
  const text = (s: string): string => {
    const shown = revealInvisible(s);
    if (shown !== s) revealed = true;
    return shown;
  };
  const open = new Set<object>();
  const walk = (item: unknown): unknown => {
    if (typeof item === "string") return text(item);
    if (typeof item !== "object" || item === null) return item;
    if (open.has(item)) return "[cycle]";
    open.add(item);
    try {
      if (Array.isArray(item)) return item.map(walk);
      const copy: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(item)) copy[text(key)] = walk(inner);
      return copy;
    } finally {
      open.delete(item);
    }
  };
  const copy = walk(value);
  return { value: copy, revealed };
}

/** What a card says when it shows escapes. */
export const INVISIBLE_WARNING =
  "This change holds characters that display differently from what is stored (shown as \u27e8U+\u2026\u27e9).";
