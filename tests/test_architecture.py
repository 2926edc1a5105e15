"""The package's shape, read from its source with ``ast``: no module over 600 lines (nor over
400 without a reason at its top), imports that only go down the layers of docs/architecture.md
("surfaces → session → loop → tools → project → executor"; ``core`` never imports a surface or a
notebook/server library), no cycle of module-level imports, and one home for each concern
(composition, tool names, event renderers).

What counts as an import: every ``import`` and ``from … import`` statement in a module, relative
ones resolved. One inside a function (a *lazy* import) runs only when called, so it cannot form an
import cycle, but it still ties the module to what it imports: it counts for the layers, not for
cycles. The same holds for one under ``if TYPE_CHECKING:`` (*type-only*). Imports made with
``importlib`` are not seen.
"""

from __future__ import annotations

import ast
import re
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import gmchat_nb
from gmchat_nb.core.events import EVENT_TYPES, ChatEvent

PACKAGE_DIR = Path(gmchat_nb.__file__).resolve().parent
MAX_LINES = 600

# The layers, low to high. A module may import modules of its own unit (the package or module
# named here that holds it) and of every unit in a lower layer. Units in the same layer are peers
# that stay independent of each other: neither imports the other.
LAYERS: tuple[tuple[str, ...], ...] = (
    # The one importer of dotted paths that settings give (hooks, permission, audit.logger,
    # planned.catalog, provider classes): it imports nothing of gmchat_nb.
    ("gmchat_nb.core.dotted",),
    # The built front end's record (the build hook loads it by path: standard library only).
    ("gmchat_nb._frontend",),
    # Foundations: vocabularies and helpers that import nothing of gmchat_nb but the importer.
    (
        "gmchat_nb.core",
        "gmchat_nb.core.text",
        "gmchat_nb.core.dsn",
        "gmchat_nb.core.digest",
        "gmchat_nb.core.events",
        "gmchat_nb.core.frames",
        "gmchat_nb.core.audit",
    ),
    # A turn's trace (the record of what it did, sanitized as the audit is), then its export to
    # OpenTelemetry.
    ("gmchat_nb.core.trace",),
    ("gmchat_nb.core.telemetry",),
    # The project and its API: schema index, compiler, executors, the tools, demo projects.
    ("gmchat_nb.core.project",),
    # Charts of a turn's query results: intents, specs built from the rows, the chart tool.
    ("gmchat_nb.core.charts",),
    # A turn's defences, pure and deterministic: data kept as data, the loop guard, the
    # completion gates (they read the tool declarations).
    ("gmchat_nb.core.guards",),
    # What works on a project, each on its own: the model adapters, the system prompt and the
    # settings (which check allowed mutations against a project).
    ("gmchat_nb.core.providers", "gmchat_nb.core.prompt", "gmchat_nb.core.settings"),
    # One path for every tool call: the pipeline's stages and the scope they share (its callers,
    # the engines, the agent toolbox and ``gmchat tool``, are above it).
    ("gmchat_nb.core.toolcalls",),
    # What a turn's engines share: its state, limits and the session they are driven through.
    ("gmchat_nb.core.turn_state",),
    # The tool loop's side of its calls: announced, counted, kept, confirmed.
    ("gmchat_nb.core.loop_calls",),
    # One turn's engines.
    ("gmchat_nb.core.loop", "gmchat_nb.core.planned"),
    # Persistence belongs to the session: nothing below it (loop, providers, project and its tools)
    # may reach the store. Beside it and apart, the limiter of requests, tokens and cost: it
    # counts in a store through its own protocol, and the store is handed its decision on a turn's
    # budgets (``TurnStart.decide``) rather than importing it.
    ("gmchat_nb.core.store", "gmchat_nb.core.ratelimit"),
    # Who runs a turn, under what lease, how it ends once: the one owner of a turn's life. Beside
    # it and apart, what the analysts taught: knowledge kept in the store, recalled for a turn.
    ("gmchat_nb.core.turns", "gmchat_nb.core.knowledge"),
    ("gmchat_nb.core.session",),
    # The chat's tools for agents (MCP's core, without the SDK): reads, and changes as turns.
    # Beside it and apart, a conversation exported as a notebook: above the session, whose
    # evidence cell it writes per query, it reads the store through core.turns as the surfaces
    # do (never core.store's modules), and every surface that exports calls it.
    ("gmchat_nb.core.agent", "gmchat_nb.core.export"),
    # Charts in Python (``turn.charts``, ``chart_spec``): public API that ``Chat`` builds on.
    ("gmchat_nb.charts",),
    # Surfaces. ``Chat`` is the notebook API the adapters below it wrap; ``Chat.knowledge`` is
    # its knowledge, on the session's book; ``chat_export`` the export of a conversation as a
    # notebook that ``Chat.to_notebook``, ``gmchat export`` and the server's route share.
    ("gmchat_nb.chat_knowledge", "gmchat_nb.chat_export"),
    ("gmchat_nb.chat",),
    # The MCP server over the agent tools (the official SDK), which stdio and the extension serve.
    ("gmchat_nb.mcp_server",),
    (
        "gmchat_nb.widget",
        "gmchat_nb.server_ext",
        "gmchat_nb.terminal",
        "gmchat_nb.cli_knowledge",
    ),
    # ``gmchat agent-token`` and ``gmchat export`` take ``gmchat knowledge``'s ``--user``.
    ("gmchat_nb.cli_agent_tokens", "gmchat_nb.cli_export"),
    # The public API package (``%load_ext`` wires in the widget) and the ``gmchat`` command.
    ("gmchat_nb", "gmchat_nb.cli"),
    # The evaluation runner drives chats through the public API.
    ("gmchat_nb.evals",),
)

CORE_TOP = "gmchat_nb.core.agent"  # the highest layer of core; the surfaces are above it

# Units that stand only for their own ``__init__``, not for the modules inside them.
CONTAINER_UNITS = frozenset({"gmchat_nb", "gmchat_nb.core"})

# Notebook and server libraries that only the surfaces (widget, server_ext) may use.
SURFACE_LIBRARIES = frozenset(
    {"IPython", "ipywidgets", "anywidget", "traitlets", "tornado", "jupyter_server", "mcp"}
)


@dataclass(frozen=True, slots=True)
class Import:
    """One module importing another, as written in the importer's source."""

    importer: str
    imported: str  # a module of the package where it names one, else the dotted name written
    line: int
    lazy: bool  # inside a function: runs when called, not when the importer is imported
    type_only: bool  # under ``if TYPE_CHECKING:``: never runs

    @property
    def eager(self) -> bool:
        """Runs when the importer is imported."""
        return not (self.lazy or self.type_only)

    def describe(self) -> str:
        """``a imports b (line 3, lazily, inside a function)``."""
        notes = [f"line {self.line}"]
        if self.lazy:
            notes.append("lazily, inside a function")
        if self.type_only:
            notes.append("for type checking only")
        return f"{self.importer} imports {self.imported} ({', '.join(notes)})"


def package_modules(package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package."""
    found: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(
    module: str, source: str, known: Iterable[str], *, is_package: bool = False
) -> list[Import]:
    """The imports written in ``source`` (the text of ``module``), relative ones resolved; a
    ``from x import y`` names the module ``x.y`` when ``known`` has one, else ``x``."""
    known = set(known)
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        if node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            origin = ".".join([*base, *([node.module] if node.module else [])])
        else:
            origin = node.module or ""
        return [
            f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin
            for alias in node.names
        ]

    def visit(nodes: Iterable[ast.AST], lazy: bool, type_only: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.extend(
                    Import(module, target, node.lineno, lazy, type_only)
                    for target in dict.fromkeys(targets(node))
                )
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(ast.iter_child_nodes(node), True, type_only)
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.body, lazy, True)
                visit(node.orelse, lazy, type_only)
            else:
                visit(ast.iter_child_nodes(node), lazy, type_only)

    visit([ast.parse(source)], False, False)
    return found


def package_imports(modules: Mapping[str, Path]) -> list[Import]:
    """Every import of every module of the package."""
    return [
        item
        for module, path in modules.items()
        for item in imports_of(
            module, path.read_text(encoding="utf-8"), modules, is_package=path.stem == "__init__"
        )
    ]


def unit_of(module: str) -> str | None:
    """The unit of :data:`LAYERS` that holds ``module``: the longest that names it or a package
    above it (a container unit only names itself); ``None`` outside the layers."""
    units = [unit for layer in LAYERS for unit in layer]
    holders = [
        unit
        for unit in units
        if module == unit or (unit not in CONTAINER_UNITS and module.startswith(unit + "."))
    ]
    return max(holders, key=len, default=None)


def _in_core(module: str) -> bool:
    return module == "gmchat_nb.core" or module.startswith("gmchat_nb.core.")


def _layer_of(unit: str) -> int:
    return next(number for number, layer in enumerate(LAYERS) if unit in layer)


def layer_violations(imports: Iterable[Import]) -> dict[tuple[str, str], str]:
    """(importer, imported) -> what is wrong, for every import of a package module that goes up
    the layers or sideways to a peer."""
    found: dict[tuple[str, str], str] = {}
    for item in imports:
        importer_unit, imported_unit = unit_of(item.importer), unit_of(item.imported)
        if importer_unit is None or imported_unit is None or importer_unit == imported_unit:
            continue
        below, above = _layer_of(importer_unit), _layer_of(imported_unit)
        if above > below:
            what = "a layer above it"
        elif above == below:
            what = f"a peer in its own layer ({imported_unit} and {importer_unit} stay apart)"
        else:
            continue
        found.setdefault((item.importer, item.imported), f"{item.describe()}, {what}")
    return found


def import_cycles(imports: Iterable[Import], modules: Iterable[str]) -> list[list[str]]:
    """The cycles of eager imports between package modules: each strongly connected set of two
    or more modules (or a module importing itself), sorted."""
    modules = set(modules)
    edges: dict[str, set[str]] = {module: set() for module in modules}
    for item in imports:
        if item.eager and item.imported in modules:
            edges[item.importer].add(item.imported)
    # Tarjan's algorithm, iterative so a deep package cannot hit the recursion limit.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    cycles.append(sorted(component))
    return sorted(cycles)


MODULES = package_modules()
IMPORTS = package_imports(MODULES)


# -- size ----------------------------------------------------------------------------------------


def test_no_module_is_over_600_lines() -> None:
    too_long = {
        str(path.relative_to(PACKAGE_DIR.parent)): count
        for path in MODULES.values()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not too_long, f"modules over {MAX_LINES} lines (split them along their seams): " + (
        ", ".join(f"{name} ({count})" for name, count in sorted(too_long.items()))
    )


# -- layers --------------------------------------------------------------------------------------


def test_every_module_has_a_layer() -> None:
    homeless = sorted(module for module in MODULES if unit_of(module) is None)
    assert not homeless, f"modules in no unit of LAYERS (give each a layer): {homeless}"


def test_every_unit_of_the_layers_exists() -> None:
    missing = [unit for layer in LAYERS for unit in layer if unit not in MODULES]
    assert not missing, f"LAYERS names units the package no longer has: {missing}"


def test_imports_only_go_down_the_layers() -> None:
    # None crosses since issue 12 item 8 moved the tools into the project package and made the
    # widget the only side that knows Chat; there is no list of exceptions to grow.
    crossing = [text for _, text in sorted(layer_violations(IMPORTS).items())]
    assert not crossing, "imports that cross the layers of docs/architecture.md:\n" + "\n".join(
        crossing
    )


def test_core_never_imports_a_surface() -> None:
    # The layers hold this too; this names the promise of docs/architecture.md on its own.
    surfaces = {unit for layer in LAYERS[_layer_of(CORE_TOP) + 1 :] for unit in layer}
    crossing = [
        item.describe()
        for item in IMPORTS
        if _in_core(item.importer) and unit_of(item.imported) in surfaces
    ]
    assert not crossing, "\n".join(crossing)


def test_core_never_imports_a_notebook_or_server_library() -> None:
    crossing = [
        item.describe()
        for item in IMPORTS
        if _in_core(item.importer) and item.imported.split(".")[0] in SURFACE_LIBRARIES
    ]
    assert not crossing, "core must not use notebook or server libraries:\n" + "\n".join(crossing)


# A turn's rows (its lifecycle, lease, admission) are the turn owner's: surfaces admit, cancel,
# take over and follow turns through gmchat_nb.core.turns (and sessions), never by hand.
TURN_ROWS = frozenset({"gmchat_nb.core.store.turns", "gmchat_nb.core.store.admission"})


def test_surfaces_never_reach_into_a_turn_s_rows() -> None:
    surfaces = {unit for layer in LAYERS[_layer_of(CORE_TOP) + 1 :] for unit in layer}
    crossing = [
        item.describe()
        for item in IMPORTS
        if unit_of(item.importer) in surfaces and item.imported in TURN_ROWS
    ]
    assert not crossing, "surfaces go through gmchat_nb.core.turns:\n" + "\n".join(crossing)


def test_widget_and_server_extension_never_import_each_other() -> None:
    crossing = [
        item.describe()
        for item in IMPORTS
        if {unit_of(item.importer), unit_of(item.imported)}
        == {"gmchat_nb.widget", "gmchat_nb.server_ext"}
    ]
    assert not crossing, "\n".join(crossing)


# -- cycles --------------------------------------------------------------------------------------


def test_no_cycle_of_module_level_imports() -> None:
    cycles = import_cycles(IMPORTS, MODULES)
    assert not cycles, "modules that import each other at module level:\n" + "\n".join(
        " <-> ".join(cycle) for cycle in cycles
    )


# -- the checks themselves -----------------------------------------------------------------------


KNOWN = {
    "gmchat_nb.core.project",
    "gmchat_nb.core.project.index",
    "gmchat_nb.core.project.names",
    "gmchat_nb.core.loop",
    "gmchat_nb.core.store",
    "gmchat_nb.widget",
    "gmchat_nb.server_ext",
}


def test_relative_imports_resolve_to_package_modules() -> None:
    source = (
        "from .names import clip\n"
        "from . import index\n"
        "from ..loop import ToolLoop\n"
        "import gmchat_nb.core.store\n"
    )
    found = imports_of("gmchat_nb.core.project.compiler", source, KNOWN)

    assert [item.imported for item in found] == [
        "gmchat_nb.core.project.names",
        "gmchat_nb.core.project.index",
        "gmchat_nb.core.loop",
        "gmchat_nb.core.store",
    ]
    package = imports_of("gmchat_nb.core.project", "from .index import X\n", KNOWN, is_package=True)
    assert [item.imported for item in package] == ["gmchat_nb.core.project.index"]


def test_lazy_and_type_only_imports_are_told_apart() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ..store import ChatStore\n"
        "def run():\n"
        "    from ..loop import ToolLoop\n"
        "class Holder:\n"
        "    from .names import clip\n"
    )
    found = {
        item.imported: (item.lazy, item.type_only)
        for item in imports_of("gmchat_nb.core.project.project", source, KNOWN)
    }

    assert found["gmchat_nb.core.store"] == (False, True)
    assert found["gmchat_nb.core.loop"] == (True, False)
    assert found["gmchat_nb.core.project.names"] == (False, False)  # class bodies run at import


def test_an_import_up_the_layers_is_reported() -> None:
    upward = imports_of("gmchat_nb.core.project.search", "from ..store import ChatStore\n", KNOWN)
    sideways = imports_of("gmchat_nb.widget.tables", "from ..server_ext import app\n", KNOWN)
    downward = imports_of("gmchat_nb.core.loop", "from .project import index\n", KNOWN)

    assert list(layer_violations(upward).values()) == [
        "gmchat_nb.core.project.search imports gmchat_nb.core.store (line 1), a layer above it"
    ]
    assert "a peer in its own layer" in next(iter(layer_violations(sideways).values()))
    assert layer_violations(downward) == {}


def test_a_module_level_cycle_is_found_and_a_lazy_one_is_not() -> None:
    modules = ["pkg.a", "pkg.b", "pkg.c"]
    eager = [Import("pkg.a", "pkg.b", 1, False, False), Import("pkg.b", "pkg.a", 1, False, False)]
    lazy = [Import("pkg.b", "pkg.c", 1, False, False), Import("pkg.c", "pkg.b", 9, True, False)]

    assert import_cycles(eager + lazy, modules) == [["pkg.a", "pkg.b"]]
    assert import_cycles(lazy, modules) == []


def test_modules_are_named_by_their_place_in_the_package() -> None:
    assert MODULES["gmchat_nb"] == PACKAGE_DIR / "__init__.py"
    assert MODULES["gmchat_nb.core.store"] == PACKAGE_DIR / "core" / "store" / "__init__.py"
    assert unit_of("gmchat_nb.core.project.demo.schema") == "gmchat_nb.core.project"
    assert unit_of("gmchat_nb.core") == "gmchat_nb.core"
    assert unit_of("gmchat_nb.core.nowhere") is None


# -- composition ---------------------------------------------------------------------------------

# A chat's session is built, and its project connected, by the composition module alone: every
# surface (Chat, the server's runtime, gmchat ask, the evals, later ones) gets them there, so the
# settings mean the same everywhere. What each name is, wherever a module may import it from.
COMPOSITION = "gmchat_nb.core.session.compose"
COMPOSED = {
    "ChatSession(": {
        "gmchat_nb.core.session.ChatSession",
        "gmchat_nb.core.session.chat_session.ChatSession",
    },
    "connect(": {
        "gmchat_nb.connect",
        "gmchat_nb.core.project.connect",
        "gmchat_nb.core.project.connect.connect",
    },
}
# (module, call) -> why it may make the call itself. Keep it short.
COMPOSED_ELSEWHERE = {
    ("gmchat_nb.cli", "connect("): "`gmchat tool` runs one tool on a command-line project, no chat",
}


def test_only_the_composition_module_builds_sessions_and_connects_projects() -> None:
    def bound_names(module: str, tree: ast.Module, is_package: bool) -> dict[str, str]:
        """Local name -> the dotted name it stands for (imports anywhere in the module, and the
        module's own top-level definitions)."""
        package = module if is_package else module.rpartition(".")[0]
        names = {
            node.name: f"{module}.{node.name}"
            for node in tree.body
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    head = alias.name if alias.asname else alias.name.split(".")[0]
                    names[alias.asname or head] = head
            elif isinstance(node, ast.ImportFrom):
                origin = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    origin = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    names[alias.asname or alias.name] = f"{origin}.{alias.name}"
        return names

    def dotted(expr: ast.expr, names: Mapping[str, str]) -> str | None:
        if isinstance(expr, ast.Name):
            return names.get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = dotted(expr.value, names)
            return f"{base}.{expr.attr}" if base else None
        return None

    found: dict[tuple[str, str], list[int]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = bound_names(module, tree, path.stem == "__init__")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                callee = dotted(node.func, names)
                for call, meanings in COMPOSED.items():
                    if callee in meanings:
                        found.setdefault((module, call), []).append(node.lineno)

    # The scan sees the composition module's own calls, so an empty result below means something.
    assert {call for module, call in found if module == COMPOSITION} == set(COMPOSED)
    elsewhere = [
        f"{module} calls {call}...) (lines {', '.join(map(str, lines))})"
        for (module, call), lines in sorted(found.items())
        if module != COMPOSITION and (module, call) not in COMPOSED_ELSEWHERE
    ]
    assert not elsewhere, (
        f"only {COMPOSITION} builds a ChatSession or connects a project (use its "
        "open_session / connect_project):\n" + "\n".join(elsewhere)
    )
    stale = sorted(set(COMPOSED_ELSEWHERE) - set(found))
    assert not stale, f"COMPOSED_ELSEWHERE allows calls no module makes any more: {stale}"


# -- tool names ----------------------------------------------------------------------------------

# Each chat tool is declared once, in the registry module (name, schema, description, access,
# evidence, prompt lines); every other module reads a tool's name from it (TOOLS.find_path.name)
# and never writes the name out as a string.
TOOL_REGISTRY = "gmchat_nb.core.project.tools"
# (module, word) -> (how many times the module writes it, why), for a tool's name that is also
# another word there: each of those strings means the other word, not the tool. Keep it short.
TOOL_WORDS_ELSEWHERE: dict[tuple[str, str], tuple[int, str]] = {
    ("gmchat_nb.core.planned.binding", "query"): (2, "an evidence record's kind"),
    ("gmchat_nb.core.planned.calculations", "query"): (1, "an evidence record's kind"),
    ("gmchat_nb.core.planned.executor", "query"): (2, "a plan requirement's kind"),
    ("gmchat_nb.core.planned.plan", "query"): (6, "a plan requirement's kind and query field"),
    ("gmchat_nb.core.planned.synthesis", "query"): (1, "an evidence record's kind"),
    ("gmchat_nb.core.providers.offline.planning", "query"): (1, "a plan requirement's query key"),
    ("gmchat_nb.core.providers.constrained", "query"): (1, "search_managers' argument"),
    ("gmchat_nb.core.providers.offline.planner", "query"): (1, "search_managers' argument"),
    ("gmchat_nb.core.project.demo.server", "query"): (1, "a GraphQL request body's query"),
    ("gmchat_nb.evals.oracle", "query"): (1, "a plan requirement's query field"),
    ("gmchat_nb.core.charts.intent", "query"): (2, "the chart tool's argument naming a result"),
    ("gmchat_nb.core.charts.tool", "query"): (1, "the chart tool's argument naming a result"),
    ("gmchat_nb.core.knowledge.from_turn", "query"): (
        1,
        "the chart tool's argument naming a result",
    ),
    ("gmchat_nb.core.events", "query"): (1, "the tool_result field journaling a query's request"),
    # The query tool itself, in a module this change left to its owner: it should read TOOLS too.
}


def test_tool_names_are_read_from_the_tool_registry() -> None:
    from gmchat_nb.core.project.tools import TOOLS

    names = frozenset(TOOLS.names)
    found: dict[tuple[str, str], list[int]] = {}
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                found.setdefault((module, node.value), []).append(node.lineno)

    # The scan sees the registry's own declarations, so an empty result below means something.
    assert {word for module, word in found if module == TOOL_REGISTRY} == names
    written = []
    for (module, word), lines in sorted(found.items()):
        allowed, why = TOOL_WORDS_ELSEWHERE.get((module, word), (0, ""))
        if module != TOOL_REGISTRY and len(lines) != allowed:
            note = f" ({allowed} expected: {why})" if allowed else ""
            written.append(f"{module}: {word!r} on lines {', '.join(map(str, lines))}{note}")
    assert not written, (
        f"tool names are declared once, in {TOOL_REGISTRY}: read them from TOOLS "
        "(TOOLS.find_path.name) instead of writing them out:\n" + "\n".join(written)
    )
    stale = sorted(set(TOOL_WORDS_ELSEWHERE) - set(found))
    assert not stale, f"TOOL_WORDS_ELSEWHERE allows words no module writes any more: {stale}"


# -- one renderer per event type on every surface -------------------------------------------


EVENT_CLASSES = {cls.__name__ for cls in typing.get_args(ChatEvent)}
# The widget's view: TypeScript sources, bundled into gmchat_nb/widget/static/ by frontend/.
FRONT_END_SOURCES = PACKAGE_DIR.parent / "frontend" / "src"
FRONT_END_TURN = FRONT_END_SOURCES / "turn.ts"


def event_renderers() -> dict[str, set[str]]:
    """The event types each surface that shows events has a renderer for, read from its table:
    the terminal's ``RENDERERS``, the widget view's ``EVENT_RENDERERS`` (frontend/src/turn.ts)
    and the eval runner's ``TRACE_READERS``."""
    from gmchat_nb.evals.runner import TRACE_READERS
    from gmchat_nb.terminal import RENDERERS

    script = FRONT_END_TURN.read_text()
    table = re.search(r"^export const EVENT_RENDERERS: \w+ = \{\n(.*?)^\};", script, re.M | re.S)
    assert table, f"{FRONT_END_TURN.name} has no EVENT_RENDERERS table"
    view = set(re.findall(r"^  (\w+)\(turn, event\) \{", table.group(1), re.M))
    return {
        "gmchat_nb/terminal.py": set(RENDERERS),
        "frontend/src/turn.ts": view,
        "gmchat_nb/evals/runner.py": set(TRACE_READERS),
    }


def test_every_public_event_type_has_a_renderer_on_every_surface() -> None:
    missing = {
        surface: sorted(set(EVENT_TYPES) - types)
        for surface, types in event_renderers().items()
        if set(EVENT_TYPES) - types
    }
    assert not missing, f"surfaces without a renderer for an event type: {missing}"


def dispatches_on_event_type(test: ast.expr) -> bool:
    """``isinstance(event, ToolCall)`` or ``kind == "tool_call"``: a test of an event's type."""
    if isinstance(test, ast.Call) and getattr(test.func, "id", "") == "isinstance":
        kinds = test.args[1] if len(test.args) == 2 else None
        names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
        return any(getattr(name, "id", "") in EVENT_CLASSES for name in names)
    if isinstance(test, ast.Compare):
        return any(isinstance(c, ast.Constant) and c.value in EVENT_TYPES for c in test.comparators)
    if isinstance(test, ast.BoolOp):
        return any(dispatches_on_event_type(value) for value in test.values)
    return False


def if_chains(source: str) -> list[int]:
    """Lines of ``if …: elif …:`` chains that branch on an event's type."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.If)
        and dispatches_on_event_type(node.test)
        and len(node.orelse) == 1
        and isinstance(node.orelse[0], ast.If)
        and dispatches_on_event_type(node.orelse[0].test)
    ]


# If-chains on an event's type that decide what to do next rather than how to show it.
CONTROL_FLOW_CHAINS = {
    "server_ext/websocket.py": "_track: which confirmation the socket's turn waits for",
}


def test_no_surface_renders_events_through_an_if_chain() -> None:
    """Events are shown and read through tables, never by an if-chain on their type."""
    chains = [
        f"{name}:{line}"
        for path in MODULES.values()
        if (name := str(path.relative_to(PACKAGE_DIR))) not in CONTROL_FLOW_CHAINS
        for line in if_chains(path.read_text())
    ]
    for source in sorted(FRONT_END_SOURCES.rglob("*.ts")):
        for number, line in enumerate(source.read_text().splitlines(), start=1):
            if re.search(r'case "(' + "|".join(EVENT_TYPES) + r')"', line):
                chains.append(f"{source.relative_to(FRONT_END_SOURCES.parent.parent)}:{number}")
    assert not chains, "event types dispatched outside the renderer tables: " + ", ".join(chains)
    for name in CONTROL_FLOW_CHAINS:
        assert if_chains((PACKAGE_DIR / name).read_text()), f"{name} no longer needs its excuse"


def test_the_if_chain_rule_finds_a_chain() -> None:
    chain = "if kind == 'tool_call':\n    pass\nelif kind == 'done':\n    pass\n"
    assert if_chains(chain) == [1]
    assert if_chains("if isinstance(event, Error):\n    failed = True\n") == []


REASONED_LINES = 400
SIZE_REASON = "Over 400 lines: "


def test_a_module_over_400_lines_says_why_at_its_top() -> None:
    """Past 400 lines a module's docstring says why it stays one module (``Over 400 lines: …``);
    past :data:`MAX_LINES` nothing excuses it."""
    unexplained = []
    for name, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > REASONED_LINES:
            docstring = ast.get_docstring(ast.parse(source)) or ""
            if SIZE_REASON not in docstring:
                unexplained.append(f"{name} ({len(source.splitlines())} lines)")
    assert not unexplained, f"modules over {REASONED_LINES} lines without a reason: " + ", ".join(
        sorted(unexplained)
    )


# -- turns through core/turns and the session; budgets decided by the caller ----------------------

STORE = "gmchat_nb.core.store"
RATE_LIMITER = "gmchat_nb.core.ratelimit"


def _within(module: str, unit: str) -> bool:
    return module == unit or module.startswith(unit + ".")


def test_surfaces_see_turns_and_their_records_through_core_turns_and_the_session() -> None:
    # Records, errors, turn states and the store's type come re-exported from gmchat_nb.core.turns
    # (a store is opened by gmchat_nb.core.session's open_store): no surface imports a module of
    # the store, eagerly, lazily or for type checking only.
    surfaces = {unit for layer in LAYERS[_layer_of(CORE_TOP) + 1 :] for unit in layer}
    crossing = [
        item.describe()
        for item in IMPORTS
        if unit_of(item.importer) in surfaces and _within(item.imported, STORE)
    ]
    assert not crossing, (
        f"surfaces import from gmchat_nb.core.turns or gmchat_nb.core.session, never {STORE}:\n"
        + "\n".join(crossing)
    )


def test_the_store_is_handed_the_budget_decision_and_never_imports_the_rate_limiter() -> None:
    # The layers hold this too (the two are peers); this names the promise on its own.
    crossing = [
        item.describe()
        for item in IMPORTS
        if _within(item.importer, STORE) and _within(item.imported, RATE_LIMITER)
    ]
    assert not crossing, (
        f"{STORE} takes the caller's decision on a turn's budgets (TurnStart.decide), it does "
        f"not import {RATE_LIMITER}:\n" + "\n".join(crossing)
    )


# -- one road for every tool call ---------------------------------------------------------------

# Every tool call takes the tool-call pipeline (core/toolcalls): only its execute stage runs a
# tool. The registry module defines run_tool (and Project.call_tool, the data layer's own API,
# dispatches through it there); no other module may name it.
RUN_TOOL_HOMES = frozenset({TOOL_REGISTRY, "gmchat_nb.core.toolcalls.execute"})


def modules_naming(name: str) -> dict[str, list[int]]:
    """Module -> the lines where it names ``name`` (imports it, calls it, reads it)."""
    found: dict[str, list[int]] = {}
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = (
                (isinstance(node, ast.alias) and node.name == name)
                or (isinstance(node, ast.Name) and node.id == name)
                or (isinstance(node, ast.Attribute) and node.attr == name)
            )
            if named:
                found.setdefault(module, []).append(getattr(node, "lineno", 0))
    return found


def test_only_the_pipeline_runs_tools() -> None:
    found = modules_naming("run_tool")
    # the scan sees the execute stage's own call, so an empty result below means something
    assert "gmchat_nb.core.toolcalls.execute" in found
    elsewhere = [
        f"{module} (lines {', '.join(map(str, sorted(set(lines))))})"
        for module, lines in sorted(found.items())
        if module not in RUN_TOOL_HOMES
    ]
    assert not elsewhere, (
        "only the tool-call pipeline's execute stage runs a tool; take the pipeline "
        "(gmchat_nb.core.toolcalls.ToolCallPipeline) instead of run_tool:\n" + "\n".join(elsewhere)
    )


def test_the_pipeline_s_order_is_written_once() -> None:
    from gmchat_nb.core.toolcalls import EXECUTE, STAGES

    # the order the issue and docs/architecture.md give, and every stage has its own module
    assert STAGES == (
        "arguments",
        "access",
        "hooks",
        "loop_guard",
        "intent",
        EXECUTE,
        "evidence",
        "reference",
        "scan",
        "audit",
        "trace",
    )
    doc = (PACKAGE_DIR.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert " → ".join(STAGES) in doc, "docs/architecture.md shows the chain in its order"
