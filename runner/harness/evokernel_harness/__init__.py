"""evokernel's Python harness: load a kernel task and a candidate, check it, time it.

Driven from TypeScript (runner/src/harness) through `python -m evokernel_harness`; every
command writes one JSON record to the path given by --out (see docs/DESIGN.md).
"""

VERSION = "0.1.0"
