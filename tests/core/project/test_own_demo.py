"""A user can describe a toy project of their own in a few lines (the README's example)."""

from __future__ import annotations

from gmchat_nb.core.project import LocalExecutor, Project
from gmchat_nb.core.project.demo import DemoSpec, Field, ManagerSpec, ToOne, build_demo


async def test_a_hand_written_spec_becomes_a_queryable_project() -> None:
    spec = DemoSpec(
        "shop",
        (
            ManagerSpec(
                "Customer",
                "People who buy.",
                (Field("name", "str", required=True),),
                rows=({"id": 1, "name": "Ada"},),
            ),
            ManagerSpec(
                "Order",
                "What they bought.",
                (Field("total", "float"),),
                relations=(ToOne("customer", "Customer"),),
                rows=({"id": 1, "total": 9.5, "customer": 1},),
                mutations=True,
            ),
        ),
    )
    backend = build_demo(spec)
    project = Project(
        LocalExecutor(backend.schema), allowed_mutations=["createOrder"], on_close=backend.close
    )
    try:
        created = await project.call_tool(
            "mutate", {"mutation": "createOrder", "input": {"total": 3, "customer_id": 1}}
        )
        assert created["data"]["Order"]["id"] == "2"
        result = await project.call_tool(
            "query",
            {"manager": "customers", "fields": ["name", {"orders": ["total"]}]},
        )
        assert result["data"] == [{"name": "Ada", "orderList": [{"total": 9.5}, {"total": 3.0}]}]
        path = await project.call_tool(
            "find_path", {"from_manager": "Order", "to_manager": "Customer"}
        )
        assert path["path"] == ["customer"]
    finally:
        await project.aclose()
