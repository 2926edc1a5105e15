"""Vectors for knowledge: an embedding model that ships inside a PyPI package, and a search over
stored float32 vectors with numpy.

The ``[knowledge]`` extra installs ``wordllama`` (MIT), whose 256-dimension model is in its
wheel; it is loaded with downloads disabled, so nothing is fetched at run time (its loader looks
for its tokenizer in a cache folder first: the package's own folder is given as that cache,
where the wheel put it). Without the extra :func:`embedder` is ``None`` and recall is by
keywords alone. Vectors are stored beside their entry as float32 bytes and searched by cosine
similarity; :class:`VectorCache` keeps one matrix per project and reader and builds it again
only when the project's entries changed.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np

from ..text import clean_text

__all__ = ["DIMENSIONS", "Embedder", "VectorCache", "embedder", "from_bytes", "to_bytes"]

log = logging.getLogger(__name__)

DIMENSIONS: Final = 256


class Embedder(Protocol):
    """Texts in, one unit-length float32 row per text out."""

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class _WordLlama:
    def __init__(self, model: Any) -> None:
        self._model = model
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        # the tokenizer refuses a lone surrogate (a TypeError): it gets U+FFFD instead
        cleaned = [clean_text(text) for text in texts]
        with self._lock:  # the tokenizer is not documented as thread-safe
            rows = np.asarray(self._model.embed(cleaned), dtype=np.float32)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        unit: np.ndarray = (rows / norms).astype(np.float32)
        return unit


@functools.cache
def embedder() -> Embedder | None:
    """The packaged embedding model, or ``None`` without the ``[knowledge]`` extra (or when its
    files are not in the package: then it says so once in the log)."""
    try:
        import wordllama  # type: ignore[import-untyped]
        from wordllama import WordLlama
    except ImportError:
        return None
    try:
        model = WordLlama.load(
            dim=DIMENSIONS, cache_dir=Path(wordllama.__file__).parent, disable_download=True
        )
    except (OSError, ValueError) as error:
        log.warning("knowledge: wordllama is installed but its model cannot load: %s", error)
        return None
    return _WordLlama(model)


def to_bytes(vector: np.ndarray) -> bytes:
    """A vector as stored: float32 bytes."""
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_bytes(data: bytes) -> np.ndarray:
    """A stored vector back as float32."""
    return np.frombuffer(data, dtype=np.float32)


class VectorCache:
    """One matrix of the vectors a reader may see in a project of a store, rebuilt when the
    project's version mark changes (an entry added, changed or removed by any process).

    Matrices are kept per store object (weakly: they go with the store), because two stores of
    one process may hold the same project and reader with the same version mark (an eval's
    in-memory stores, a test's): a key of names alone would answer one from the other's ids."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stores: weakref.WeakKeyDictionary[
            object, dict[tuple[str, str], tuple[Any, list[str], np.ndarray]]
        ] = weakref.WeakKeyDictionary()

    def search(
        self,
        store: object,
        key: tuple[str, str],
        version: Any,
        load: Callable[[], list[tuple[str, bytes]]],
        query: np.ndarray,
        *,
        limit: int,
        minimum: float,
    ) -> list[tuple[str, float]]:
        """The ``limit`` ids most similar to ``query`` with a cosine of at least ``minimum``
        among the vectors ``load`` reads from ``store`` for ``key`` (project, reader)."""
        with self._lock:
            cached = self._stores.get(store, {}).get(key)
        if cached is None or cached[0] != version:
            pairs = [(i, v) for i, v in load() if len(v) == DIMENSIONS * 4]
            ids = [entry_id for entry_id, _ in pairs]
            # one buffer read as rows: a third of the time of stacking an array per vector
            matrix = from_bytes(b"".join(vector for _, vector in pairs)).reshape(-1, DIMENSIONS)
            cached = (version, ids, matrix)
            with self._lock:
                matrices = self._stores.setdefault(store, {})
                if len(matrices) > 64:
                    matrices.clear()
                matrices[key] = cached
        _, ids, matrix = cached
        if not ids:
            return []
        # numpy's own loop, not BLAS: a product this small gains nothing from BLAS threads, and
        # on a busy machine waiting for its second thread made a 0.2 ms product take 10-20 ms
        scores = np.einsum("ij,j->i", matrix, query.astype(np.float32))
        count = min(limit, len(ids))
        best = np.argpartition(-scores, count - 1)[:count]
        ranked = sorted(best, key=lambda index: -float(scores[index]))
        return [(ids[i], float(scores[i])) for i in ranked if scores[i] >= minimum]
