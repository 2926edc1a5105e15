"""The one failure a tool reports: a code to branch on and a message the model can act on."""

from __future__ import annotations

from typing import Any

__all__ = ["ToolError"]


class ToolError(Exception):
    """A tool call that cannot be carried out as asked.

    It never escapes :meth:`Project.call_tool`: there it becomes the tool result
    ``{"status": "error", "code": ..., "message": ..., **details}``. Codes in use:
    ``invalid_arguments``, ``unknown_tool``, ``unknown_manager``, ``unknown_field``,
    ``unknown_filter``, ``invalid_filter``, ``invalid_order``, ``invalid_graphql_request``,
    ``graphql_error``, ``query_timeout``, ``server_unreachable``, ``unknown_mutation``,
    ``mutation_not_allowed``, ``invalid_mutation_input``, ``mutation_failed``.
    """

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = {key: value for key, value in details.items() if value is not None}

    def to_result(self) -> dict[str, Any]:
        """The JSON tool result the model receives."""
        return {"status": "error", "code": self.code, "message": self.message, **self.details}
