"""The harness's command line: flags (options.py) → the command (commands/) → its JSON record,
written to --out (or stdout). `serve` starts the fork server (server.py) instead."""

from .commands import run
from .options import parse


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.command == "serve":
        from .server import serve

        return serve()
    return run(args, argv)
