"""``python -m gmchat_nb.evals``: run eval datasets and print GeneralManager-style reports.

Exit status:

* 0 -- every selected case that could be scored passed (the report says how many were unscored);
* 1 -- a case failed (its own ``budget`` included), a provider could not score a single case
  (unscored: it could not be reached, or the chat failed around it), or a provider's run went
  over ``--max-cost`` or ``--max-tokens`` (a cost that could not be priced fails ``--max-cost``);
  stderr says which (the budget, by how much, the provider and the case);
* 2 -- the run could not start: bad options (a ``--provider-config`` that is not KEY=VALUE, a
  negative budget, a ``--prices`` file that is not the ``prices`` setting), an unknown dataset,
  an empty selection, a provider spec that cannot be constructed with its settings, a
  ``--project`` that cannot be opened, an unknown ``--knowledge`` mode, a dataset's knowledge
  the project refuses (a call that does not compile), or an output file that cannot be
  written.

The report goes to stdout. On a terminal, a progress bar over the cases goes to stderr; it is left
out when stderr is not a terminal (CI logs, pipes, tests).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import EvalResults
    from .runner import CaseResult

__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
BUDGET_OPTIONS = ("--max-cost", "--max-tokens")  # the run budgets, as messages name them


# GeneralManager's --fixture names -> our demos that hold the same managers and rows, GM-shaped
FIXTURES = {"toy": "toy", "large": "synthetic"}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (``--help`` needs no configuration)."""
    parser = argparse.ArgumentParser(
        prog="python -m gmchat_nb.evals",
        description="Run chat evaluation datasets (GeneralManager's YAML format) against providers.",
    )
    parser.add_argument(
        "--provider",
        default="offline",
        help="provider spec (offline, scripted:FILE, replay:FILE or replay:NAME of a bundled "
        "cassette such as replay:oracle-openai, openai:MODEL, ...; oracle: each case's scripted "
        "oracle, evals/oracle/)",
    )
    parser.add_argument("--model", help="model name passed to the provider")
    parser.add_argument(
        "--provider-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a provider setting for every provider run, e.g. max_tokens=256 or "
        "base_url=http://127.0.0.1:8080/v1 (repeatable; VALUE is JSON when it parses as JSON, "
        "else a string; --model wins over model=)",
    )
    parser.add_argument(
        "--dataset",
        action="append",
        help="dataset name under evals/ or a YAML path (repeatable; default all)",
    )
    parser.add_argument(
        "--project",
        help="project for every case: a demo (inventory, large, toy, synthetic) or a GraphQL URL "
        "(default: each case's own project, else inventory)",
    )
    parser.add_argument(
        "--fixture",
        choices=sorted(FIXTURES),
        help="GeneralManager's eval fixture for every case (toy, large), as GM's datasets expect",
    )
    parser.add_argument(
        "--exposed",
        metavar="NAME[,NAME...]",
        help="managers the chat may see in --project (a GraphQL server cannot say which of its "
        "managers are chat-exposed; default all)",
    )
    parser.add_argument(
        "--strategy",
        choices=("legacy", "planned"),
        help="how cases run: the tool loop (legacy) or planned orchestration (planner, "
        "executors, synthesizer); a case's own 'strategy' key wins (default legacy)",
    )
    parser.add_argument(
        "--knowledge",
        metavar="MODE[,MODE...]",
        help="recall before each turn: off, keyword or hybrid; comma-separated to compare "
        "modes, a column each (default: the settings' knowledge). A dataset's 'knowledge' is "
        "loaded in every mode",
    )
    parser.add_argument("--tier", type=int, help="only cases of this tier")
    parser.add_argument("--tag", action="append", default=[], help="required tag (repeatable)")
    parser.add_argument("--compare", help="comma-separated provider specs to compare")
    parser.add_argument("--concurrency", type=int, default=4, help="cases run at once (4)")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="list failures and next actions"
    )
    parser.add_argument("--trace-jsonl", metavar="PATH", help="write one JSON record per case")
    parser.add_argument(
        "--report-html", metavar="PATH", help="also write the report as a self-contained HTML file"
    )
    parser.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="fail (exit 1) when a provider's run of the cases costs more than USD; a cost that "
        "could not be priced fails it too",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="fail (exit 1) when a provider's run of the cases uses more than N tokens (input "
        "and output)",
    )
    parser.add_argument(
        "--prices",
        metavar="FILE",
        help="a YAML mapping of provider labels or model names to {input, output, cache_read, "
        "cache_write} in USD per million tokens (the chat's prices setting): a price where "
        "genai-prices has none, or another one",
    )
    parser.add_argument(
        "--record-to",
        metavar="PATH",
        help="record --provider's responses into this cassette; replay it later with "
        "--provider replay:PATH (no key, no cost)",
    )
    return parser


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _check_providers(specs: Sequence[str], config: dict[str, Any]) -> str | None:
    """The first problem constructing a spec, or None: a typo should not cost a whole run."""
    from ..core.providers.registry import check_ready, create_provider
    from .oracle import is_oracle

    for spec in specs:
        if is_oracle(spec):
            continue  # built per case from evals/oracle/; a case without an entry is unscored
        try:
            check_ready(create_provider(spec, config))
        except Exception as error:  # any constructor failure means this spec cannot run a case
            return f"cannot use the provider {spec!r}: {error}"
    return None


async def _check_project(target: str, exposed: Sequence[str] | None) -> None:
    from .runner import open_project

    project = await open_project(target, exposed)
    await project.aclose()


def _progress(total: int) -> tuple[Callable[[CaseResult], None], Callable[[], None]]:
    """A tqdm bar on stderr: the callback for each finished case, and a function to close it."""
    from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type information

    # redrawn on every finished case: a case takes far longer than drawing a line
    bar = tqdm(
        total=total,
        file=sys.stderr,
        unit="case",
        desc="eval",
        leave=False,
        mininterval=0,
        miniters=1,
    )
    counts = {"pass": 0, "fail": 0, "unscored": 0}

    def update(result: CaseResult) -> None:
        counts[result.status] = counts.get(result.status, 0) + 1
        bar.set_postfix_str(", ".join(f"{n} {s}" for s, n in counts.items()), refresh=False)
        bar.update(1)

    return update, bar.close


def _budgets(args: argparse.Namespace) -> str | None:
    """The first problem with ``--max-cost`` or ``--max-tokens``, or None."""
    if args.max_cost is not None and not (math.isfinite(args.max_cost) and args.max_cost >= 0):
        return f"--max-cost takes US dollars >= 0, got {args.max_cost}"
    if args.max_tokens is not None and args.max_tokens < 0:
        return f"--max-tokens takes a number of tokens >= 0, got {args.max_tokens}"
    return None


def _budget_status(results: EvalResults, max_cost: float | None, max_tokens: int | None) -> int:
    """1 when a case went over its ``budget`` or a provider's run over ``--max-cost`` or
    ``--max-tokens``; stderr says which budget, by how much, and for whom."""
    from .costs import run_budget_problems
    from .judges import BUDGET

    status = EXIT_OK
    for result in results.results:
        for verdict in result.verdicts:
            if verdict.dimension == BUDGET and not verdict.passed:
                over = "; ".join(verdict.reasons)
                _error(f"case {result.case.name!r} ({result.provider}) over its budget: {over}")
                status = EXIT_FAILED
    problems = run_budget_problems(
        results.results,
        results.providers,
        max_cost_usd=max_cost,
        max_tokens=max_tokens,
        names=BUDGET_OPTIONS,
    )
    for problem in problems:
        _error(f"over budget: {problem}")
        status = EXIT_FAILED
    return status


def _exit_status(results: EvalResults) -> int:
    """1 for a failed case or a provider that scored nothing; stderr says what was unscored."""
    status = EXIT_FAILED if any(r.status == "fail" for r in results.results) else EXIT_OK
    for provider in results.providers:
        mine = [r for r in results.results if r.provider == provider]
        unscored = [r for r in mine if r.status == "unscored"]
        if not unscored:
            continue
        who = f" with {provider}" if len(results.providers) > 1 else ""
        if len(unscored) == len(mine):
            first = unscored[0].reasons[0] if unscored[0].reasons else unscored[0].error
            _error(f"no case could be scored{who} ({len(mine)} unscored; first: {first})")
            status = EXIT_FAILED
        else:
            print(
                f"warning: {len(unscored)} of {len(mine)} cases{who} were unscored and are left "
                "out of the rates",
                file=sys.stderr,
            )
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``) and return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        from ..core.providers.registry import config_pairs

        try:
            settings = config_pairs(args.provider_config)
        except ValueError as error:
            parser.error(str(error))  # usage and the reason on stderr, exit status 2
    except SystemExit as exit_:
        return int(exit_.code or 0)
    from .api import compare, knowledge_modes, select_cases
    from .costs import budget_lines, prices_file
    from .dataset import DatasetError

    providers = [args.provider]
    if args.compare:
        providers = _names(args.compare)
        if not providers:
            _error("--compare needs provider specs")
            return EXIT_USAGE
    if args.concurrency < 1:
        _error("--concurrency must be at least 1")
        return EXIT_USAGE
    try:
        modes = knowledge_modes(args.knowledge)
    except ValueError as error:
        _error(f"--knowledge: {error}")
        return EXIT_USAGE
    budget_problem = _budgets(args)
    if budget_problem:
        _error(budget_problem)
        return EXIT_USAGE
    prices = None
    if args.prices:
        try:
            prices = prices_file(args.prices)
        except ValueError as error:
            _error(str(error))
            return EXIT_USAGE
    if args.record_to and args.compare:
        _error("--record-to records one provider; run it once per provider instead of --compare")
        return EXIT_USAGE
    if args.project and args.fixture:
        _error("give --project or --fixture, not both")
        return EXIT_USAGE
    project = FIXTURES[args.fixture] if args.fixture else args.project
    exposed = None
    if args.exposed is not None:
        exposed = _names(args.exposed)
        if not exposed:
            _error("--exposed needs manager names")
            return EXIT_USAGE
        if not project:
            _error("--exposed applies to --project; name the project (a GraphQL URL or demo)")
            return EXIT_USAGE
    config: dict[str, Any] = {**settings, **({"model": args.model} if args.model else {})}
    if args.record_to:
        providers = [f"record:{args.provider}"]
        config["record_to"] = args.record_to
    problem = _check_providers(providers, config)
    if problem:
        _error(problem)
        return EXIT_USAGE
    try:
        cases = select_cases(args.dataset, tier=args.tier, tags=args.tag)
    except DatasetError as error:
        _error(str(error))
        return EXIT_USAGE
    if not cases:
        _error("no cases selected")
        return EXIT_USAGE
    if project:
        try:
            asyncio.run(_check_project(project, exposed))
        except Exception as error:  # unreachable URL, unknown demo or exposed name: say which
            _error(f"cannot open the project {project}: {error}")
            return EXIT_USAGE
    if any(case.knowledge is not None for case in cases):
        from .knowledge import check_knowledge

        problem = asyncio.run(check_knowledge(cases, project, exposed))
        if problem:
            _error(problem)
            return EXIT_USAGE
    outputs = [Path(p) for p in (args.trace_jsonl, args.report_html, args.record_to) if p]
    for path in outputs:
        try:  # truncated at the start (as GeneralManager does), so a bad path costs no run
            path.open("w", encoding="utf-8").close()
        except OSError as error:
            _error(f"cannot write {path}: {error.strerror or error}")
            return EXIT_USAGE

    on_result: Callable[[CaseResult], None] | None = None
    close: Callable[[], None] | None = None
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    quiet_logs = contextlib.nullcontext()
    if sys.stderr.isatty():
        from tqdm.contrib.logging import logging_redirect_tqdm  # type: ignore[import-untyped]

        on_result, close = _progress(len(cases) * len(providers))
        quiet_logs = logging_redirect_tqdm()  # log lines print above the bar, not through it
    with quiet_logs:
        try:
            results = compare(
                providers,
                cases,
                concurrency=args.concurrency,
                provider_config=config,
                project=project,
                exposed=exposed,
                on_result=on_result,
                strategy=args.strategy,
                prices=prices,
                knowledge=modes,
            )
        finally:
            if close is not None:
                close()
    if args.trace_jsonl:
        results.write_trace(args.trace_jsonl)
    if args.report_html:
        results.write_html(args.report_html)
    print(results.report(verbose=args.verbose))
    budget = budget_lines(
        results.results,
        results.providers,
        max_cost_usd=args.max_cost,
        max_tokens=args.max_tokens,
        names=BUDGET_OPTIONS,
    )
    if budget:
        print("\n" + "\n".join(budget))
    status = _exit_status(results)
    return max(status, _budget_status(results, args.max_cost, args.max_tokens))
