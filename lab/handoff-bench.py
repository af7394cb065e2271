"""Lab benchmark (issue 33.7): the hand-off of a trial's outputs from the candidate's process
to the judge (outputs.Dump.write, then outputs.read onto the GPU), against the way it was done
until 2026-11-29 (one file an output, written through one pinned buffer; read into a new
bytearray, then copied to the GPU from pageable memory). Same folder kind as the sandbox's
scratch (a tmpfs: /dev/shm here), same sizes as KernelBench's level-1 outputs.

    python3 lab/handoff-bench.py [--sizes-mb 6442,1024,256] [--repeats 3] [--folder /dev/shm]

Prints, per size and way, the median seconds of writing and of reading (min–max over the
repeats) and GB/s, and checks that the judge reads back the bytes written.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runner", "harness"))
from evokernel_harness import outputs  # noqa: E402


def old_write(folder, t):
    """As outputs.Dump wrote until 2026-11-29: one file, one 64 MiB pinned buffer, in turn."""
    stage = torch.empty(64 << 20, dtype=torch.uint8, pin_memory=True)
    data = t.contiguous().reshape(-1).view(torch.uint8)
    with open(os.path.join(folder, "c0-0.0.bin"), "wb") as f:
        for start in range(0, data.numel(), stage.numel()):
            piece = data[start : start + stage.numel()]
            part = stage[: piece.numel()]
            part.copy_(piece)
            f.write(memoryview(part.numpy()))


def old_read(folder, ref):
    """As the judge read until 2026-11-29: a new bytearray, readv, frombuffer, .to(GPU)."""
    size = ref.numel() * ref.element_size()
    fd = os.open(os.path.join(folder, "c0-0.0.bin"), os.O_RDONLY)
    try:
        buf = bytearray(size)
        view, got = memoryview(buf), 0
        while got < size:
            got += os.readv(fd, [view[got:]])
    finally:
        os.close(fd)
    return torch.frombuffer(buf, dtype=ref.dtype).reshape(ref.shape).to(ref.device)


def hand_off(way, folder, ref):
    """(write seconds, read seconds, what the judge read) for one trial's output, one way."""
    if way == "old":
        w, _ = timed(lambda: old_write(folder, ref))
        r, got = timed(lambda: old_read(folder, ref))
        return w, r, got
    dump = outputs.Dump(folder)
    w, _ = timed(lambda: dump.write(0, 0, [ref]))
    r, got = timed(lambda: outputs.read(folder, 0, 0, [ref], "bench", device="cuda")[0])
    return w, r, got


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start, out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes-mb", default="6442,1024,256", help="output sizes in MB (10^6 bytes)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("handoff-bench: no CUDA GPU", file=sys.stderr)
        return 3
    print(
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
        f"{outputs.WORKERS} workers, parts of {outputs.PART >> 20} MiB, stages of {outputs.STAGE >> 20} MiB"
    )
    print(f"{'MB':>6} {'way':<5} {'write s (min-max)':>22} {'GB/s':>6} {'read s (min-max)':>22} {'GB/s':>6}")
    for mb in (int(x) for x in args.sizes_mb.split(",")):
        n = mb * 10**6 // 4
        ref = torch.randn(n, device="cuda")
        nbytes = n * 4
        for way in ("old", "new"):
            writes, reads = [], []
            for _ in range(args.repeats):
                folder = tempfile.mkdtemp(prefix="evk-handoff-", dir=args.folder)
                try:
                    w, r, got = hand_off(way, folder, ref)
                    if not torch.equal(got, ref):
                        print(f"handoff-bench: {way} read back other bytes at {mb} MB", file=sys.stderr)
                        return 1
                    del got
                    writes.append(w)
                    reads.append(r)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
            wm, rm = statistics.median(writes), statistics.median(reads)
            print(
                f"{mb:>6} {way:<5} {wm:>8.3f} ({min(writes):.3f}-{max(writes):.3f}) {nbytes / wm / 1e9:>6.2f} "
                f"{rm:>8.3f} ({min(reads):.3f}-{max(reads):.3f}) {nbytes / rm / 1e9:>6.2f}",
                flush=True,
            )
        del ref
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
