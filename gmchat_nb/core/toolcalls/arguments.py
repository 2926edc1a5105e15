"""The arguments stage: a call's name and arguments checked against the tool's declaration.

A call whose arguments a provider could not decode, that names a tool its caller is not
offered, whose arguments are no JSON object or nest deeper than
:data:`~gmchat_nb.core.text.MAX_JSON_DEPTH` (a provider's were bounded as they were decoded;
an agent's and a terminal's are checked here), or that the tool's declaration refuses (an argument
it does not take, one it needs, one of the wrong type: :func:`~.tools.check_call`) is answered
here with an ``invalid_arguments`` or ``unknown_tool`` error the model can correct. Arguments
from outside a provider's decoder (an agent's, a terminal's) have lone surrogates replaced
first, so what is stored and logged can be encoded.
"""

from __future__ import annotations

import difflib
from typing import Any

from ..charts.tool import CHART
from ..project.errors import ToolError
from ..project.names import MAX_NAME_LENGTH, clip
from ..project.tools import TOOLS, check_call
from ..text import MAX_JSON_DEPTH, clean_json, json_depth_exceeds
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["ArgumentsStage", "outside_arguments"]


class ArgumentsStage(Stage):
    name = "arguments"

    def check(self, record: ToolCallRecord, scope: CallScope) -> None:
        call = record.call
        if call.error is not None:  # the provider could not decode the arguments
            message = call.error if call.name == TOOLS.mutate.name else f"{call.name}: {call.error}"
            record.refuse(self.name, "invalid_arguments", message)
            return
        name: Any = call.name
        if scope.offered is not None and name not in scope.offered:
            record.refuse(self.name, "unknown_tool", _not_offered(name, scope.offered))
            return
        if scope.kind == "turn":
            # a provider's arguments were bounded and made storable as they were decoded
            # (core/providers/completion): only their shape is left to check
            args: Any = call.args
            if not isinstance(args, dict):
                record.refuse(self.name, "invalid_arguments", _not_an_object(name))
                return
        else:
            given = outside_arguments(name, call.args)
            if isinstance(given, str):
                record.refuse(self.name, "invalid_arguments", given)
                return
            args = given
            if args is not call.args:
                record.call = type(call)(call.id, call.name, args)
        if scope.project is None or name == CHART.name:
            return  # a stubbed world's tools, and the chart tool, check their own arguments
        if name == TOOLS.mutate.name:
            _check_change(record, self.name)
            return
        try:
            check_call(scope.project, name, args)
        except ToolError as error:
            record.answer(self.name, error.to_result())
        else:
            record.checked = True


def outside_arguments(name: Any, args: Any) -> dict[str, Any] | str:
    """Arguments that came from outside a provider's decoder (an agent's, a terminal's) as a
    storable JSON object (lone surrogates replaced), or why they are not one: no object, or
    nesting deeper than :data:`~gmchat_nb.core.text.MAX_JSON_DEPTH` (checked before walking)."""
    if not isinstance(args, dict):
        return _not_an_object(name)
    if json_depth_exceeds(args):
        return f"The arguments of {clip(name)} nest deeper than {MAX_JSON_DEPTH} levels."
    cleaned: dict[str, Any] = clean_json(args)
    return cleaned


def _not_an_object(name: Any) -> str:
    return (
        f"The arguments of {clip(name) if isinstance(name, str) else name} must be a JSON object."
    )


def _check_change(record: ToolCallRecord, stage: str) -> None:
    """``mutate`` takes ``mutation`` and ``input`` (the access stage validates them fully)."""
    args = record.args
    if set(args) - {"mutation", "input"} or "mutation" not in args:
        record.refuse(
            stage,
            "invalid_arguments",
            f"{TOOLS.mutate.name} takes 'mutation' and 'input', e.g. {{\"mutation\": "
            '"createPart", "input": {"name": "Bolt"}}.',
        )


def _not_offered(name: Any, offered: tuple[str, ...]) -> str:
    """What a caller is told of a tool it is not offered, naming only the offered ones."""
    tools = ", ".join(offered)
    if not isinstance(name, str):
        return f"Tool names are strings, not {type(name).__name__}. Tools: {tools}."
    close = difflib.get_close_matches(name[:MAX_NAME_LENGTH], list(offered), n=2)
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    return f"Unknown tool {clip(name)!r}.{hint} Tools: {tools}."
