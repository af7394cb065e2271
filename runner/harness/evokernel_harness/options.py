"""The harness's command line, its grammar only: argv → argparse.Namespace → the command's typed
request (command_request.py), what the commands take. The only module (with cli.py) that knows
argparse. Each command's options are made from its request's dataclass (a field an option of
the same name, dashed; its type its kind; `option()`'s help and flag), so the command line and
a typed request (the runner's, and `request JSON` here) cannot drift apart: the same dataclass,
its fields these options' dests, camelCased in JSON."""

import argparse
import dataclasses
import typing
from typing import Any, Literal

from .command_request import REQUESTS, CommandRequest, field_type, required


def _add_option(parser: argparse.ArgumentParser, f: dataclasses.Field[Any], hint: Any) -> None:
    """`f` as the option a command line gives it: a bool a switch, a list a repeated flag, a
    Literal its choices, an int or float converted; required where the field has no default."""
    kind = field_type(hint)
    flag = f.metadata.get("flag") or "--" + f.name.replace("_", "-")
    spec: dict[str, Any] = {"dest": f.name}
    if "help" in f.metadata:
        spec["help"] = f.metadata["help"]
    if kind is bool:
        spec["action"] = "store_true"
    elif typing.get_origin(kind) is list:
        spec["action"] = "append"
    elif typing.get_origin(kind) is Literal:
        spec["choices"] = typing.get_args(kind)
    elif kind in (int, float):
        spec["type"] = kind
    if required(f):
        spec["required"] = True
    elif kind is not bool:
        spec["default"] = f.default
    parser.add_argument(flag, **spec)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evokernel_harness", description="evokernel's verification and timing harness")
    sub = p.add_subparsers(dest="command", required=True)
    for name, cls in REQUESTS.items():
        sp = sub.add_parser(name, help=cls.summary)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            _add_option(sp, f, hints[f.name])
    sp = sub.add_parser("serve", help="fork server: JSON requests on stdin, one child each")
    sp.add_argument(
        "--cpu",
        action="store_true",
        help="the CPU fork server: static checks and builds only, without torch, every request "
        "in a child of its own at once (server.py, serve_cpu)",
    )
    sp = sub.add_parser("request", help="run one typed request (src/shared/contract/harness-request.ts)")
    sp.add_argument("json", help='the request as JSON, e.g. {"command": "device"}')
    return p


# Not commands a typed request may name: the fork server itself, and a request in a request.
NOT_REQUESTS = ("serve", "request")


def parse(argv: list[str]) -> argparse.Namespace:
    """argv, parsed; a usage error exits 2 with argparse's message on stderr."""
    return build_parser().parse_args(argv)


def request(args: argparse.Namespace) -> CommandRequest:
    """A command's parsed options (not serve's, not request's) as its typed request."""
    cls = REQUESTS[args.command]
    return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})


def parse_request(argv: list[str]) -> CommandRequest:
    """A command's argv as its typed request; a usage error exits 2 as parse() does."""
    return request(parse(argv))


def commands() -> dict[str, argparse.ArgumentParser]:
    """Each command's own parser, by name: the options a typed request of it may carry."""
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {name: sp for name, sp in action.choices.items() if name not in NOT_REQUESTS}
    raise AssertionError("the grammar has no commands")
