/**
 * Fitting the chat where its host puts it: the room the side panel leaves under itself for the
 * toasts JupyterLab shows over the bottom of the right sidebar (lab/toasts.ts measures them and
 * applies it), so the panel's input stays above them instead of under them.
 */

/** A box on the screen, as `getBoundingClientRect()` gives it. */
export interface ScreenBox {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** Space between a toast and the panel's input above it (px). */
export const TOAST_GAP = 8;
/** What the chat keeps of the panel's height whatever the toasts cover (px): the header and the input. */
export const CHAT_KEEPS = 160;

function overlaps(a: ScreenBox, b: ScreenBox): boolean {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

/**
 * How much of the panel's bottom (px, whole) the chat must leave free so no toast covers it: from
 * the top of the highest toast over the panel to the panel's bottom, plus `gap`; 0 when no toast
 * overlaps it (an empty box, a toast beside the panel or a panel not shown). Never more than the
 * panel's height less `keep`, so a stack of toasts cannot squeeze the chat away.
 */
export function toastClearance(panel: ScreenBox, toasts: readonly ScreenBox[], gap = TOAST_GAP, keep = CHAT_KEEPS): number {
  const height = panel.bottom - panel.top;
  if (!(height > 0) || !(panel.right > panel.left)) return 0;
  let top = Infinity;
  for (const toast of toasts) {
    if (!(toast.right > toast.left) || !(toast.bottom > toast.top) || !overlaps(panel, toast)) continue;
    top = Math.min(top, toast.top);
  }
  if (top === Infinity) return 0;
  const needed = Math.ceil(panel.bottom - Math.max(top, panel.top) + gap);
  return Math.max(0, Math.min(needed, Math.floor(height - keep)));
}
