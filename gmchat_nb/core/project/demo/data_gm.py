"""GeneralManager 0.87's eval fixtures, with the conventions a real GeneralManager server has.

GM's own ``toy`` fixture is a hand-built schema without ids, page wrappers or nested filters, and
its ``large`` fixture 150 synthetic managers (``general_manager/chat/evals/fixtures.py``). These
specs hold the same managers and rows, so GM's eval datasets for those fixtures run here as they
are (``python -m gmchat_nb.evals --fixture toy``), but served the way GeneralManager generates a
schema: ``materialList(page, pageSize, filter, exclude, orderBy)``, ids, nested relation filters.
"""

from __future__ import annotations

from .data_large import check_size
from .spec import DemoSpec, Field, ManagerSpec, ToMany, ToOne

__all__ = ["gm_large_spec", "gm_toy_spec"]


def gm_toy_spec() -> DemoSpec:
    """Material (Steel, Aluminum, Cobalt), Part (Bolt, Bearing, Gear), Project (Apollo, Mercury).

    No project contains Bolt or Steel; Material has no path to Project but through Part.
    """
    material = ManagerSpec(
        name="Material",
        description="Materials used in manufacturing.",
        fields=(
            Field("name", "str", required=True, description="Material name."),
            Field("density", "float", description="Density in g/cm3."),
        ),
        rows=(
            {"id": 1, "name": "Steel", "density": 7.8},
            {"id": 2, "name": "Aluminum", "density": 2.7},
            {"id": 3, "name": "Cobalt", "density": 8.9},
        ),
    )
    part = ManagerSpec(
        name="Part",
        description="Inventory parts catalog.",
        fields=(Field("name", "str", required=True, description="Part name."),),
        relations=(ToOne("material", "Material", description="Material the part is made of."),),
        rows=(
            {"id": 1, "name": "Bolt", "material": 1},
            {"id": 2, "name": "Bearing", "material": 2},
            {"id": 3, "name": "Gear", "material": 3},
        ),
    )
    project = ManagerSpec(
        name="Project",
        description="Engineering projects.",
        fields=(Field("name", "str", required=True, description="Project name."),),
        relations=(ToMany("parts", "Part", description="Parts used by the project."),),
        rows=(
            {"id": 1, "name": "Apollo", "parts": [3]},
            {"id": 2, "name": "Mercury", "parts": [2]},
        ),
    )
    return DemoSpec(name="toy", managers=(material, part, project))


def gm_large_spec(manager_count: int = 150, chain_length: int = 8) -> DemoSpec:
    """``SyntheticManager01`` ... ``SyntheticManager150``: one active row each; managers 01 to
    ``chain_length - 1`` link to the next through ``next_item`` (01 -> ... -> 08).

    Raises :class:`ValueError` for the sizes :func:`large_spec` refuses.
    """
    check_size(manager_count, chain_length)
    names = [f"SyntheticManager{index:02d}" for index in range(1, manager_count + 1)]
    managers = []
    for position, name in enumerate(names, start=1):
        number = f"{position:02d}"
        row: dict[str, object] = {
            "id": 1,
            "name": f"{name} record",
            "code": f"SM{number}-001",
            "status": "active",
        }
        relations: tuple[ToOne, ...] = ()
        if position < chain_length and position < manager_count:
            relations = (ToOne("next_item", names[position], description="The next manager."),)
            row["next_item"] = 1
        managers.append(
            ManagerSpec(
                name=name,
                description=f"Synthetic manager {number} for large schema discovery tests.",
                fields=(
                    Field("name", "str", required=True, description="Record name."),
                    Field("code", "str", description="Record code."),
                    Field("status", "str", description="Record status."),
                ),
                relations=relations,
                rows=(row,),
            )
        )
    return DemoSpec(name="synthetic", managers=tuple(managers))
