"""connect() on a schema it cannot use says why, instead of giving an empty project."""

from __future__ import annotations

import pytest
from graphql import build_schema

from gmchat_nb import connect
from gmchat_nb.core.project import NoManagersError


async def test_a_schema_without_managers_is_refused_with_the_reason() -> None:
    schema = build_schema(
        "type User { name: String }\n"
        "type Query { hello: String, users: [User], user(id: ID!): User }"
    )
    with pytest.raises(NoManagersError) as refused:
        await connect(schema)
    message = str(refused.value)
    assert message.startswith("No managers were recognised in this schema.")
    assert "hello: String, users: [User], user: User" in message
    assert "PartTypePage {items, pageInfo {totalCount}}" in message


async def test_a_manager_shaped_schema_connects(sample_schema: object) -> None:
    project = await connect(sample_schema)
    try:
        assert "Part" in project.managers
    finally:
        await project.aclose()
