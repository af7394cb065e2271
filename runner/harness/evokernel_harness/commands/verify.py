"""`verify`: the verdict on a candidate, the judge's (judge.py). The candidate's process runs
the shared stages (stages.py: begin, load, the verification of what loaded), as the first two of
`evaluate`'s cascade do."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..command_request import VerifyRequest
from ..record import VerifyRecord
from .stages import Begun, Loaded, begin, load, verify_loaded

if TYPE_CHECKING:
    from ..outputs import Dump


def cmd_verify(request: VerifyRequest) -> VerifyRecord:
    """The verdict is the judge's (judge.py): the candidate is verified in a process of its own
    and its passing outputs compared again where it never ran."""
    from ..judge import verify_judged

    return verify_judged(request, _verify_in_process)


def _verify_in_process(request: VerifyRequest, dump: Dump | None) -> VerifyRecord:
    """The verification in the candidate's process: its record is only a claim."""
    begun = begin(request, time.perf_counter())
    if not isinstance(begun, Begun):
        return begun
    loaded = load(request, begun)
    if not isinstance(loaded, Loaded):
        return loaded
    return verify_loaded(request, begun, loaded, quick=request.quick, dump=dump)
