"""The access stage: visibility and permission, before anything runs.

* A caller's budget (``CallScope.admit``: an agent's ``requests``) may refuse the call.
* A manager the project does not expose is an unknown manager, told apart from a missing one
  nowhere: every manager an argument names (``manager``, ``from_manager``, ``to_manager``) is
  resolved against the project's visible index, with the index's own "did you mean" error, so
  a hidden name is refused before any executor sees it, whichever executor runs the tool.
* ``mutate`` needs an authenticated caller, and its call is validated completely (the
  allow-list, the mutation's name, its input's names and types) before anyone is asked: the
  prepared change rides on the record to the intent stage and the execution.
"""

from __future__ import annotations

from ..project.errors import ToolError
from ..project.tools import TOOLS
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["MANAGER_ARGUMENTS", "AccessStage"]

MANAGER_ARGUMENTS = ("manager", "from_manager", "to_manager")
"""The registry tools' arguments that name a manager."""

_NAMING_TOOLS = frozenset({TOOLS.get_manager_schema.name, TOOLS.find_path.name, TOOLS.query.name})


class AccessStage(Stage):
    name = "access"

    def check(self, record: ToolCallRecord, scope: CallScope) -> None:
        if scope.admit is not None and (refusal := scope.admit()) is not None:
            record.answer(self.name, refusal)
            return
        project = scope.project
        if project is None:  # a stubbed world: its tools know what they expose
            return
        name = record.name
        if name == TOOLS.mutate.name:
            self._change(record, scope)
            return
        if name not in _NAMING_TOOLS:
            return
        args = record.args
        try:
            for argument in MANAGER_ARGUMENTS:
                if argument in args:
                    project.index.resolve(args[argument], argument=argument)
        except ToolError as error:
            record.answer(self.name, error.to_result())

    def _change(self, record: ToolCallRecord, scope: CallScope) -> None:
        if not scope.authenticated:
            record.refuse(
                self.name,
                "authentication_required",
                "Chat mutations require an authenticated user.",
            )
            return
        assert scope.project is not None
        args = record.args
        try:
            record.prepared = scope.project.mutation_compiler.prepare(
                args.get("mutation"), args.get("input"), scope.allowed_mutations
            )
        except ToolError as error:
            record.answer(self.name, error.to_result())
