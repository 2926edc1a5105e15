"""The documentation stands alone and stays true: every page is read (and its examples run) by
tests/test_readme.py, every link points at a file of the checkout (tests/test_repository.py keeps
places beside the checkout out of every file), and docs/architecture.md names only modules and
files that exist."""

from __future__ import annotations

import re
from pathlib import Path

from .test_readme import DOCUMENTS, ROOT

MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A file or module named in backquotes: gmchat_nb/core/turns/owner.py, core/store/, tests/x.py.
CODE_PATH = re.compile(
    r"`((?:gmchat_nb|core|server_ext|widget|evals|tests|bench|scripts|docs)"
    r"/[\w./-]*)`"
)
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def pages() -> list[Path]:
    return [*DOCUMENTS, ARCHITECTURE]


def test_every_page_in_docs_is_read_in_order() -> None:
    written = {path.name for path in (ROOT / "docs").glob("*.md")}
    read = {path.name for path in pages()}
    assert written == read - {"README.md"}, "add new pages to tests/test_readme.py's PAGES"


def test_every_link_is_a_file_of_the_checkout() -> None:
    broken = []
    for page in pages():
        for target in MARKDOWN_LINK.findall(page.read_text()):
            if re.match(r"[a-z]+://", target) or target.startswith("#"):
                continue  # a web page (a package's home), or a heading of the page
            resolved = (page.parent / target.split("#")[0]).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links that are not files of the checkout:\n" + "\n".join(broken)


def named_paths(text: str) -> list[str]:
    return sorted(set(CODE_PATH.findall(text)))


def resolves(name: str) -> bool:
    """A path of the checkout, or of the package when it starts below ``gmchat_nb/``; a module
    may be named without ``.py``."""
    for base in (ROOT, ROOT / "gmchat_nb"):
        candidate = base / name.rstrip("/")
        if candidate.exists() or candidate.with_suffix(".py").exists():
            return True
    return False


def test_the_architecture_names_only_what_exists() -> None:
    missing = [name for name in named_paths(ARCHITECTURE.read_text()) if not resolves(name)]
    assert not missing, "docs/architecture.md names what does not exist:\n" + "\n".join(missing)


def test_the_architecture_check_finds_a_module_that_is_gone() -> None:
    text = "The owner lives in `core/turns/owner.py`; recovery was `core/recovery.py`."
    assert named_paths(text) == ["core/recovery.py", "core/turns/owner.py"]
    assert [name for name in named_paths(text) if not resolves(name)] == ["core/recovery.py"]


def test_the_architecture_covers_every_package() -> None:
    """Each package of gmchat_nb has its place in the document (a new one must be explained)."""
    text = ARCHITECTURE.read_text()
    packages = sorted(
        str(path.parent.relative_to(ROOT / "gmchat_nb"))
        for path in (ROOT / "gmchat_nb").rglob("__init__.py")
        if path.parent != ROOT / "gmchat_nb"
    )
    unnamed = [
        name for name in packages if f"`{name}/" not in text and f"`gmchat_nb/{name}/" not in text
    ]
    assert not unnamed, "packages docs/architecture.md does not describe: " + ", ".join(unnamed)


# A size in bytes as the pages would write one: 223,859 bytes, 883 KB, a 26,694-byte file, 1.2 MB.
SIZE = re.compile(r"\b\d[\d,.]*(?:\s?(?:bytes?|[kKM]i?B)\b|-byte\b)")
# What the front-end build writes, as the pages name it.
BUILT = re.compile(
    r"chat\.js|charts\.js|chat\.css|remoteEntry|labextension|widget module|chart library|bundle",
    re.IGNORECASE,
)


def quoted_build_sizes(text: str) -> list[str]:
    """The sentences of ``text`` that give a size and name a file of the front-end build."""
    flowing = " ".join(text.split())
    sentences = re.split(r"(?<=[.;:!?])\s", flowing)
    return [s for s in sentences if BUILT.search(s) and SIZE.search(s)]


def test_no_page_quotes_the_size_of_a_built_file() -> None:
    """The build's sizes change with every change to the front end, and a page that quoted them
    went out of date (223,859 bytes written, 230,023 built): ``bench/frontend.py --sizes-only``
    prints the current ones."""
    quoted = [f"{page.name}: {s}" for page in pages() for s in quoted_build_sizes(page.read_text())]
    assert not quoted, "sizes of built files (bench/frontend.py prints them):\n" + "\n".join(quoted)


def test_a_quoted_build_size_is_found() -> None:
    assert quoted_build_sizes("Sizes: the widget module is\n223,859 bytes (84,782 gzip).")
    assert quoted_build_sizes("Vega is a lazy chunk of the labextension (about 866 KB).")
    assert quoted_build_sizes("plus its 26,694-byte stylesheet, with charts.js.")
    assert not quoted_build_sizes("A chart event is 4,378 B. The chart library loads lazily.")
