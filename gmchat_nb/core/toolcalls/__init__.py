"""One path for every tool call: the tool-call pipeline and its stages.

- :mod:`.pipeline` -- :class:`ToolCallPipeline`, the chain in its one written order
  (:data:`STAGES`), and what it does with a change a person decides.
- :mod:`.scope` -- :class:`CallScope`, what one caller's calls share and for how long (a turn,
  an agent's session or time window, a terminal's call).
- :mod:`.record` -- :class:`ToolCallRecord`, one call on its way through the stages.
- One module a stage: :mod:`.arguments`, :mod:`.access`, :mod:`.hooks`, :mod:`.loop_guard`,
  :mod:`.intent`, :mod:`.execute`, :mod:`.evidence`, :mod:`.reference`, :mod:`.scan`,
  :mod:`.auditing`, :mod:`.tracing` (:mod:`.stage` is what they are).
"""

from __future__ import annotations

from .arguments import outside_arguments
from .pipeline import EXECUTE, STAGES, Decided, ToolCallPipeline, UnknownStage
from .record import ToolCallRecord
from .scan import envelope
from .scope import CallScope, HookSink, Origin, ReferenceCall, ScopeKind, ToolExecutor

__all__ = [
    "EXECUTE",
    "STAGES",
    "CallScope",
    "Decided",
    "HookSink",
    "Origin",
    "ReferenceCall",
    "ScopeKind",
    "ToolCallPipeline",
    "ToolCallRecord",
    "ToolExecutor",
    "UnknownStage",
    "envelope",
    "outside_arguments",
]
