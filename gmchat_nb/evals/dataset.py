"""Eval datasets in GeneralManager 0.87's YAML format (a list of cases), loaded unmodified.

Every case is ``name``, ``description``, ``tier`` (default 0), ``tags``, ``conversation``
(``[{user: text}, ...]``) and ``expectations``. Our additions: ``project`` (a demo name or a
GraphQL URL, default ``inventory``), ``strategy`` (``legacy`` or ``planned``: the case runs so
whatever the run's default) and ``providers`` (planned roles pinned to provider specs:
``{planner: offline}``; ``executor`` pins both executors), ``budget`` (``{max_cost_usd,
max_tokens}``, either or both: the most the case's turns may cost and use, judged as the
``Budget`` dimension) and the expectation ``chart`` (``{mark, x, y, aggregate}``, any of them:
some chart the turns drew has them). Unknown keys are a :class:`DatasetError` that names the key
and the case.

A dataset may also be a mapping of ``cases`` (that list) and ``knowledge``: verified queries,
definitions and notes in the knowledge import format (``docs/knowledge.md``), inline or as the
path of such a YAML file relative to the dataset's own file. Every case of the dataset runs with
that knowledge imported into its chat's store before its first question.

Over 400 lines: GeneralManager's whole case format, each key checked with an error that
names it, in one reader.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..core.charts import AGGREGATES, MARKS
from ..core.digest import digest
from ..core.knowledge import KnowledgeError
from ..core.knowledge.yaml_io import drafts_of, read_file
from ..core.providers.cassettes import eval_data_dir

__all__ = [
    "Budget",
    "Case",
    "ChartExpectation",
    "Contract",
    "DatasetError",
    "Expectations",
    "ResultSetExpectation",
    "ToolCallExpectation",
    "dataset_dir",
    "load_dataset",
    "resolve_datasets",
]

CASE_KEYS = frozenset(
    {
        "name",
        "description",
        "tier",
        "tags",
        "conversation",
        "expectations",
        "project",
        "strategy",
        "providers",
        "budget",
    }
)
STRATEGIES = ("legacy", "planned")
PIN_KEYS = (
    "planner",
    "executor",
    "simple_executor",
    "complex_executor",
    "synthesizer",
    "fallback_executor",
)
EXPECTATION_KEYS = frozenset(
    {
        "tool_calls",
        "results_contain",
        "results_exclude",
        "answer_contains",
        "answer_excludes",
        "result_set",
        "turns",
        "contract",
        "planned",
        "chart",
    }
)
CONTRACT_KEYS = frozenset({"category", "hard", "strategy"})
HARD_KEYS = frozenset(
    {
        "required_tool_calls",
        "forbidden_tools",
        "results_contain",
        "results_exclude",
        "answer_contains",
        "answer_excludes",
        "unavailable_managers",
    }
)
STRATEGY_KEYS = frozenset({"recommended_tool_calls", "strict_order", "fail_on_deviation"})
RESULT_SET_KEYS = frozenset({"manager", "rows", "fields"})
TOOL_CALL_KEYS = frozenset({"name", "args_contain"})
CHART_KEYS = ("mark", "x", "y", "aggregate")
BUDGET_KEYS = ("max_cost_usd", "max_tokens")


class DatasetError(ValueError):
    """A dataset that does not follow the format (the message names the file, case and key)."""


@dataclass(frozen=True)
class ToolCallExpectation:
    name: str
    args_contain: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResultSetExpectation:
    manager: str
    rows: tuple[Mapping[str, Any], ...]
    fields: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ChartExpectation:
    """A chart some turn must draw: each key given must equal the drawn chart's (its intent as
    applied: an aggregate the rows needed counts as asked); keys left out match anything."""

    mark: str | None = None
    x: str | None = None
    y: str | None = None
    aggregate: str | None = None

    def to_dict(self) -> dict[str, str]:
        """The keys the expectation names."""
        return {key: value for key in CHART_KEYS if (value := getattr(self, key)) is not None}


@dataclass(frozen=True)
class Budget:
    """The most a case (its turns together) may cost in US dollars and use in tokens (input
    and output); ``None`` is no limit. An unknown cost never passes a cost budget."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None

    def to_dict(self) -> dict[str, float | int]:
        """The limits the budget sets."""
        return {key: value for key in BUDGET_KEYS if (value := getattr(self, key)) is not None}


@dataclass(frozen=True)
class Contract:
    category: str = ""
    required_tool_calls: tuple[ToolCallExpectation, ...] = ()
    forbidden_tools: tuple[str, ...] = ()
    results_contain: tuple[Any, ...] = ()
    results_exclude: tuple[Any, ...] = ()
    answer_contains: tuple[str, ...] = ()
    answer_excludes: tuple[str, ...] = ()
    unavailable_managers: tuple[str, ...] = ()
    recommended_tool_calls: tuple[ToolCallExpectation, ...] = ()
    strict_order: bool = False
    fail_on_deviation: bool = False


@dataclass(frozen=True)
class Expectations:
    tool_calls: tuple[ToolCallExpectation, ...] | None = None
    results_contain: tuple[Any, ...] = ()
    results_exclude: tuple[Any, ...] = ()
    answer_contains: tuple[str, ...] = ()
    answer_excludes: tuple[str, ...] = ()
    result_set: ResultSetExpectation | None = None
    contract: Contract | None = None
    turns: tuple[Expectations, ...] = ()
    planned: Mapping[str, Any] | None = None
    chart: ChartExpectation | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def has_results(self) -> bool:
        return bool(self.results_contain or self.results_exclude)

    @property
    def has_answer(self) -> bool:
        return bool(self.answer_contains or self.answer_excludes)


@dataclass(frozen=True)
class Case:
    name: str
    description: str = ""
    tier: int = 0
    tags: tuple[str, ...] = ()
    conversation: tuple[str, ...] = ()
    expectations: Expectations = field(default_factory=Expectations)
    project: str = "inventory"
    dataset: str = ""
    strategy: str | None = None  # None: the run's strategy
    providers: Mapping[str, str] = field(default_factory=dict)  # planned roles pinned
    budget: Budget | None = None  # None: no budget of its own
    # the dataset's knowledge (the import format's mapping), imported before the case runs
    knowledge: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def case_hash(self) -> str:
        """SHA-256 of what the case asks and expects: it changes when the case does."""
        payload: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "tier": self.tier,
            "tags": list(self.tags),
            "conversation": list(self.conversation),
            "expectations": self.expectations.raw,
            "project": self.project,
        }
        # Only when set, so the hashes of cases that do not use them stay as they were.
        if self.strategy is not None:
            payload["strategy"] = self.strategy
        if self.providers:
            payload["providers"] = dict(self.providers)
        if self.budget is not None:
            payload["budget"] = self.budget.to_dict()
        if self.knowledge is not None:
            payload["knowledge"] = digest(dict(self.knowledge))
        return digest(payload)


def _check_keys(value: Any, allowed: frozenset[str], where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DatasetError(f"{where} must be a mapping, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise DatasetError(
            f"{where}: unknown key {unknown[0]!r}"
            + (f" (also {unknown[1:]})" if len(unknown) > 1 else "")
            + f"; allowed: {sorted(allowed)}"
        )
    return value


def _strings(value: Any, where: str) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, str | int | float | bool):
        return (value,)
    if not isinstance(value, Sequence):
        raise DatasetError(f"{where} must be a list")
    return tuple(value)


def _tool_calls(value: Any, where: str) -> tuple[ToolCallExpectation, ...]:
    if value is None:
        return ()
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise DatasetError(f"{where} must be a list of {{name, args_contain}}")
    calls = []
    for number, item in enumerate(value, start=1):
        if isinstance(item, str):
            item = {"name": item}
        spec = _check_keys(item, TOOL_CALL_KEYS, f"{where}[{number}]")
        if not isinstance(spec.get("name"), str):
            raise DatasetError(f"{where}[{number}] needs a 'name'")
        args = spec.get("args_contain") or {}
        if not isinstance(args, Mapping):
            raise DatasetError(f"{where}[{number}].args_contain must be a mapping")
        calls.append(ToolCallExpectation(spec["name"], dict(args)))
    return tuple(calls)


def _result_set(value: Any, where: str) -> ResultSetExpectation | None:
    if value is None:
        return None
    spec = _check_keys(value, RESULT_SET_KEYS, where)
    rows = spec.get("rows")
    if not isinstance(spec.get("manager"), str) or not isinstance(rows, list):
        raise DatasetError(f"{where} needs 'manager' and a list of 'rows'")
    if not all(isinstance(row, Mapping) for row in rows):
        raise DatasetError(f"{where}.rows must be mappings")
    fields = spec.get("fields")
    return ResultSetExpectation(
        spec["manager"], tuple(dict(r) for r in rows), tuple(fields) if fields else None
    )


def _chart(value: Any, where: str) -> ChartExpectation | None:
    """``chart: {mark, x, y, aggregate}`` (any of them; ``{}``: some chart at all)."""
    if value is None:
        return None
    spec = _check_keys(value, frozenset(CHART_KEYS), where)
    for key, item in spec.items():
        if not isinstance(item, str) or not item.strip():
            what = "a column name" if key in ("x", "y") else f"a {key}"
            raise DatasetError(f"{where}.{key} must be text ({what}), got {item!r}")
    for key, allowed in (("mark", MARKS), ("aggregate", AGGREGATES)):
        if key in spec and spec[key] not in allowed:
            raise DatasetError(
                f"{where}.{key}: unknown {key} {spec[key]!r}; one of {list(allowed)}"
            )
    return ChartExpectation(**{key: str(item).strip() for key, item in spec.items()})


def _contract(value: Any, where: str) -> Contract | None:
    if value is None:
        return None
    spec = _check_keys(value, CONTRACT_KEYS, where)
    hard = _check_keys(spec.get("hard"), HARD_KEYS, f"{where}.hard")
    strategy = _check_keys(spec.get("strategy"), STRATEGY_KEYS, f"{where}.strategy")
    return Contract(
        category=str(spec.get("category") or ""),
        required_tool_calls=_tool_calls(
            hard.get("required_tool_calls"), f"{where}.hard.required_tool_calls"
        ),
        forbidden_tools=tuple(str(t) for t in _strings(hard.get("forbidden_tools"), where)),
        results_contain=_strings(hard.get("results_contain"), f"{where}.hard.results_contain"),
        results_exclude=_strings(hard.get("results_exclude"), f"{where}.hard.results_exclude"),
        answer_contains=tuple(str(s) for s in _strings(hard.get("answer_contains"), where)),
        answer_excludes=tuple(str(s) for s in _strings(hard.get("answer_excludes"), where)),
        unavailable_managers=tuple(
            str(s) for s in _strings(hard.get("unavailable_managers"), where)
        ),
        recommended_tool_calls=_tool_calls(
            strategy.get("recommended_tool_calls"), f"{where}.strategy.recommended_tool_calls"
        ),
        strict_order=bool(strategy.get("strict_order", False)),
        fail_on_deviation=bool(strategy.get("fail_on_deviation", False)),
    )


def _expectations(value: Any, where: str, *, nested: bool = False) -> Expectations:
    spec = _check_keys(value, EXPECTATION_KEYS - ({"turns"} if nested else set()), where)
    turns: tuple[Expectations, ...] = ()
    if spec.get("turns") is not None:
        if not isinstance(spec["turns"], list):
            raise DatasetError(f"{where}.turns must be a list")
        turns = tuple(
            _expectations(t, f"{where}.turns[{i}]", nested=True)
            for i, t in enumerate(spec["turns"], start=1)
        )
    tool_calls = spec.get("tool_calls")
    return Expectations(
        tool_calls=None if tool_calls is None else _tool_calls(tool_calls, f"{where}.tool_calls"),
        results_contain=_strings(spec.get("results_contain"), f"{where}.results_contain"),
        results_exclude=_strings(spec.get("results_exclude"), f"{where}.results_exclude"),
        answer_contains=tuple(str(s) for s in _strings(spec.get("answer_contains"), where)),
        answer_excludes=tuple(str(s) for s in _strings(spec.get("answer_excludes"), where)),
        result_set=_result_set(spec.get("result_set"), f"{where}.result_set"),
        contract=_contract(spec.get("contract"), f"{where}.contract"),
        turns=turns,
        planned=spec.get("planned"),
        chart=_chart(spec.get("chart"), f"{where}.chart"),
        raw=dict(spec),
    )


def _strategy(value: Any, label: str) -> str | None:
    if value is None or value in STRATEGIES:
        return value  # type: ignore[no-any-return]
    raise DatasetError(f"{label}: 'strategy' must be one of {list(STRATEGIES)}, got {value!r}")


def _providers(value: Any, label: str) -> dict[str, str]:
    pins = _check_keys(value, frozenset(PIN_KEYS), f"{label}.providers")
    for role, spec in pins.items():
        if not isinstance(spec, str) or not spec.strip():
            raise DatasetError(f"{label}.providers.{role} must be a provider spec (text)")
    return dict(pins)


def _budget(value: Any, label: str) -> Budget | None:
    """``budget: {max_cost_usd, max_tokens}`` (either or both): dollars a number >= 0, tokens a
    whole number >= 0."""
    if value is None:
        return None
    where = f"{label}.budget"
    spec = _check_keys(value, frozenset(BUDGET_KEYS), where)
    cost, tokens = spec.get("max_cost_usd"), spec.get("max_tokens")
    if cost is None and tokens is None:
        raise DatasetError(f"{where} needs max_cost_usd (US dollars) or max_tokens, or both")
    if cost is not None and (
        isinstance(cost, bool)
        or not isinstance(cost, int | float)
        or not math.isfinite(cost)
        or cost < 0
    ):
        raise DatasetError(
            f"{where}.max_cost_usd must be a number of US dollars >= 0, got {cost!r}"
        )
    if tokens is not None and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0
    ):
        raise DatasetError(
            f"{where}.max_tokens must be a whole number of tokens >= 0, got {tokens!r}"
        )
    return Budget(None if cost is None else float(cost), tokens)


def parse_case(item: Any, number: int, dataset: str = "") -> Case:
    """One case from its YAML mapping."""
    label = f"{dataset}: case {number}" if dataset else f"case {number}"
    if not isinstance(item, Mapping):
        raise DatasetError(f"{label} must be a mapping")
    name = item.get("name")
    if isinstance(name, str) and name:
        label = f"{dataset}: case {name!r}" if dataset else f"case {name!r}"
    _check_keys(item, CASE_KEYS, label)
    if not isinstance(name, str) or not name:
        raise DatasetError(f"{label} needs a 'name'")
    conversation = item.get("conversation")
    if not isinstance(conversation, list) or not conversation:
        raise DatasetError(f"{label}: 'conversation' must be a non-empty list of {{user: text}}")
    messages = []
    for index, entry in enumerate(conversation, start=1):
        entry = _check_keys(entry, frozenset({"user"}), f"{label}.conversation[{index}]")
        if not isinstance(entry.get("user"), str):
            raise DatasetError(f"{label}.conversation[{index}] needs 'user' text")
        messages.append(entry["user"])
    tier = item.get("tier", 0)
    if not isinstance(tier, int) or isinstance(tier, bool):
        raise DatasetError(f"{label}: 'tier' must be an integer")
    tags = item.get("tags") or []
    if not isinstance(tags, list):
        raise DatasetError(f"{label}: 'tags' must be a list")
    expectations = _expectations(item.get("expectations"), f"{label}.expectations")
    if expectations.turns and len(expectations.turns) != len(messages):
        raise DatasetError(
            f"{label}: expectations.turns has {len(expectations.turns)} entries for "
            f"{len(messages)} user turns"
        )
    return Case(
        name=name,
        description=str(item.get("description") or ""),
        tier=tier,
        tags=tuple(str(t) for t in tags),
        conversation=tuple(messages),
        expectations=expectations,
        project=str(item.get("project") or "inventory"),
        dataset=dataset,
        strategy=_strategy(item.get("strategy"), label),
        providers=_providers(item.get("providers"), label),
        budget=_budget(item.get("budget"), label),
    )


DATASET_KEYS = frozenset({"cases", "knowledge"})


def parse_cases(data: Any, dataset: str = "", base: Path | None = None) -> list[Case]:
    """Cases from a loaded YAML document: a list of cases, or a mapping of ``cases`` and
    ``knowledge`` (a path in it is relative to ``base``, the dataset's folder)."""
    if data is None:
        return []
    knowledge = None
    if isinstance(data, Mapping):
        where = dataset or "dataset"
        _check_keys(data, DATASET_KEYS, where)
        if data.get("knowledge") is not None:
            knowledge = dataset_knowledge(data["knowledge"], where, base)
        data = data.get("cases")
        if not isinstance(data, list):
            raise DatasetError(f"{where}: 'cases' must be a YAML list of cases")
    if not isinstance(data, list):
        raise DatasetError(
            f"{dataset or 'dataset'}: a dataset is a YAML list of cases (or a mapping of "
            "'cases' and 'knowledge')"
        )
    cases = [parse_case(item, n, dataset) for n, item in enumerate(data, start=1)]
    if knowledge is not None:
        cases = [replace(case, knowledge=knowledge) for case in cases]
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise DatasetError(f"{dataset}: duplicate case name {case.name!r}")
        seen.add(case.name)
    return cases


def dataset_knowledge(value: Any, where: str, base: Path | None = None) -> dict[str, Any]:
    """A dataset's ``knowledge``: the import format's mapping, inline or read from a YAML file
    (a path relative to ``base``), its shape checked (whether its calls compile is the
    project's to say, when a case imports it)."""
    if isinstance(value, str):
        path = Path(value)
        if not path.is_absolute() and base is not None:
            path = base / path
        try:
            value = read_file(path)
        except KnowledgeError as error:
            raise DatasetError(f"{where}.knowledge: {error.message}") from None
    try:
        drafts_of(value)
    except KnowledgeError as error:
        raise DatasetError(f"{where}.knowledge: {error.message}") from None
    return dict(value)


def load_dataset(path: str | Path) -> list[Case]:
    """The cases of one YAML file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise DatasetError(f"{path} is not valid YAML: {error}") from None
    return parse_cases(data, path.stem, path.parent)


def dataset_dir() -> Path:
    """The packaged copy ``gmchat_nb/evals/datasets`` of an installed wheel, else ``<repo>/evals``
    next to the package (the bundled cassettes are found the same way)."""
    return eval_data_dir()


# Datasets only the planned strategy answers (numbers computed by the engine); like
# GeneralManager's planned_orchestration, "all datasets" leaves them out and they run by name.
PLANNED_ONLY_DATASETS = ("calculations",)
# Datasets that measure knowledge: paraphrases of verified queries their own ``knowledge``
# saved, read with --knowledge modes side by side. They run by name too, so "all datasets"
# keeps measuring the assistant without knowledge.
KNOWLEDGE_DATASETS = ("knowledge_paraphrases",)


def resolve_datasets(names: Sequence[str | Path] | str | Path | None = None) -> list[Path]:
    """Dataset files: names under :func:`dataset_dir` or paths; ``None`` means all of them but
    :data:`PLANNED_ONLY_DATASETS` and :data:`KNOWLEDGE_DATASETS`."""
    base = dataset_dir()
    if names is None:
        every = sorted(base.glob("*.yaml")) + sorted(base.glob("*.yml"))
        by_name = (*PLANNED_ONLY_DATASETS, *KNOWLEDGE_DATASETS)
        return [path for path in every if path.stem not in by_name]
    if isinstance(names, str | Path):
        names = [names]
    paths = []
    for name in names:
        candidate = Path(name)
        if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
            paths.append(candidate)
            continue
        for option in (base / f"{name}.yaml", base / f"{name}.yml", base / str(name)):
            if option.is_file():
                paths.append(option)
                break
        else:
            available = sorted(p.stem for p in base.glob("*.y*ml"))
            raise DatasetError(f"unknown dataset {str(name)!r}; available: {available}")
    return paths
