"""The project layer: schema index, search, paths, query compiler, executors, demo projects."""

from __future__ import annotations

from .compiler import QueryCompiler, QueryPlan
from .connect import NoManagersError, connect, demo_project
from .errors import ToolError
from .executor import LocalExecutor, ProjectConnectionError, RemoteExecutor
from .index import ManagerInfo, SchemaIndex, UnknownExposedManagerError
from .mutations import PreparedMutation
from .project import Project, QueryOutcome, WithheldMutationError

__all__ = [
    "LocalExecutor",
    "ManagerInfo",
    "NoManagersError",
    "PreparedMutation",
    "Project",
    "ProjectConnectionError",
    "QueryCompiler",
    "QueryOutcome",
    "QueryPlan",
    "RemoteExecutor",
    "SchemaIndex",
    "ToolError",
    "UnknownExposedManagerError",
    "WithheldMutationError",
    "connect",
    "demo_project",
]
