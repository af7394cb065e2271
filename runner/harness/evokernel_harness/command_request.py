"""Each harness command's request, typed: one frozen dataclass per command, the Python side of
src/shared/contract/harness-request.ts (the generated contract/harness-command.schema.json).
The commands (commands/) and everything below them take one of these, or the fields they need.

A request comes from the runner as JSON (parse_command: checked field by field against the
dataclass, as the schema declares it) or from the command line (options.py, the only place that
knows argparse). A request's fields are its dataclass's fields camelCased:
`{"command": "verify", "task": T, "heldout": true}` is VerifyRequest(task=T, heldout=True), as is
`verify --task T --heldout`; a field left out has the command line's default. What is not a
request of a command raises BadRequest, never anything else; tests/test_contract.py holds these
dataclasses, the command line, COMMANDS and the schema to the same commands and fields.

The command line is made from these dataclasses (options.py): a field is an option, its type
its kind (a bool a switch, a list a repeated flag, a Literal its choices), `option()` its help
and, where it is not the field's name, its flag; a class's `summary` its command's help. Adding
a command is its schema entry (src/shared/contract), its dataclass here and its module with its
registration (commands.COMMANDS); tests/test_contract.py fails while one side is missing.

The options the command line takes as JSON text (--task-spec, --static, --reference-ops,
--race, --race-ceilings) are held as that text here too (json_field): a request's JSON value is
written out to it, so a command reads both alike and says what is wrong with it in its own words.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union

from .schemas import enum

_JSON = "json"
# evaluate's cascade, in order (the contract's EVALUATE_STAGES): one record (--<stage>-out) each
STAGES = tuple(enum("evaluate-stage.schema.json"))


def option(
    default: Any = dataclasses.MISSING, *, help: str | None = None, flag: str | None = None, json: bool = False
) -> Any:
    """A field and its command-line option (options.py makes the option from the field): `help`
    its text, `flag` where the option is not --<field name with dashes> (a list's flag is
    singular: --define, repeated, fills `defines`), `json` for json_field."""
    metadata: dict[str, Any] = {key: value for key, value in (("help", help), ("flag", flag)) if value is not None}
    if json:
        metadata[_JSON] = True
    if default is dataclasses.MISSING:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


def json_field(help: str | None = None) -> Any:
    """An option whose value is JSON text on the command line and a JSON value (a list or an
    object) in a typed request: held as the text."""
    return option(None, help=help, json=True)


def task_spec_field() -> Any:
    """--task-spec, which every command that takes a task takes."""
    return json_field(
        "a native task's task.json as JSON, as the runner read and checked it: the file is not read again"
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    """What every command's request has: its name, its line in the command line's help, and
    whether it is GPU work under the machine's GPU lock from the start (gpulock.py)."""

    command: ClassVar[str]
    summary: ClassVar[str]

    @property
    def gpu_work(self) -> bool:
        return False

    @property
    def gpu_share(self) -> bool:
        """Whether its GPU work may share the GPU with other verifications (gpulock.py): no
        timing in it, and anything but a pass is run again alone before it is a verdict."""
        return False


@dataclass(frozen=True, kw_only=True)
class _Out:
    out: str | None = option(None, help="write the JSON record here (default: stdout)")


@dataclass(frozen=True, kw_only=True)
class DeviceRequest(Request, _Out):
    command: ClassVar[str] = "device"
    summary: ClassVar[str] = "what this machine has"


@dataclass(frozen=True, kw_only=True)
class StaticRequest(Request, _Out):
    command: ClassVar[str] = "static"
    summary: ClassVar[str] = "static check of a candidate's source"
    candidate: str
    task: str | None = None
    task_spec: str | None = task_spec_field()
    relaxed: bool = option(False, help="flag only the reference's own ops (CPU tests)")
    reference_ops: str | None = json_field(
        "the task's reference ops as a JSON list (from static-context), instead of --task"
    )
    libraries: Literal["allow", "deny"] = option("allow", help="with --reference-ops: the task's library rule")


@dataclass(frozen=True, kw_only=True)
class StaticContextRequest(Request, _Out):
    command: ClassVar[str] = "static-context"
    summary: ClassVar[str] = "what the static check needs of a task (for static --reference-ops)"
    task: str
    task_spec: str | None = task_spec_field()


@dataclass(frozen=True, kw_only=True)
class BuildRequest(Request, _Out):
    command: ClassVar[str] = "build"
    summary: ClassVar[str] = "compile a candidate (cached by content hash)"
    candidate: str
    cache: str | None = None
    defines: list[str] | None = option(None, flag="--define", help="NAME=VALUE passed as -D")
    nvcc_flags: list[str] | None = option(
        None, flag="--nvcc-flag", help="a precision-keeping nvcc flag (write --nvcc-flag=-maxrregcount=64)"
    )
    arch: str | None = None
    timeout: int | None = option(None, help="seconds (default: 120 for evk, 900 for torch extensions)")
    task: str | None = option(
        None,
        help="the task it is built for: a KernelBench ModelNew that builds its extension when constructed is "
        "constructed here, off the GPU lock",
    )
    task_spec: str | None = task_spec_field()


@dataclass(frozen=True, kw_only=True)
class InspectRequest(Request, _Out):
    command: ClassVar[str] = "inspect"
    summary: ClassVar[str] = "load and validate a task"
    task: str
    task_spec: str | None = task_spec_field()
    probe: bool = option(False, help="run the reference (CPU) and the degenerate-task check")


@dataclass(frozen=True, kw_only=True)
class CandidateRun:
    """A candidate run on a task (verify, bench, evaluate): the task, the candidate and its
    build, the seed and the configurations (harness-request.ts's `built`)."""

    task: str
    task_spec: str | None = task_spec_field()
    candidate: str | None = None
    artifact: str | None = None
    cache: str | None = None
    defines: list[str] | None = option(None, flag="--define")
    nvcc_flags: list[str] | None = option(None, flag="--nvcc-flag")
    seed: int | None = None
    config: list[str] | None = option(
        None,
        help="only this configuration (by name; held-out ones too); repeat for several. The "
        "seed gives each one the same inputs as in a run of them all",
    )


@dataclass(frozen=True, kw_only=True)
class Checked:
    """How a verification runs (verify, evaluate: harness-request.ts's `checked`)."""

    static: str | None = json_field(
        "this candidate's static-check record as JSON (from `static`, with the same "
        "task and device): its findings are carried into the record, the source is not checked again"
    )
    heldout: bool = option(False, help="include held-out configurations (final verification)")
    device: Literal["cuda", "cpu"] = "cuda"
    trials: int = 2


@dataclass(frozen=True, kw_only=True)
class Timed:
    """How a timing runs (bench, evaluate: harness-request.ts's `timed`)."""

    baseline: str | None = None
    baseline_artifact: str | None = None
    no_baseline: bool = False
    no_compile: bool = option(False, help="skip the torch.compile baseline")
    ceilings: str | None = option(None, help="JSON file caching this GPU's measured ceilings")
    budget: float = option(1.5, help="seconds of timing per configuration")
    no_probe_cache: bool = option(
        False, help="profile the reference on every configuration, never reading the probe cache"
    )
    race: str | None = json_field(
        "the screen only: a JSON object, configuration → the leader's least "
        "favourable speedup there; a candidate that can no longer reach it over every "
        "configuration (see --race-ceilings) stops"
    )
    race_ceilings: str | None = json_field(
        "the screen only: a JSON object, configuration → the kernel to beat's time "
        "there over the roofline floor; a configuration still to be timed counts at the "
        "most a kernel could gain there (none given: no candidate stops early)"
    )


@dataclass(frozen=True, kw_only=True)
class VerifyRequest(Request, _Out, CandidateRun, Checked):
    command: ClassVar[str] = "verify"
    summary: ClassVar[str] = "verify a candidate"
    quick: bool = option(False, help="the smallest visible configuration only (a cheap first gate)")

    @property
    def gpu_work(self) -> bool:
        return self.device != "cpu"

    @property
    def gpu_share(self) -> bool:
        return self.gpu_work


@dataclass(frozen=True, kw_only=True)
class BenchRequest(Request, _Out, CandidateRun, Timed):
    command: ClassVar[str] = "bench"
    summary: ClassVar[str] = "bench a candidate"
    warm_compile: bool = option(
        False,
        help="the reference alone (with --no-baseline, no candidate): torch.compile's baseline "
        "compiled for every visible configuration before the GPU's lock is taken (a search "
        "runs beside it), then eager and torch.compile timed as a judged bench's judge times them",
    )
    screen: bool = option(
        False,
        help="time as the search's screen does: beside the baseline only, short head start, "
        "as many samples as the spread needs",
    )

    @property
    def gpu_work(self) -> bool:
        # --warm-compile compiles first and takes the lock itself, for its timing
        return not self.warm_compile


@dataclass(frozen=True, kw_only=True)
class EvaluateRequest(Request, CandidateRun, Checked, Timed):
    """Three records, one file each (the contract's EVALUATE_STAGES): no out. Its candidate is
    required."""

    command: ClassVar[str] = "evaluate"
    summary: ClassVar[str] = "quick check, full verification and timing of a candidate in one process"
    candidate: str = field()  # no default: the field() overrides the inherited one
    quick_out: str = option(help="write the quick record here")
    verify_out: str = option(help="write the verify record here")
    bench_out: str = option(help="write the bench record here")

    def outs(self) -> dict[str, str]:
        """Each stage's record's file, by stage (STAGES)."""
        return {"quick": self.quick_out, "verify": self.verify_out, "bench": self.bench_out}

    @property
    def gpu_work(self) -> bool:
        return self.device != "cpu"


@dataclass(frozen=True, kw_only=True)
class CeilingsRequest(Request, _Out):
    command: ClassVar[str] = "ceilings"
    summary: ClassVar[str] = "measure this GPU's bandwidth and matmul rates"

    @property
    def gpu_work(self) -> bool:
        return True


CommandRequest = Union[
    DeviceRequest,
    StaticRequest,
    StaticContextRequest,
    BuildRequest,
    InspectRequest,
    VerifyRequest,
    BenchRequest,
    EvaluateRequest,
    CeilingsRequest,
]
# By command, in the command line's order (options.py).
REQUESTS: dict[str, type[CommandRequest]] = {cls.command: cls for cls in typing.get_args(CommandRequest)}


class BadRequest(ValueError):
    """Not a request: an unknown command, an unknown field, a value of the wrong type, a
    required field missing."""


def field_name(name: str) -> str:
    """A dataclass field's name in a typed request, camelCased (baseline_artifact → baselineArtifact)."""
    return re.sub(r"_(\w)", lambda m: m.group(1).upper(), name)


def request_fields(cls: type[CommandRequest]) -> dict[str, dataclasses.Field[Any]]:
    """A command's fields, by their name in a typed request."""
    return {field_name(f.name): f for f in dataclasses.fields(cls)}


def required(f: dataclasses.Field[Any]) -> bool:
    """A field a request must carry: one without a default."""
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def is_json_valued(f: dataclasses.Field[Any]) -> bool:
    return bool(f.metadata.get(_JSON))


def field_type(hint: Any) -> Any:
    """The type a field holds, without its None (str | None → str)."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint


def _value(name: str, f: dataclasses.Field[Any], hint: Any, value: Any) -> Any:
    """The field's value for a request's JSON value: what the command line would give."""
    kind = field_type(hint)
    if is_json_valued(f):
        if not isinstance(value, (list, dict)):
            raise BadRequest(f"{name} must be a JSON list or object")
        return json.dumps(value)  # the command reads it as it reads the flag's text
    if kind is bool:
        if not isinstance(value, bool):
            raise BadRequest(f"{name} must be true or false")
        return value
    if typing.get_origin(kind) is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadRequest(f"{name} must be a list of strings")
        return list(value) or None  # as when the flag is not given
    if kind is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadRequest(f"{name} must be an integer")
        return value
    if kind is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise BadRequest(f"{name} must be a number")
        return float(value)
    if typing.get_origin(kind) is Literal:
        choices = typing.get_args(kind)
        if value not in choices:
            raise BadRequest(f"{name} must be one of {', '.join(map(str, choices))}")
        return value
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be a string")
    return value


def parse_command(request: Any) -> CommandRequest:
    """A typed request, checked, as its command's dataclass; BadRequest when it is not one."""
    if not isinstance(request, dict):
        raise BadRequest("a request is a JSON object")
    name = request.get("command")
    if not isinstance(name, str) or name not in REQUESTS:
        raise BadRequest(f"unknown command {name!r} (one of {', '.join(REQUESTS)})")
    cls = REQUESTS[name]
    known = request_fields(cls)
    unknown = sorted(set(request) - set(known) - {"command"})
    if unknown:
        raise BadRequest(f"{name} takes no {', '.join(unknown)}")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for key, f in known.items():
        if key in request:
            values[f.name] = _value(key, f, hints[f.name], request[key])
        elif required(f):
            raise BadRequest(f"{name} needs {key}")
    return cls(**values)


def parse_command_json(text: str) -> CommandRequest:
    """`request JSON`'s argument, parsed: BadRequest when it is not JSON or not a request."""
    try:
        request = json.loads(text)
    except ValueError as err:
        raise BadRequest(f"not JSON ({err})") from None
    return parse_command(request)
