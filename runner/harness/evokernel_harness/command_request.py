"""A typed request (src/shared/contract/harness-request.ts, the generated
contract/harness-command.schema.json) → the argparse.Namespace the command line gives for the
same options, so the runner's requests and a person's command line reach the same command
functions with the same values, defaults included. A request's fields are the command's options
(options.py) camelCased: `{"command": "verify", "task": T, "heldout": true}` is
`verify --task T --heldout`. What is not a request of a command raises BadRequest, never
anything else; tests/test_contract.py holds the grammar and the schema to the same fields."""

import argparse
import json
import re
from typing import Any

from .options import JSON_VALUED, commands


class BadRequest(ValueError):
    """Not a request: an unknown command, an unknown field, a value of the wrong type, a
    required field missing."""


def field_name(dest: str) -> str:
    """An option's field in a typed request: its dest, camelCased (baseline_artifact → baselineArtifact)."""
    return re.sub(r"_(\w)", lambda m: m.group(1).upper(), dest)


def fields(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """A command's options, by their field in a typed request."""
    return {field_name(a.dest): a for a in parser._actions if a.option_strings and a.dest != "help"}


def _value(name: str, action: argparse.Action, value: Any) -> Any:
    """The value the command line would have put in the Namespace for this field's value."""
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise BadRequest(f"{name} must be true or false")
        return value
    if isinstance(action, argparse._AppendAction):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadRequest(f"{name} must be a list of strings")
        return list(value) or None  # as when the flag is not given
    if action.dest in JSON_VALUED:
        if not isinstance(value, (list, dict)):
            raise BadRequest(f"{name} must be a JSON list or object")
        return json.dumps(value)  # the command reads it as it reads the flag's text
    if action.type is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadRequest(f"{name} must be an integer")
    elif action.type is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise BadRequest(f"{name} must be a number")
        value = float(value)
    elif not isinstance(value, str):
        raise BadRequest(f"{name} must be a string")
    if action.choices is not None and value not in action.choices:
        raise BadRequest(f"{name} must be one of {', '.join(map(str, action.choices))}")
    return value


def parse_command(request: Any) -> argparse.Namespace:
    """A typed request, validated, as the Namespace the command line gives; BadRequest when it
    is not one."""
    if not isinstance(request, dict):
        raise BadRequest("a request is a JSON object")
    parsers = commands()
    name = request.get("command")
    if not isinstance(name, str) or name not in parsers:
        raise BadRequest(f"unknown command {name!r} (one of {', '.join(parsers)})")
    options = fields(parsers[name])
    unknown = sorted(set(request) - set(options) - {"command"})
    if unknown:
        raise BadRequest(f"{name} takes no {', '.join(unknown)}")
    args = argparse.Namespace(command=name)
    for field, action in options.items():
        if field in request:
            setattr(args, action.dest, _value(field, action, request[field]))
        elif action.required:
            raise BadRequest(f"{name} needs {field}")
        else:
            setattr(args, action.dest, action.default)
    return args


def parse_command_json(text: str) -> argparse.Namespace:
    """`request JSON`'s argument, parsed: BadRequest when it is not JSON or not a request."""
    try:
        request = json.loads(text)
    except ValueError as err:
        raise BadRequest(f"not JSON ({err})") from None
    return parse_command(request)
