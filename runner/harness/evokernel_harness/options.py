"""The harness's command line, its grammar only: argv → argparse.Namespace → the command's typed
request (command_request.py), what the commands take. The only module (with cli.py) that knows
argparse. A typed request (the runner's, and `request JSON` here) gives the same dataclass: its
fields are these options' dests, camelCased."""

import argparse
import dataclasses

from .command_request import REQUESTS, STAGES, CommandRequest


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evokernel_harness", description="evokernel's verification and timing harness")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sp.add_argument("--out", help="write the JSON record here (default: stdout)")
        return sp

    def task_spec(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--task-spec",
            help="a native task's task.json as JSON, as the runner read and checked it: the file is not read again",
        )

    common(sub.add_parser("device", help="what this machine has"))
    sp = common(sub.add_parser("static", help="static check of a candidate's source"))
    sp.add_argument("--candidate", required=True)
    sp.add_argument("--task")
    task_spec(sp)
    sp.add_argument("--relaxed", action="store_true", help="flag only the reference's own ops (CPU tests)")
    sp.add_argument(
        "--reference-ops", help="the task's reference ops as a JSON list (from static-context), instead of --task"
    )
    sp.add_argument(
        "--libraries", choices=("allow", "deny"), default="allow", help="with --reference-ops: the task's library rule"
    )
    sp = common(
        sub.add_parser("static-context", help="what the static check needs of a task (for static --reference-ops)")
    )
    sp.add_argument("--task", required=True)
    task_spec(sp)
    sp = common(sub.add_parser("build", help="compile a candidate (cached by content hash)"))
    sp.add_argument("--candidate", required=True)
    sp.add_argument("--cache")
    sp.add_argument("--define", action="append", dest="defines", help="NAME=VALUE passed as -D")
    sp.add_argument(
        "--nvcc-flag",
        action="append",
        dest="nvcc_flags",
        help="a precision-keeping nvcc flag (write --nvcc-flag=-maxrregcount=64)",
    )
    sp.add_argument("--arch")
    sp.add_argument("--timeout", type=int, help="seconds (default: 120 for evk, 900 for torch extensions)")
    sp.add_argument(
        "--task",
        help="the task it is built for: a KernelBench ModelNew that builds its extension when constructed is "
        "constructed here, off the GPU lock",
    )
    task_spec(sp)
    sp = common(sub.add_parser("inspect", help="load and validate a task"))
    sp.add_argument("--task", required=True)
    task_spec(sp)
    sp.add_argument("--probe", action="store_true", help="run the reference (CPU) and the degenerate-task check")
    for name in ("verify", "bench", "evaluate"):
        if name == "evaluate":  # three records, one file each: no --out
            sp = sub.add_parser(name, help="quick check, full verification and timing of a candidate in one process")
        else:
            sp = common(sub.add_parser(name, help=f"{name} a candidate"))
        sp.add_argument("--task", required=True)
        task_spec(sp)
        sp.add_argument("--candidate", required=name == "evaluate")
        sp.add_argument("--artifact")
        sp.add_argument("--cache")
        sp.add_argument("--define", action="append", dest="defines")
        sp.add_argument("--nvcc-flag", action="append", dest="nvcc_flags")
        sp.add_argument("--seed", type=int)
        sp.add_argument(
            "--config",
            action="append",
            dest="config",
            help="only this configuration (by name; held-out ones too); repeat for several. The "
            "seed gives each one the same inputs as in a run of them all",
        )
        if name in ("verify", "evaluate"):
            sp.add_argument(
                "--heldout", action="store_true", help="include held-out configurations (final verification)"
            )
            sp.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
            sp.add_argument(
                "--static",
                help="this candidate's static-check record as JSON (from `static`, with the same "
                "task and device): its findings are carried into the record, the source is not checked again",
            )
            sp.add_argument("--trials", type=int, default=2)
            if name == "verify":
                sp.add_argument(
                    "--quick", action="store_true", help="the smallest visible configuration only (a cheap first gate)"
                )
        if name in ("bench", "evaluate"):
            sp.add_argument("--baseline")
            sp.add_argument("--baseline-artifact")
            sp.add_argument("--no-baseline", action="store_true")
            sp.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
            sp.add_argument("--ceilings", help="JSON file caching this GPU's measured ceilings")
            sp.add_argument("--budget", type=float, default=1.5, help="seconds of timing per configuration")
            sp.add_argument(
                "--no-probe-cache",
                action="store_true",
                help="profile the reference on every configuration, never reading the probe cache",
            )
        if name == "bench":
            sp.add_argument(
                "--warm-compile",
                action="store_true",
                help="the reference alone (with --no-baseline, no candidate): torch.compile's baseline "
                "compiled for every visible configuration before the GPU's lock is taken (a search "
                "runs beside it), then eager and torch.compile timed as a judged bench's judge times them",
            )
            sp.add_argument(
                "--screen",
                action="store_true",
                help="time as the search's screen does: beside the baseline only, short head start, "
                "as many samples as the spread needs",
            )
        if name in ("bench", "evaluate"):
            sp.add_argument(
                "--race",
                help="the screen only: a JSON object, configuration → the leader's least "
                "favourable speedup there; a candidate that can no longer reach it over every "
                "configuration (see --race-ceilings) stops",
            )
            sp.add_argument(
                "--race-ceilings",
                help="the screen only: a JSON object, configuration → the kernel to beat's time "
                "there over the roofline floor; a configuration still to be timed counts at the "
                "most a kernel could gain there (none given: no candidate stops early)",
            )
        if name == "evaluate":
            for stage in STAGES:
                sp.add_argument(f"--{stage}-out", required=True, help=f"write the {stage} record here")
    common(sub.add_parser("ceilings", help="measure this GPU's bandwidth and matmul rates"))
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
