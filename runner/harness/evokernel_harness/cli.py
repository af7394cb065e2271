"""The harness's command line: flags (options.py) → the command's typed request
(command_request.py) → the command (commands/) → its JSON record, written to --out (or stdout).
`request JSON` takes the same command as one typed request in JSON, as the runner sends it;
`serve` starts the fork server (server.py)."""

import sys

from .command_request import BadRequest, parse_command_json
from .commands import run
from .options import parse, request


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.command == "serve":
        from .server import serve, serve_cpu

        return serve_cpu() if args.cpu else serve()
    if args.command == "request":
        try:
            command = parse_command_json(args.json)
        except BadRequest as err:  # as a usage error on the command line: exit 2
            print(f"bad request: {err}", file=sys.stderr)
            return 2
        return run(command)
    return run(request(args))
