// Well-formed harness records to start tests from; each test changes what it is about.
import type {
  BenchRecord,
  BuildRecord,
  Device,
  DeviceRecord,
  StaticRecord,
  Stat,
  TaskInfo,
  VerifyRecord,
} from "../../src/shared/contract/records.js";

export const h100: Device = {
  name: "NVIDIA H100 80GB HBM3",
  backend: "cuda",
  driver: "570.86.15",
  torch: "2.7.0",
  cuda: "12.8",
  sms: 132,
  l2Bytes: 52_428_800,
  smClockMHz: 1980,
  python: "3.12.3",
};

export function deviceRecord(): DeviceRecord {
  return { schema: 1, kind: "device", cuda: true, device: h100 };
}

export function taskInfo(): TaskInfo {
  return {
    schema: 1,
    kind: "task",
    ok: true,
    error: null,
    name: "softmax",
    format: "native",
    path: "/repo/kernels/softmax",
    backward: false,
    baseline: "/repo/kernels/softmax/kernel.cu",
    configs: [
      {
        name: "odd",
        heldout: false,
        derived: false,
        dims: { M: 33, N: 257 },
        init: "signed-mixed",
        inputs: [{ name: "x", shape: [33, 257], dtype: "float32" }],
      },
    ],
    notes: [],
    probe: null,
  };
}

export function staticRecord(overrides: Partial<StaticRecord> = {}): StaticRecord {
  return { schema: 1, kind: "static", ok: true, format: "evk", findings: [], ...overrides };
}

export function buildRecord(overrides: Partial<BuildRecord> = {}): BuildRecord {
  return {
    schema: 1,
    kind: "build",
    ok: true,
    format: "evk",
    artifact: "/cache/ab12.so",
    cached: false,
    seconds: 1.2,
    hash: "ab12",
    log: "",
    ...overrides,
  };
}

export function verifyRecord(overrides: Partial<VerifyRecord> = {}): VerifyRecord {
  return {
    schema: 1,
    kind: "verify",
    task: "softmax",
    candidate: "kernel.cu",
    format: "evk",
    ok: true,
    status: "passed",
    reason: null,
    hack: null,
    message: "",
    mismatch: null,
    configs: [
      {
        name: "4096x8192",
        heldout: false,
        derived: false,
        ok: true,
        trials: 3,
        maxAbs: 1.19e-7,
        normRel: 2.3e-8,
        reason: null,
      },
      {
        name: "odd-1999x3001",
        heldout: false,
        derived: false,
        ok: true,
        trials: 3,
        maxAbs: 2.38e-7,
        normRel: 3.1e-8,
        reason: null,
      },
      {
        name: "tall-12289x1000",
        heldout: true,
        derived: false,
        ok: true,
        trials: 2,
        maxAbs: 5.96e-8,
        normRel: 1.9e-8,
        reason: null,
      },
    ],
    checks: [
      { name: "static", ok: true, detail: "0 findings" },
      { name: "inputs-unchanged", ok: true, detail: "bit-identical" },
    ],
    warnings: [],
    seconds: { load: 0.8, verify: 2.4 },
    phases: {
      start: 0.2,
      load: 0.8,
      inputs: 0.3,
      reference: 0.4,
      candidate: 0.9,
      checks: 0.6,
      profiler: 0.2,
    },
    device: h100,
    seed: 1234,
    kernelShares: null,
    libraryKernels: [],
    ...overrides,
  };
}

export function rejectedVerifyRecord(): VerifyRecord {
  const passed = verifyRecord();
  return verifyRecord({
    ok: false,
    status: "rejected",
    reason: "distribution-specific",
    hack: 9,
    message: "right on the declared inputs, wrong on signed, mixed-scale ones",
    mismatch: {
      config: "odd-1999x3001",
      trial: 1,
      output: "output 0",
      index: [17, 2048],
      got: 0,
      expected: -0.4375,
      maxAbs: 3.9,
      maxRel: 1,
      normRel: 0.71,
      nonFinite: 0,
      ok: false,
    },
    configs: passed.configs.map((config, index) =>
      index === 1
        ? { ...config, ok: false, maxAbs: 3.9, normRel: 0.71, reason: "distribution-specific" }
        : config,
    ),
    checks: [...passed.checks, { name: "signed-mixed", ok: false, detail: "normRel 0.71 > 1e-5" }],
    warnings: ["line 12: reads x with a stride that assumes N % 4 == 0"],
  });
}

function stat(medianMs: number, spread: number): Stat {
  return {
    medianMs,
    p20Ms: medianMs - spread,
    p80Ms: medianMs + spread,
    minMs: medianMs - 2 * spread,
    meanMs: medianMs,
    n: 200,
  };
}

export function benchRecord(overrides: Partial<BenchRecord> = {}): BenchRecord {
  return {
    schema: 1,
    kind: "bench",
    task: "softmax",
    ok: true,
    reason: null,
    message: "",
    device: h100,
    seed: 1234,
    ceilings: {
      bandwidthGBs: 3012.4,
      fp32Tflops: 51.2,
      bf16Tflops: 742.9,
      measuredAt: "2026-11-21T21:00:00Z",
      device: h100.name,
    },
    configs: [
      {
        name: "4096x8192",
        dims: { M: 4096, N: 8192 },
        bytes: 268_435_456,
        flops: 167_772_160,
        floorMs: 0.0891,
        eager: stat(0.412, 0.003),
        compile: stat(0.301, 0.002),
        baseline: stat(0.145, 0.001),
        candidate: stat(0.121, 0.0012),
        reason: null,
        derived: false,
        launchBound: false,
      },
      {
        name: "odd-1999x3001",
        dims: { M: 1999, N: 3001 },
        bytes: 47_992_000,
        flops: 29_995_000,
        floorMs: 0.0159,
        eager: stat(0.0981, 0.0011),
        compile: null,
        baseline: null,
        candidate: stat(0.0302, 0.0004),
        reason: null,
        derived: false,
        launchBound: false,
      },
    ],
    notes: [],
    profile: {
      config: "4096x8192",
      kernels: [
        { name: "softmax_kernel(float const*, float*, int, int)", us: 118.4, calls: 1 },
        { name: "void at::native::vectorized_elementwise_kernel<4>", us: 2.1, calls: 1 },
      ],
    },
    phases: {
      load: 0.8,
      start: 0.3,
      inputs: 0.6,
      compile: 0,
      timing: 1.6,
      profiler: 0.9,
      checks: 0.2,
    },
    probeCache: null,
    race: null,
    seconds: 41.7,
    ...overrides,
  };
}
