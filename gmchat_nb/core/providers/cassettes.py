"""The cassettes that ship with gmchat_nb, addressable by name: ``replay:oracle-openai``.

The eval data (datasets, the oracle, the cassettes) is ``evals/`` of a checkout; a wheel carries
the same files inside the package, as ``gmchat_nb/evals/datasets/`` (pyproject's force-include),
so that a name works the same from a checkout, an editable install and an installed wheel. This
module is the one place that knows where that directory is: the eval loader's
:func:`~gmchat_nb.evals.dataset.dataset_dir` asks it too.

A ``replay:`` argument is read as a path first (a file that exists wins, so a cassette of your own
beside you is never shadowed by a bundled one), then as the name of a bundled cassette (its file
name, with or without ``.jsonl``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["bundled_cassettes", "cassette_path", "eval_data_dir"]

_PACKAGE = Path(__file__).resolve().parents[2]  # gmchat_nb/
CASSETTE_SUFFIX = ".jsonl"


def eval_data_dir() -> Path:
    """The packaged copy ``gmchat_nb/evals/datasets`` when there is one (an installed wheel),
    else ``evals/`` beside the package (a checkout, or an editable install of one)."""
    packaged = _PACKAGE / "evals" / "datasets"
    if packaged.is_dir():
        return packaged
    return _PACKAGE.parent / "evals"


def bundled_cassettes() -> dict[str, Path]:
    """The bundled cassettes by name (the file name without ``.jsonl``), sorted by name."""
    folder = eval_data_dir() / "cassettes"
    return {path.stem: path for path in sorted(folder.glob(f"*{CASSETTE_SUFFIX}"))}


def cassette_path(argument: str) -> Path:
    """The cassette a ``replay:`` argument names: a path that exists, else a bundled cassette's
    name; else a ValueError saying that no such file was found and which names are bundled."""
    path = Path(argument)
    if path.exists():
        return path
    bundled = bundled_cassettes()
    name = argument.removesuffix(CASSETTE_SUFFIX)
    if name in bundled:
        return bundled[name]
    names = ", ".join(bundled) or "none"
    raise ValueError(
        f"cannot read the cassette {argument}: no such file was found, and it is not the name of "
        f"a bundled cassette (bundled: {names})"
    )
