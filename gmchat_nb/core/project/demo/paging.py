"""One list page: argument checks with GeneralManager's messages, SQL, and the page object."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from graphql import GraphQLError

from .catalog import ListLink, Model
from .lookups import LookupTables
from .spec import DemoSpec
from .sql import compile_selection
from .store import Store

__all__ = ["resolve_page"]


def resolve_page(
    store: Store,
    tables: LookupTables,
    spec: DemoSpec,
    model: Model,
    args: Mapping[str, Any],
    scope: tuple[ListLink, int] | None = None,
) -> dict[str, object]:
    """``{items, pageInfo}`` for ``xList(page, pageSize, filter, exclude, orderBy)`` arguments.

    An omitted ``pageSize`` means ``spec.default_page_size`` and is reported as such in
    ``pageInfo.pageSize`` (observed GeneralManager behaviour). A page past the end is empty but
    keeps the filtered ``totalCount``.
    """
    page = args.get("page")
    page_size = args.get("pageSize")
    page = 1 if page is None else page
    page_size = spec.default_page_size if page_size is None else page_size
    if page_size <= 0:
        raise GraphQLError("pageSize must be a positive integer")
    if page_size > spec.max_page_size:
        raise GraphQLError(f"pageSize must not exceed {spec.max_page_size}")
    if page <= 0:
        raise GraphQLError("page must be a positive integer")
    order_by: Sequence[Mapping[str, object]] | None = args.get("orderBy")
    selection = compile_selection(
        tables,
        model,
        filter=args.get("filter"),
        exclude=args.get("exclude"),
        order_by=order_by,
        scope=scope,
    )
    total, rows = store.page(model, selection, page_size, (page - 1) * page_size)
    return {
        "items": rows,
        "pageInfo": {
            "totalCount": total,
            "pageSize": page_size,
            "currentPage": page,
            "totalPages": math.ceil(total / page_size),
        },
    }
