/**
 * Keeps the side panel's input above JupyterLab's toasts. JupyterLab shows its notifications
 * (`Notification` of @jupyterlab/apputils: "Would you like to receive official Jupyter news?",
 * build messages, extensions' own) as toasts at the bottom right of the page, over the right
 * sidebar, where the panel's input and its Send and Stop buttons are. While a toast covers the
 * panel, the panel leaves the height of the toasts free at its bottom (`--gmchat-toast-clearance`,
 * panel.css), so the input sits above them; when the last toast goes, the input goes back down.
 *
 * What is watched is the toasts on the screen, not the notification manager: a notification
 * outlives its toast (it stays in the notification centre) and a toast closes on its timer or by
 * its × without the manager saying so; only the page knows where the toasts are. JupyterLab
 * puts them in one element it adds to the body with the first toast (`#react-toastify-container`,
 * the container `.jp-toastContainer` in it): the body's children are watched until it is there,
 * then the toasts it holds, the panel's size and the window's.
 */

import { type ScreenBox, toastClearance } from "../fit";

/** The element JupyterLab adds to the body for its toasts (apputils' Notification). */
export const TOAST_ROOT_ID = "react-toastify-container";
/** The toasts: the children of the container JupyterLab renders there. */
export const TOASTS = ".jp-toastContainer > *";
export const CLEARANCE_PROPERTY = "--gmchat-toast-clearance";

export class ToastClearance {
  private root: HTMLElement | null = null;
  private frame: number | null = null;
  private clearance = 0;
  private readonly bodyWatch: MutationObserver;
  private readonly toastWatch: MutationObserver;
  private readonly sizeWatch: ResizeObserver | null;
  private readonly schedule = (): void => {
    if (this.frame === null) this.frame = requestAnimationFrame(() => this.measure());
  };

  constructor(private readonly panel: HTMLElement) {
    this.toastWatch = new MutationObserver(this.schedule);
    this.bodyWatch = new MutationObserver(() => this.findRoot());
    this.bodyWatch.observe(document.body, { childList: true });
    // (the border box: the clearance changes the panel's padding, which must not call this again)
    this.sizeWatch = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(this.schedule);
    this.sizeWatch?.observe(panel, { box: "border-box" });
    window.addEventListener("resize", this.schedule);
    this.findRoot();
  }

  /** The height left free at the panel's bottom now (px). */
  get value(): number {
    return this.clearance;
  }

  private findRoot(): void {
    const root = document.getElementById(TOAST_ROOT_ID);
    if (root === this.root) return;
    this.stopWatchingToasts();
    this.root = root;
    if (root) {
      this.toastWatch.observe(root, { childList: true, subtree: true, attributes: true, attributeFilter: ["class", "style"] });
      // a toast slides in and out: measured again where it comes to rest
      root.addEventListener("animationend", this.schedule);
      root.addEventListener("transitionend", this.schedule);
    }
    this.schedule();
  }

  private stopWatchingToasts(): void {
    this.toastWatch.disconnect();
    this.root?.removeEventListener("animationend", this.schedule);
    this.root?.removeEventListener("transitionend", this.schedule);
  }

  /** Measure the toasts over the panel and leave their height free. */
  measure(): void {
    this.frame = null;
    const toasts: ScreenBox[] = this.root ? [...this.root.querySelectorAll(TOASTS)].map((toast) => toast.getBoundingClientRect()) : [];
    const clearance = this.panel.isConnected ? toastClearance(this.panel.getBoundingClientRect(), toasts) : 0;
    if (clearance === this.clearance) return;
    this.clearance = clearance;
    if (clearance) this.panel.style.setProperty(CLEARANCE_PROPERTY, `${clearance}px`);
    else this.panel.style.removeProperty(CLEARANCE_PROPERTY);
  }

  dispose(): void {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.bodyWatch.disconnect();
    this.stopWatchingToasts();
    this.sizeWatch?.disconnect();
    window.removeEventListener("resize", this.schedule);
  }
}
