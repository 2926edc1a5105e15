"""Spec validation, named demos and file-backed databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gmchat_nb.core.project.demo import (
    DEMO_NAMES,
    DemoSpec,
    Field,
    ManagerSpec,
    ToMany,
    ToOne,
    build_demo,
    demo_spec,
    inventory_spec,
)

from .helpers import data


def _spec(*managers: ManagerSpec) -> DemoSpec:
    return DemoSpec(name="custom", managers=managers)


def test_demo_spec_by_name() -> None:
    assert DEMO_NAMES == ("inventory", "large", "toy", "synthetic")
    assert demo_spec("inventory") == inventory_spec()
    assert len(demo_spec("large", manager_count=3).managers) == 3
    with pytest.raises(ValueError, match="inventory, large"):
        demo_spec("nope")


def test_custom_spec_with_defaults_and_page_sizes() -> None:
    spec = DemoSpec(
        name="tiny",
        managers=(
            ManagerSpec(
                name="Tag",
                description="Tags.",
                fields=(Field("label", "str", required=True), Field("weight", "int", default=5)),
                rows=tuple({"id": i, "label": f"t{i}"} for i in range(1, 8)),
            ),
            ManagerSpec(
                name="Note",
                description="Notes.",
                fields=(Field("text", "str"),),
                relations=(ToMany("tags", "Tag"),),
                rows=({"id": 1, "text": "hello", "tags": [1, 2]},),
            ),
        ),
        default_page_size=3,
        max_page_size=5,
    )
    with build_demo(spec) as backend:
        page = data(backend, "{ tagList { items { weight } pageInfo { pageSize totalPages } } }")
        assert page["tagList"] == {
            "items": [{"weight": 5}] * 3,
            "pageInfo": {"pageSize": 3, "totalPages": 3},
        }
        result = data(backend, '{ note(id: "1") { tagsList { items { label } } } }')
        assert result["note"]["tagsList"]["items"] == [{"label": "t1"}, {"label": "t2"}]
        assert data(
            backend, "{ tagList(filter: {noteList: {any: {}}}) { pageInfo { totalCount } } }"
        ) == {"tagList": {"pageInfo": {"totalCount": 2}}}


@pytest.mark.parametrize(
    ("managers", "message"),
    [
        ((ManagerSpec("part", "", ()),), "PascalCase"),
        ((ManagerSpec("Part", "", ()), ManagerSpec("Part", "", ())), "twice"),
        ((ManagerSpec("Part", "", (Field("Name", "str"),)),), "snake_case"),
        ((ManagerSpec("Part", "", (Field("a__b", "str"),)),), "snake_case"),
        ((ManagerSpec("Part", "", (Field("price", "measurement"),)),), "unit"),
        ((ManagerSpec("Part", "", (), (ToOne("owner", "Nobody"),)),), "unknown target"),
        (
            (
                ManagerSpec(
                    "Part", "", (Field("material_id", "str"),), (ToOne("material", "Part"),)
                ),
            ),
            "materialId",
        ),
        (
            (ManagerSpec("Part", "", (Field("n", "int"),), rows=({"id": 1, "n": "x"},)),),
            "does not fit type int",
        ),
        ((ManagerSpec("Part", "", (), rows=({"id": 1, "bogus": 1},)),), "unknown keys"),
        ((ManagerSpec("Part", "", (), rows=({"id": 1}, {"id": 1})),), "repeat"),
        (
            (ManagerSpec("Part", "", (), (ToOne("up", "Part"),), rows=({"id": 1, "up": 2},)),),
            "no Part",
        ),
        (
            (ManagerSpec("Part", "", (Field("d", "date"),), rows=({"id": 1, "d": "2025-02-30"},)),),
            "date",
        ),
        (
            (
                ManagerSpec("Part", "", ()),
                ManagerSpec("PartRelation", "", (), (ToMany("parts", "Part"),)),
            ),
            "PartRelationOrder",
        ),
        ((ManagerSpec("Measurement", "", ()),), "MeasurementType"),
    ],
)
def test_invalid_specs_are_rejected(managers: tuple[ManagerSpec, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_demo(_spec(*managers))


def test_file_database_is_reseeded(tmp_path: Path) -> None:
    path = tmp_path / "demo.sqlite3"
    with build_demo(inventory_spec(), path=path) as backend:
        data(backend, 'mutation { deletePart(id: "1") { success } }')
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT COUNT(*) FROM part").fetchone() == (27,)
    with build_demo(inventory_spec(), path=str(path)) as backend:
        assert data(backend, '{ part(id: "1") { name } }') == {"part": {"name": "Bolt"}}
