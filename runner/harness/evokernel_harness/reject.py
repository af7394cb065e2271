"""How a verification ends early: Reject (a verdict: the candidate is refused for a named
reason) or Crash (the candidate broke the process; nothing more can run in it)."""

from typing import Any


class Reject(Exception):
    def __init__(self, reason: str, message: str, mismatch: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.reason, self.message, self.mismatch = reason, message, mismatch


class Crash(Exception):
    """The candidate broke the process's CUDA context or raised: nothing more can run."""
