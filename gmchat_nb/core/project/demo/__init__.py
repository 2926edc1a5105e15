"""An embedded demo GraphQL project that behaves like a GeneralManager 0.87.1 deployment.

A :class:`DemoSpec` declares managers, fields, relations and rows; :func:`build_demo` turns it
into a seeded SQLite database and a graphql-core schema with GeneralManager's conventions
(``partList(page, pageSize, filter, exclude, orderBy)``, ``PartFilterTypeDepth1``, ``{any, none}``
relation filters, flat mutations returning ``{success, Part}``). :func:`start_server` and
:func:`serve_forever` put it behind HTTP like a real ``/graphql/`` endpoint.

Behaviour worth knowing (GeneralManager leaves some of it to Django, so the demo picks Django on
SQLite where it can):

* String lookups are case-sensitive except ``_Icontains`` (ASCII case folding).
* ``exclude`` keeps rows whose compared value is null, like Django's ``exclude()``; a ``none``
  relation filter inside ``exclude`` is an error, as in GeneralManager.
* A nested filter (``material: {...}`` or ``any: {...}``) needs a related row; ``{}`` means
  "has one", ``none: {}`` means "has none", ``material: null`` means "no material".
* Ordering puts nulls first in ascending order (SQLite) and always ends with ``id``.
* Measurements convert only between identical units and EUR/USD (1 EUR = 1.1 USD).
* Mutation ``fieldErrors`` are keyed by Python field name (``unit_price``), like Django's
  ``message_dict``. Deleting a row nulls foreign keys to it and drops its list links.
"""

from __future__ import annotations

from .backend import DemoBackend, build_demo
from .data_inventory import inventory_spec
from .data_large import large_spec
from .server import serve_forever, start_server
from .spec import DemoSpec, Field, ManagerSpec, ToMany, ToOne
from .specs import DEMO_NAMES, demo_spec

__all__ = [
    "DEMO_NAMES",
    "DemoBackend",
    "DemoSpec",
    "Field",
    "ManagerSpec",
    "ToMany",
    "ToOne",
    "build_demo",
    "demo_spec",
    "inventory_spec",
    "large_spec",
    "serve_forever",
    "start_server",
]
