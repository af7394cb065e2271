"""Where a harness command's seconds go: named phases, summed, that never overlap.

`lap(name)` charges the time since the last mark to `name` (the phase that just ended).
`part(name)` is a block whose time is charged to `name` and to nothing else: time spent
before it, outside any part, waits for the next lap's name; a part inside another part is
taken out of the outer one. So the phases always add up to the wall time measured.
"""

import time
from contextlib import contextmanager
from typing import Iterator


class Phases:
    def __init__(self) -> None:
        self._seconds = {}
        self._mark = time.perf_counter()
        self._pending = 0.0  # outside any part, not yet named by a lap
        self._stack = []

    def _add(self, name, seconds):
        self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    def _elapsed(self):
        now = time.perf_counter()
        elapsed, self._mark = now - self._mark, now
        return elapsed

    def lap(self, name: str) -> None:
        """The phase that ends now was `name` (inside a part: the part's time so far)."""
        elapsed = self._elapsed()
        if self._stack:
            self._add(self._stack[-1], elapsed)
            return
        self._add(name, self._pending + elapsed)
        self._pending = 0.0

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        elapsed = self._elapsed()
        if self._stack:
            self._add(self._stack[-1], elapsed)
        else:
            self._pending += elapsed
        self._stack.append(name)
        try:
            yield
        finally:
            self._add(name, self._elapsed())
            self._stack.pop()

    @property
    def seconds(self) -> dict[str, float]:
        return {name: round(s, 4) for name, s in self._seconds.items()}
