"""``python -m gmchat_nb.core.project.demo [inventory|large] [--port N] [--token T]``."""

from __future__ import annotations

import argparse

from .server import serve_forever
from .specs import DEMO_NAMES


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve the chosen demo until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m gmchat_nb.core.project.demo",
        description="Serve an embedded GeneralManager-style demo GraphQL project.",
    )
    parser.add_argument("name", nargs="?", default="inventory", choices=DEMO_NAMES)
    parser.add_argument("--port", type=int, default=0, help="TCP port (0 picks a free one)")
    parser.add_argument("--token", help="require this bearer token or gm_token cookie")
    parser.add_argument("--managers", type=int, help="manager count of the large demo")
    args = parser.parse_args(argv)
    options = {} if args.managers is None else {"manager_count": args.managers}
    serve_forever(args.name, port=args.port, token=args.token, **options)


if __name__ == "__main__":
    main()
