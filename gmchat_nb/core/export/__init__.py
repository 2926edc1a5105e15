"""A conversation exported as a notebook that re-runs (``Chat.to_notebook``, ``gmchat export``,
``GET {url}conversations/{id}/notebook``, the widget's and the side panel's **Export as
notebook**): built from the store alone, the queries from the requests they journaled.

- :mod:`.source` -- what an export reads of a conversation, in four store reads.
- :mod:`.notebook` -- :func:`conversation_notebook` and :func:`notebook_text`: the cells, in the
  journal's order.
- :mod:`.cells` -- the code cells: parameters, connection, each query and its row count check,
  each chart (nothing from a model or from data but as a Python literal).
- :mod:`.records` -- the Markdown cells: title, questions, answers with their evidence,
  changes as records (never code).
- :mod:`.markdown` -- text from a model or data made inert in Markdown (no HTML, images, math
  or links but to web pages).
"""

from __future__ import annotations

from .notebook import conversation_notebook, notebook_text
from .source import ExportError

__all__ = ["ExportError", "conversation_notebook", "notebook_text"]
