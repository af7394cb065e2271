// `evokernel optimize` over several GPUs (issue 38.1) against the stand-in harness
// (test/helpers/fake-gpu-harness.mjs): every lane screens candidates at the same time, a
// slower GPU does not make its candidates lose, the final checks run on the first GPU, the
// one-GPU run is as it was, and a bad --gpus is a usage error.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { resultSchema, type Result } from "../../../src/shared/result.js";
import { runCli } from "../../helpers/cli.js";

const fakeHarness = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));

type LaneLine = { command: string; gpu: string; startedAs: string; heldout: boolean };
type ArchiveLine = {
  individual: { hash: string; evaluation: { fitness: number | null; gpu?: string } } | null;
};

type Run = {
  exitCode: number;
  stderr: string;
  result: Result;
  lanes: LaneLine[];
  barrier: string[];
  archive: ArchiveLine[];
};

/** One optimize run on the stand-in, with its result, the lane log and the archive. */
async function optimize(
  args: string[],
  env: Record<string, string>,
  barrier?: number,
): Promise<Run> {
  const dir = await mkdtemp(join(tmpdir(), "evokernel-gpus-"));
  try {
    const laneLog = join(dir, "lanes.log");
    const barrierLog = join(dir, "barrier.log");
    const archive = join(dir, "archive.jsonl");
    const run = await runCli(
      [
        "optimize",
        "softmax",
        "--proposer",
        "tuner",
        "--seed",
        "1",
        "--archive",
        archive,
        "--json",
        ...args,
      ],
      {
        env: {
          ANTHROPIC_API_KEY: "",
          EVOKERNEL_PYTHON: fakeHarness,
          EVOKERNEL_SANDBOX: "off",
          EVOKERNEL_CACHE: dir,
          EVOKERNEL_FAKE_LANE_LOG: laneLog,
          ...(barrier === undefined
            ? {}
            : { EVOKERNEL_FAKE_LANE_BARRIER: `${barrier}:${barrierLog}` }),
          ...env,
        },
      },
    );
    const lines = async (file: string) =>
      (await readFile(file, "utf8").catch(() => "")).trim().split("\n").filter(Boolean);
    if (![0, 1].includes(run.exitCode))
      throw new Error(`optimize exited ${run.exitCode}:\n${run.stderr}`);
    return {
      exitCode: run.exitCode,
      stderr: run.stderr,
      result: resultSchema.parse(JSON.parse(run.stdout)),
      lanes: (await lines(laneLog)).map((line) => JSON.parse(line) as LaneLine),
      barrier: await lines(barrierLog),
      archive: (await lines(archive)).map((line) => JSON.parse(line) as ArchiveLine),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Where the screens (`evaluate`) ran, where the final checks' verifications (`verify`) ran, and
 * where everything else on a GPU (the final timings) ran.
 */
function where(run: Run) {
  const gpus = (keep: (command: string) => boolean) =>
    new Set(run.lanes.filter((line) => keep(line.command)).map((line) => line.gpu));
  return {
    screens: gpus((command) => command === "evaluate"),
    verifications: gpus((command) => command === "verify"),
    others: gpus((command) => command !== "evaluate" && command !== "verify"),
  };
}

describe("evokernel optimize over several GPUs (stand-in)", () => {
  it("on one GPU runs as it always did: no lanes in the result or the archive", async () => {
    const run = await optimize(["--candidates", "4", "--parallel", "2"], {
      CUDA_VISIBLE_DEVICES: "3",
    });
    expect(run.result.search.lanes).toBeUndefined();
    expect(run.result.search).toMatchObject({ candidates: 4, stoppedBy: "candidates" });
    expect(run.archive.every((line) => line.individual?.evaluation.gpu === undefined)).toBe(true);
    expect(where(run)).toEqual({
      screens: new Set(["3"]),
      verifications: new Set(["3"]),
      others: new Set(["3"]),
    });
    expect(run.stderr).not.toContain("lanes:");
  });

  it("with 2 GPUs (--gpus) screens on both at once and runs the final checks on the first", async () => {
    const run = await optimize(
      ["--gpus", "5,2", "--candidates", "8", "--parallel", "4"],
      { CUDA_VISIBLE_DEVICES: "2,5,7" },
      2,
    );
    // both lanes held a screen at the same time (the stand-in's barrier met)
    expect(run.barrier.filter((line) => line.startsWith("alone"))).toEqual([]);
    expect(run.barrier.some((line) => line.startsWith("met"))).toBe(true);
    const { screens, verifications, others } = where(run);
    expect(screens).toEqual(new Set(["5", "2"]));
    // every final timing on the first GPU; the re-verification (held-out configurations)
    // beside it, on the other
    expect(others).toEqual(new Set(["5"]));
    expect(verifications).toEqual(new Set(["2"]));
    expect(run.lanes.some((line) => line.heldout)).toBe(true);
    const lanes = run.result.search.lanes ?? [];
    expect(lanes.map((lane) => lane.gpu)).toEqual(["5", "2"]);
    expect(lanes.every((lane) => lane.evaluated > 0 && lane.busySeconds >= 0)).toBe(true);
    // every screen is counted on its lane (the kernel to beat's included)
    expect(lanes.reduce((sum, lane) => sum + lane.evaluated, 0)).toBe(
      run.lanes.filter((line) => line.command === "evaluate").length,
    );
    expect(run.stderr).toMatch(/searching on 2 GPUs \(5, 2\)/);
    // each candidate's progress line names the GPU that screened it
    expect(run.stderr).toMatch(/^\[\s*\d+\/8\] c\d+ ok.* on GPU 2 \|/m);
    expect(run.stderr).toMatch(/^\[\s*\d+\/8\] c\d+ ok.* on GPU 5 \|/m);
    expect(run.stderr).toMatch(/lanes: GPU 5: \d+ evaluated, [\d.]+ s busy; GPU 2: \d+ evaluated/);
    const onLanes = run.archive.flatMap((line) => line.individual?.evaluation.gpu ?? []);
    expect(new Set(onLanes)).toEqual(new Set(["5", "2"]));
  });

  it("with 4 GPUs (CUDA_VISIBLE_DEVICES) uses every one at once", async () => {
    const run = await optimize(
      ["--candidates", "8", "--parallel", "4"],
      { CUDA_VISIBLE_DEVICES: "0,1,2,3" },
      4,
    );
    expect(run.barrier.filter((line) => line.startsWith("alone"))).toEqual([]);
    expect(where(run)).toEqual({
      screens: new Set(["0", "1", "2", "3"]),
      verifications: new Set(["3"]),
      others: new Set(["0"]),
    });
    expect(run.result.search.lanes?.map((lane) => lane.gpu)).toEqual(["0", "1", "2", "3"]);
  });

  it("a GPU 5 % slower does not make its candidates lose: each is timed beside the kernel to beat on its own GPU", async () => {
    const args = ["--gpus", "0,1", "--candidates", "8", "--parallel", "4"];
    const even = await optimize(args, {}, 2);
    const slowed = await optimize(args, { EVOKERNEL_FAKE_SLOW_GPU: "1:1.05" }, 2);
    const fitness = (run: Run) =>
      new Map(
        run.archive.flatMap((line) =>
          line.individual === null
            ? []
            : [[line.individual.hash, line.individual.evaluation.fitness]],
        ),
      );
    const onSlow = slowed.archive.filter((line) => line.individual?.evaluation.gpu === "1");
    expect(onSlow.length).toBeGreaterThan(0);
    // Compared where both runs timed the candidate in full. One raced out (fitness null) in
    // one run and not the other is no difference of GPUs: racing compares with the leader of
    // the moment, and which candidates have finished by then depends on how busy the machine
    // is (CI, 2026-11-29: null against 1.0).
    const before = fitness(even);
    let compared = 0;
    for (const [hash, value] of fitness(slowed)) {
      const was = before.get(hash);
      if (value === null || was === null || was === undefined) continue;
      expect(value).toBeCloseTo(was, 9);
      compared += 1;
    }
    const timedOnSlow = onSlow.filter((line) => line.individual?.evaluation.fitness !== null);
    expect(timedOnSlow.length).toBeGreaterThan(0);
    expect(compared).toBeGreaterThan(0);
    // Both runs keep a best. Which one is not compared: candidates of one speed tie, the final
    // checks take contenders by the order they finished in, and pass over one the search saw
    // slower on a configuration, so on a busy machine the kept one differs (CI, 2026-11-29: c6
    // against c8, fitness 1.43 against 1.25, each timed in full in both runs); what a slower GPU
    // must not change, each candidate's fitness, is compared above
    expect(slowed.result.best === undefined).toBe(even.result.best === undefined);
  });

  it("a GPU whose fork server dies at every start is given up, and no candidate is blamed for it", async () => {
    // GPU 1's servers run two requests, then each exits as it takes the next, before it
    // begins it: those requests never ran, so they run again on GPU 0
    const run = await optimize(["--gpus", "0,1", "--candidates", "12", "--parallel", "4"], {
      EVOKERNEL_FAKE_GPU_DIES: "1:2",
    });
    expect(run.result.search).toMatchObject({ candidates: 12, evaluated: 12, passed: 12 });
    const [first, second] = run.result.search.lanes ?? [];
    expect(first?.stopped).toBeUndefined();
    expect(second?.stopped).toContain("the fork server died (exit 9)");
    expect(run.stderr).toMatch(/given up/);
    expect(run.stderr).not.toMatch(/\bcrash\b/);
    // the final checks ran on GPU 0, and GPU 1 screened no more than it was let
    expect(where(run).verifications).toEqual(new Set(["0"]));
    expect(run.lanes.filter((line) => line.gpu === "1").length).toBeLessThanOrEqual(2);
  });

  it("a GPU the machine does not have stops the run before the search, naming it (exit 3)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evokernel-gpus-"));
    try {
      const run = await runCli(
        ["optimize", "softmax", "--proposer", "tuner", "--gpus", "0,6", "--candidates", "2"],
        {
          env: {
            ANTHROPIC_API_KEY: "",
            EVOKERNEL_PYTHON: fakeHarness,
            EVOKERNEL_SANDBOX: "off",
            EVOKERNEL_CACHE: dir,
            EVOKERNEL_FAKE_GPUS: "4",
            EVOKERNEL_FAKE_LANE_LOG: join(dir, "lanes.log"),
          },
        },
      );
      expect(run.exitCode, run.stderr).toBe(3);
      expect(run.stderr).toContain("GPU 6 (from --gpus or CUDA_VISIBLE_DEVICES) is not a CUDA GPU");
      // nothing was screened
      expect(await readFile(join(dir, "lanes.log"), "utf8").catch(() => "")).not.toContain(
        "evaluate",
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [["--gpus", "0,,1"], {}, "--gpus is a comma-separated list of GPU indices or UUIDs"],
    [["--gpus", "0,0"], {}, "--gpus names GPU 0 twice"],
    [
      ["--gpus", "3"],
      { CUDA_VISIBLE_DEVICES: "0,1" },
      "--gpus names 3, which CUDA_VISIBLE_DEVICES=0,1 hides",
    ],
  ])("refuses %j with exit 2 before anything starts", async (args, env, message) => {
    const run = await runCli(["optimize", "softmax", ...args], {
      env: { ANTHROPIC_API_KEY: "", EVOKERNEL_PYTHON: "/nonexistent", ...env },
    });
    expect(run.exitCode, run.stderr).toBe(2);
    expect(run.stderr).toContain(message);
  });
});
