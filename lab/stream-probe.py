"""What the stream check (streams.py) sees of one candidate's call, step by step (GPU machine).

    python3 lab/stream-probe.py TASK_DIR CANDIDATE ARTIFACT [CONFIG]

Loads the candidate as verification does, makes the first (or the named) configuration's case,
and prints: the device's tail after the caller's stream finished, every GPU event of one
profiled call (name, stream, start and end relative to the head-start marker's end), what
escaped() makes of them, and check()'s verdict; any exception with its traceback. For finding
why a candidate whose work escapes is, or is not, called side-stream.
"""

import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runner", "harness"))

import torch  # noqa: E402

from evokernel_harness import streams  # noqa: E402
from evokernel_harness.candidates.load import Candidate  # noqa: E402
from evokernel_harness.tasks import load_task  # noqa: E402


def main(argv: list[str]) -> int:
    task_dir, cand_path, artifact = argv[:3]
    task = load_task(task_dir)
    config = next((c for c in task.configs if len(argv) < 4 or c.name == argv[3]), task.configs[0])
    cand = Candidate(cand_path, artifact, task)
    case = task.make_case(config, 1, torch.device("cuda"))
    print(f"format {cand.format}, configuration {config.name}")
    fn = lambda: cand.run(case.clone())  # noqa: E731
    for step, call in (
        ("tail_ms", lambda: streams.tail_ms(fn)),
        ("profile_call", lambda: streams.profile_call(fn)),
        ("check", lambda: streams.check(fn)),
    ):
        try:
            out = call()
        except Exception:
            print(f"{step}: raised\n{traceback.format_exc()}")
            continue
        if step == "profile_call":
            marks = sorted((e for e in out if streams.MARK in e[0]), key=lambda e: e[2])
            lo = marks[0][3] if marks else 0.0
            for name, stream, start, end in out:
                print(f"  event {name[:60]:60s} stream {stream} start {start - lo:9.1f} us end {end - lo:9.1f} us")
            print(f"escaped: {json.dumps(streams.escaped(out), default=str)[:2000]}")
        else:
            print(f"{step}: {json.dumps(out, default=str)[:2000]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
