"""``python -m gmchat_nb.evals``: run eval datasets and print GeneralManager-style reports.

Exit status: 0 when every selected case passed, 1 when any failed, 2 for usage errors, unknown
datasets or an empty selection.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gmchat_nb.evals",
        description="Run chat evaluation datasets (GeneralManager's YAML format) against providers.",
    )
    parser.add_argument(
        "--provider",
        default="offline",
        help="provider spec (offline, scripted:FILE, openai:MODEL, ...)",
    )
    parser.add_argument("--model", help="model name passed to the provider")
    parser.add_argument(
        "--dataset",
        action="append",
        help="dataset name under evals/ or a YAML path (repeatable; default all)",
    )
    parser.add_argument(
        "--project",
        "--fixture",
        dest="project",
        help="demo project (inventory, large) or GraphQL URL for every case",
    )
    parser.add_argument("--tier", type=int, help="only cases of this tier")
    parser.add_argument("--tag", action="append", default=[], help="required tag (repeatable)")
    parser.add_argument("--compare", help="comma-separated provider specs to compare")
    parser.add_argument("--concurrency", type=int, default=4, help="cases run at once (4)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list failures")
    parser.add_argument("--trace-jsonl", metavar="PATH", help="write one JSON record per case")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    from .api import compare
    from .dataset import DatasetError

    providers = [args.provider]
    if args.compare:
        providers = [p.strip() for p in args.compare.split(",") if p.strip()]
        if not providers:
            print("error: --compare needs provider specs", file=sys.stderr)
            return 2
    if args.concurrency < 1:
        print("error: --concurrency must be at least 1", file=sys.stderr)
        return 2
    project = args.project
    if project == "toy":
        project = "inventory"
    try:
        results = compare(
            providers,
            args.dataset,
            tier=args.tier,
            tags=args.tag,
            concurrency=args.concurrency,
            model=args.model,
            project=project,
        )
    except DatasetError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not results.results:
        print("error: no cases selected", file=sys.stderr)
        return 2
    if args.trace_jsonl:
        results.write_trace(args.trace_jsonl)
    print(results.report(verbose=args.verbose))
    return 1 if any(r.status == "fail" for r in results.results) else 0
