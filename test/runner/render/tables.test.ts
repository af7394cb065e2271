// Snapshots of everything a person reads: a change to a table shows up in review.
import { describe, expect, it } from "vitest";
import type { CandidateResult } from "../../../runner/src/cascade.js";
import { failedVerify } from "../../../runner/src/harness/failed-records.js";
import { renderBench } from "../../../runner/src/render/bench-table.js";
import { renderCandidates } from "../../../runner/src/render/candidates.js";
import { renderDevice } from "../../../runner/src/render/device.js";
import { describeEvent } from "../../../runner/src/render/progress.js";
import { renderTasks, type TaskRow } from "../../../runner/src/render/tasks-table.js";
import { renderStatic, renderVerify } from "../../../runner/src/render/verify-table.js";
import {
  benchRecord,
  buildRecord,
  deviceRecord,
  rejectedVerifyRecord,
  staticRecord,
  verifyRecord,
} from "../../helpers/records.js";

describe("verify report", () => {
  it("a pass", () => {
    expect(renderVerify(verifyRecord())).toMatchSnapshot();
  });

  it("gives the verify step's time as progress gave it, the harness's own as its parts", () => {
    // The harness: 0.8 s loading, 2.4 s of checks; the step (its process, the wait): 9.5 s.
    const text = renderVerify(verifyRecord(), 9.5);
    expect(text).toContain(
      "PASSED in 9.5 s (in the harness: loading 0.8 s, checks 2.4 s; the rest starting its process and waiting for the device)",
    );
    expect(renderVerify(verifyRecord())).toContain("PASSED in 3.2 s");
  });

  it("a rejection, with the mismatch, failed checks and warnings", () => {
    expect(renderVerify(rejectedVerifyRecord())).toMatchSnapshot();
  });

  it("a pass that calls a library states the share of its GPU time there", () => {
    const text = renderVerify(
      verifyRecord({
        format: "torch-ext",
        kernelShares: { own: 0.031, library: 0.962, torch: 0.004, harmless: 0.003 },
        libraryKernels: ["nvjet_tst_128x64_64x8_1x2_h_bz_NNT"],
      }),
    );
    expect(text).toContain("GPU time: 3 % its own kernels, 96 % library kernels");
    expect(text).toContain("library: nvjet_tst_128x64_64x8_1x2_h_bz_NNT");
  });

  it("a run that crashed", () => {
    const record = failedVerify(
      {
        status: "crash",
        message: "killed by SIGSEGV",
        log: "Fatal Python error: Segmentation fault",
      },
      { task: "softmax", candidate: "kernel.cu" },
    );
    expect(renderVerify(record)).toMatchSnapshot();
  });

  it("static findings", () => {
    const record = staticRecord({
      ok: false,
      format: "py",
      findings: [
        {
          code: "timer-patching",
          hack: 6,
          line: 14,
          text: "torch.cuda.Event.elapsed_time = fake",
          message: "replaces a timing function",
          severity: "reject",
        },
        {
          code: "unused-import",
          hack: null,
          line: 2,
          text: "import os",
          message: "unused",
          severity: "warn",
        },
      ],
    });
    expect(renderStatic("cheat.py", record)).toMatchSnapshot();
    expect(renderStatic("kernel.cu", staticRecord())).toBe("static check: kernel.cu (evk) ok");
  });
});

describe("bench report", () => {
  it("times, floor, % of floor and speedups", () => {
    expect(renderBench(benchRecord())).toMatchSnapshot();
  });

  it("names the fp32-accurate tensor-core rate (3xTF32) where the ceilings have it", () => {
    const base = benchRecord();
    const ceilings = base.ceilings === null ? null : { ...base.ceilings, tf32x3Tflops: 163.5 };
    expect(renderBench({ ...base, ceilings })).toContain(
      "51.2 fp32 TFLOP/s (164 fp32-accurate by 3xTF32), 743 bf16 TFLOP/s",
    );
    expect(renderBench(base)).toContain("51.2 fp32 TFLOP/s, 743 bf16 TFLOP/s");
  });

  it("launch-bound configurations are marked, with the harness's notes", () => {
    const base = benchRecord();
    const record = {
      ...base,
      configs: base.configs.map((config, i) => ({ ...config, launchBound: i === 1 })),
      notes: [
        "odd-1999x3001: launch-bound: the reference's kernels run 9.1 µs a call (under 20 µs), so its times measure launch overhead; not in the headline speedup",
        "small-odd-sizes: not timed: a derived configuration whose reference runs 4.2 µs a call (launch-bound)",
      ],
    };
    const text = renderBench(record);
    expect(text).toContain("odd-1999x3001 (launch-bound)");
    expect(text).toContain("notes:\n  - odd-1999x3001: launch-bound");
    expect(text).toMatchSnapshot();
  });

  it("a refusal", () => {
    const record = benchRecord({
      ok: false,
      reason: "tiny-problem",
      message: "the reference takes 4 µs a call: launch overhead, not work",
      configs: [],
    });
    expect(renderBench(record)).toMatchSnapshot();
  });
});

describe("tasks table", () => {
  it("valid, invalid and probed tasks", () => {
    const base = { configs: 3, heldout: 2, backward: false, problems: [], probe: null, notes: [] };
    const rows: TaskRow[] = [
      { ...base, name: "softmax", format: "native", path: "kernels/softmax" },
      {
        ...base,
        name: "rmsnorm_backward",
        format: "native",
        path: "kernels/rmsnorm_backward",
        backward: true,
        probe: { ok: true, reason: null, message: "reference runs" },
      },
      {
        ...base,
        name: "broken",
        format: "native",
        path: "kernels/broken",
        configs: null,
        heldout: null,
        backward: null,
        problems: ['task.json configs[1].dims: configuration "odd" does not bind dimension "N"'],
      },
      {
        ...base,
        name: "23_Softmax",
        format: "kernelbench",
        path: "level1/23_Softmax.py",
        configs: 6,
        heldout: 0,
        notes: ["dropped derived config batch_size=1: the reference fails"],
      },
      {
        ...base,
        name: "degenerate",
        format: "native",
        path: "t/degenerate",
        probe: {
          ok: false,
          reason: "degenerate-task",
          message: "zeros pass the task's own tolerance",
        },
      },
    ];
    expect(renderTasks(rows)).toMatchSnapshot();
    expect(renderTasks([])).toBe("no tasks found");
  });
});

describe("candidates report", () => {
  it("several candidates with a summary", () => {
    const seconds = { compile: 1.2, verify: 3.4, time: 0, total: 5.1 };
    const results: CandidateResult[] = [
      {
        candidate: "a.cu",
        ok: true,
        status: "passed",
        reason: null,
        message: "",
        static: staticRecord(),
        build: buildRecord(),
        verify: verifyRecord({ candidate: "a.cu" }),
        bench: null,
        seconds,
      },
      {
        candidate: "b.cu",
        ok: false,
        status: "compile-error",
        reason: "compile-error",
        message: 'b.cu(12): error: identifier "tid" is undefined',
        static: staticRecord(),
        build: buildRecord({ ok: false, artifact: null, log: "…" }),
        verify: null,
        bench: null,
        seconds: { ...seconds, verify: 0 },
      },
    ];
    expect(renderCandidates(results)).toMatchSnapshot();
  });
});

describe("device and progress lines", () => {
  it("a GPU machine", () => {
    expect(renderDevice(deviceRecord())).toMatchSnapshot();
  });

  it("progress events", () => {
    expect(describeEvent({ type: "start", step: "build", candidate: "/tmp/x/kernel.cu" })).toBe(
      "build  kernel.cu …",
    );
    expect(
      describeEvent({
        type: "done",
        step: "verify",
        candidate: "kernel.cu",
        ok: false,
        seconds: 12.3,
        detail: "race",
      }),
    ).toBe("verify kernel.cu FAILED (race, 12 s)");
  });
});
