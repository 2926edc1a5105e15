"""A graphene schema in the older flat shape of GeneralManager's own eval fixture ("toy").

It stands in for servers we do not control: `…managerList` roots, no ids, plain list relations
and flat filters such as `parts_Material_Name_Icontains`. Seed data as GeneralManager's fixture.
"""

from __future__ import annotations

from typing import Any

import graphene

MATERIALS = [
    {"name": "Steel", "density": 7.8},
    {"name": "Aluminum", "density": 2.7},
    {"name": "Cobalt", "density": 8.9},
]
PARTS = [
    {"name": "Bolt", "material": MATERIALS[0]},
    {"name": "Bearing", "material": MATERIALS[1]},
    {"name": "Gear", "material": MATERIALS[2]},
]
PROJECTS = [{"name": "Apollo", "parts": [PARTS[2]]}, {"name": "Mercury", "parts": [PARTS[1]]}]


class MaterialType(graphene.ObjectType):  # type: ignore[misc]
    """Materials used in manufacturing."""

    name = graphene.String()
    density = graphene.Float()


class PartType(graphene.ObjectType):  # type: ignore[misc]
    """Inventory parts catalog."""

    name = graphene.String()
    material = graphene.Field(MaterialType)


class ProjectType(graphene.ObjectType):  # type: ignore[misc]
    """Engineering projects."""

    name = graphene.String()
    parts = graphene.List(PartType)


class PageInfoType(graphene.ObjectType):  # type: ignore[misc]
    total_count = graphene.Int(required=True)


def _page(item_type: type) -> type:
    return type(
        item_type.__name__.replace("Type", "PageType"),
        (graphene.ObjectType,),
        {
            "items": graphene.NonNull(graphene.List(item_type)),
            "page_info": graphene.NonNull(PageInfoType),
        },
    )


class MaterialFilter(graphene.InputObjectType):  # type: ignore[misc]
    name = graphene.String()
    name__icontains = graphene.String()
    density__gt = graphene.Float()


class PartFilter(graphene.InputObjectType):  # type: ignore[misc]
    name = graphene.String()
    material__name = graphene.String()
    material__name__icontains = graphene.String()


class ProjectFilter(graphene.InputObjectType):  # type: ignore[misc]
    name = graphene.String()
    name__icontains = graphene.String()
    parts__name = graphene.String()
    parts__material__name = graphene.String()
    parts__material__name__icontains = graphene.String()


def _values(row: Any, path: list[str]) -> list[Any]:
    """Every value at ``path`` (lists fan out, as a Django join would)."""
    if not path:
        return [row]
    value = row.get(path[0]) if isinstance(row, dict) else None
    rows = value if isinstance(value, list) else [value]
    return [found for item in rows if item is not None for found in _values(item, path[1:])]


def _matches(row: dict[str, Any], filters: dict[str, Any]) -> bool:
    for key, wanted in filters.items():
        *path, last = key.split("__")
        lookup = last if last in ("icontains", "gt") else "exact"
        if lookup == "exact":
            path.append(last)
        values = _values(row, path)
        if lookup == "icontains":
            ok = any(str(wanted).lower() in str(v).lower() for v in values)
        elif lookup == "gt":
            ok = any(v > wanted for v in values)
        else:
            ok = any(v == wanted for v in values)
        if not ok:
            return False
    return True


def _resolver(rows: list[dict[str, Any]]) -> Any:
    def resolve(
        root: Any, info: Any, filter: Any = None, page_size: int | None = None, page: int = 1
    ) -> dict[str, Any]:
        chosen = [row for row in rows if _matches(row, dict(filter or {}))]
        start = (page - 1) * (page_size or len(chosen) or 1)
        window = chosen[start : start + page_size] if page_size else chosen[start:]
        return {"items": window, "page_info": {"total_count": len(chosen)}}

    return resolve


class Query(graphene.ObjectType):  # type: ignore[misc]
    materialmanager_list = graphene.Field(
        _page(MaterialType),
        filter=MaterialFilter(),
        page_size=graphene.Int(),
        page=graphene.Int(default_value=1),
    )
    partmanager_list = graphene.Field(
        _page(PartType),
        filter=PartFilter(),
        page_size=graphene.Int(),
        page=graphene.Int(default_value=1),
    )
    projectmanager_list = graphene.Field(
        _page(ProjectType),
        filter=ProjectFilter(),
        page_size=graphene.Int(),
        page=graphene.Int(default_value=1),
    )

    resolve_materialmanager_list = staticmethod(_resolver(MATERIALS))
    resolve_partmanager_list = staticmethod(_resolver(PARTS))
    resolve_projectmanager_list = staticmethod(_resolver(PROJECTS))


def _dict_resolvers() -> None:
    """graphene's default resolver reads attributes; these rows are dicts."""
    for object_type in (MaterialType, PartType, ProjectType, PageInfoType):
        for name in object_type._meta.fields:
            setattr(
                object_type,
                f"resolve_{name}",
                staticmethod(lambda root, info, _n=name: root.get(_n)),
            )
    for page in Query._meta.fields.values():
        page_type = page.type
        for name in page_type._meta.fields:
            setattr(
                page_type, f"resolve_{name}", staticmethod(lambda root, info, _n=name: root.get(_n))
            )


_dict_resolvers()
toy_schema = graphene.Schema(query=Query)
