"""GeneralManager's name derivations, reproduced so the demo schema spells names like a real one.

GeneralManager snake-cases the class name and Graphene camel-cases the result, so
``PurchaseOrder`` becomes ``purchaseOrder``; Python field names go through the same camel-casing.
"""

from __future__ import annotations

import re

__all__ = ["camel", "pascal", "pascal_to_snake", "plural"]

_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def pascal_to_snake(name: str) -> str:
    """``PurchaseOrder`` -> ``purchase_order``."""
    return _BOUNDARY.sub("_", name).lower()


def camel(snake: str) -> str:
    """Graphene's ``to_camel_case``: ``unit_price`` -> ``unitPrice``."""
    head, *rest = snake.split("_")
    return head + "".join(part.capitalize() if part else "_" for part in rest)


def pascal(name: str) -> str:
    """Upper-case the first letter: ``partsList`` -> ``PartsList``."""
    return name[:1].upper() + name[1:]


def plural(noun: str) -> str:
    """A small English plural for generated descriptions (``Battery`` -> ``Batteries``)."""
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"
