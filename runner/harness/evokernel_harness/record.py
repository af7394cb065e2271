"""The types of what the harness writes: one JSON record per command, a TypedDict per record
kind whose fields are contract/*.schema.json's (generated from src/shared/contract/records.ts;
tests/test_contract.py holds each to its schema's properties and required fields: a field may
be required here where the schema's is optional, never the other way), and the
JSON objects inside one (Record: a configuration's row, a check, the device, …)."""

from typing import Any, Literal, NotRequired, Optional, TypedDict

Record = dict[str, Any]  # a JSON object inside a record (a row, a check, the device's fields)
Result = dict[str, Any]  # compare()'s verdict on one output, with where it was found


class DeviceRecord(TypedDict):
    """`device`: device-record.schema.json."""

    schema: int
    kind: Literal["device"]
    cuda: bool
    device: Record


class StaticRecord(TypedDict):
    """`static`: static-record.schema.json."""

    schema: int
    kind: Literal["static"]
    ok: bool
    format: str
    findings: list[Record]


class StaticContextRecord(TypedDict):
    """`static-context`: static-context.schema.json."""

    schema: int
    kind: Literal["static-context"]
    task: str
    referenceOps: list[str]
    libraries: str


class BuildRecord(TypedDict):
    """`build`: build-record.schema.json."""

    schema: int
    kind: Literal["build"]
    ok: bool
    format: str
    artifact: Optional[str]
    cached: bool
    seconds: float
    hash: str
    log: str


class TaskRecord(TypedDict):
    """`inspect`: task-record.schema.json."""

    schema: int
    kind: Literal["task"]
    ok: bool
    error: Optional[str]
    name: str
    format: str
    path: str
    backward: bool
    baseline: Optional[str]
    configs: list[Record]
    notes: list[str]
    probe: Optional[Record]


class VerifyRecord(TypedDict):
    """`verify`, and `evaluate`'s quick and verify stages: verify-record.schema.json. The
    device is None only until the machine is known."""

    schema: int
    kind: Literal["verify"]
    task: str
    candidate: str
    format: str
    ok: bool
    status: str
    reason: Optional[str]
    hack: Optional[int]
    message: str
    mismatch: Optional[Record]
    configs: list[Record]
    checks: list[Record]
    warnings: list[str]
    seconds: Record
    phases: Record  # the schema's is optional; the harness always writes it
    device: Optional[Record]
    seed: Optional[int]
    kernelShares: NotRequired[Optional[Record]]
    libraryKernels: NotRequired[list[str]]
    # not the contract's: the static check's record, on a refusal by the static check, and
    # what the candidate's run showed (verdict.py)
    static: NotRequired[StaticRecord]
    evidence: NotRequired[Record]


class BenchRecord(TypedDict):
    """`bench`, and `evaluate`'s bench stage: bench-record.schema.json."""

    schema: int
    kind: Literal["bench"]
    task: str
    ok: bool
    reason: Optional[str]
    message: str
    device: Record
    ceilings: Optional[Record]
    seed: NotRequired[Optional[int]]
    configs: list[Record]
    notes: NotRequired[list[str]]
    profile: NotRequired[Optional[Record]]
    phases: NotRequired[Record]
    probeCache: NotRequired[Optional[Record]]
    race: NotRequired[Optional[Record]]
    seconds: float
    # not the contract's: the kernels timed, as given, and the timer's head start (bench_judge.py)
    baseline: NotRequired[Optional[str]]
    candidate: NotRequired[Optional[str]]
    headStart: NotRequired[Optional[Record]]


class CeilingsRecord(TypedDict):
    """`ceilings`: this GPU's measured rates (roofline.py measure_ceilings), as the bench
    record's `ceilings` carries them."""

    schema: int
    kind: Literal["ceilings"]
    bandwidthGBs: float
    fp32Tflops: float
    bf16Tflops: float
    tf32x3Tflops: float
    measuredAt: str
    device: str


# Each record kind by its schema in contract/ (the ceilings' has none of its own).
SCHEMAS: dict[str, type] = {
    "device-record.schema.json": DeviceRecord,
    "static-record.schema.json": StaticRecord,
    "static-context.schema.json": StaticContextRecord,
    "build-record.schema.json": BuildRecord,
    "task-record.schema.json": TaskRecord,
    "verify-record.schema.json": VerifyRecord,
    "bench-record.schema.json": BenchRecord,
}
