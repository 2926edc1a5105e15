"""What a confirmation card holding a bidi override must show, in the widget and the side panel
alike: the character written out, a warning, and nothing rendered right to left."""

from __future__ import annotations

from playwright.sync_api import Locator, expect

WARNING = (
    "This change holds characters that display differently from what is stored"
    " (shown as \u27e8U+\u2026\u27e9)."
)


def expect_escaped_and_reject(box: Locator, timeout: float) -> None:
    """The card shows ``invoice⟨U+202E⟩fdp.exe`` and the warning; rejected, it says so."""
    expect(box).to_be_visible(timeout=timeout)
    expect(box.locator("td").first).to_have_text("invoice\u27e8U+202E\u27e9fdp.exe")
    expect(box.locator("[data-testid=invisible-warning]")).to_have_text(WARNING)
    assert "\u202e" not in (box.text_content() or "")
    box.locator("[data-testid=gmchat-reject]").click()
    expect(box.locator("[data-testid=gmchat-confirm]")).to_be_disabled()
    expect(box).to_contain_text("rejected", timeout=timeout)
