// The night's pure rules: what a maintainer's merge or close does to the ledger, and when
// the branch gets a commit on top, a rebuild, or nothing.
import { describe, expect, it } from "vitest";
import {
  planBranch,
  proposalsAfter,
  settlePull,
  sourceHash,
} from "../../../src/app/nightly/night.js";
import { isNightlyJob, nightlySpec } from "../../../src/app/nightly/spec.js";
import { parseExternalId } from "../../../src/app/job-registry.js";
import { parseConfig } from "../../../src/shared/config.js";
import { EMPTY_LEDGER, type Ledger, type Proposal } from "../../../src/shared/nightly.js";

const A = "a".repeat(40);
const B = "b".repeat(40);

function proposal(task: string, source: string): Proposal {
  return {
    task,
    path: `${task}/kernel.cu`,
    hash: sourceHash(source),
    beforeMs: 1,
    afterMs: 0.8,
    speedup: 1.25,
    lowerBound: 1.2,
    eager: null,
    compile: null,
    night: "2026-11-22T03:40:00.000Z",
    source,
  };
}

const onBranch: Ledger = {
  ...EMPTY_LEDGER,
  branch: { base: A, pr: 31 },
  proposals: [proposal("kernels/softmax", "s1")],
};
const pull = (state: "open" | "closed", merged: boolean, number = 31) => ({
  number,
  state,
  merged,
  url: `https://github.com/o/r/pull/${number}`,
});

describe("settling the last pull request", () => {
  it("remembers a closed, unmerged PR's kernels as rejected", () => {
    const settled = settlePull(onBranch, pull("closed", false));
    expect(settled.rejected).toEqual([sourceHash("s1")]);
    expect(settled.branch).toBeNull();
    expect(settled.proposals).toEqual([]);
  });

  it("takes a merged PR's kernels as accepted: nothing rejected, a fresh branch next", () => {
    const settled = settlePull(onBranch, pull("closed", true));
    expect(settled.rejected).toEqual([]);
    expect(settled.branch).toBeNull();
  });

  it("leaves an open PR, and a closed PR that is not the app's last, alone", () => {
    expect(settlePull(onBranch, pull("open", false))).toBe(onBranch);
    expect(settlePull(onBranch, pull("closed", false, 30))).toBe(onBranch);
    expect(settlePull(onBranch, undefined)).toBe(onBranch);
  });
});

describe("planning the branch", () => {
  const layernorm = proposal("kernels/layernorm", "l1");

  it("keeps it when every win is on it already", () => {
    expect(planBranch(onBranch, [proposal("kernels/softmax", "s1")], A, "head")).toEqual({
      kind: "keep",
    });
  });

  it("adds a commit on top while the default branch has not moved", () => {
    const plan = planBranch(onBranch, [proposal("kernels/softmax", "s1"), layernorm], A, "head");
    expect(plan).toEqual({ kind: "append", parent: "head", proposals: [layernorm] });
    expect(proposalsAfter(onBranch, plan).map((entry) => entry.task)).toEqual([
      "kernels/softmax",
      "kernels/layernorm",
    ]);
  });

  it("rebuilds on the night's commit when the default branch moved or the branch is gone", () => {
    expect(planBranch(onBranch, [layernorm], B, "head")).toEqual({
      kind: "rebuild",
      parent: B,
      proposals: [layernorm],
    });
    expect(planBranch(onBranch, [layernorm], A, undefined).kind).toBe("rebuild");
  });

  it("replaces a task's older kernel with its newer one", () => {
    const newer = proposal("kernels/softmax", "s2");
    const plan = planBranch(onBranch, [newer], A, "head");
    expect(proposalsAfter(onBranch, plan)).toEqual([newer]);
  });
});

describe("the night's job", () => {
  const specOf = (tasks: unknown) => {
    const parsed = parseConfig({ tasks: ["kernels", "ops/*"], nightly: { tasks } });
    if (!parsed.ok) throw new Error(parsed.errors.join("; "));
    const spec = nightlySpec({ owner: "o", repo: "r" }, parsed.config, A);
    return { tasks: spec.tasks, roots: spec.roots, id: spec.id, nightly: isNightlyJob(spec) };
  };

  it("names tasks by path, looks under globs, and takes every task for `all`", () => {
    expect(specOf(["softmax", "ops/gemm"])).toMatchObject({
      tasks: ["kernels/softmax", "ops/gemm"],
      roots: ["kernels", "ops/*"],
    });
    expect(specOf(["kernels/soft*", "ops/gemm"])).toMatchObject({
      tasks: [],
      roots: ["kernels/soft*", "ops/gemm"],
    });
    expect(specOf("all")).toMatchObject({ tasks: [], roots: ["kernels", "ops/*"] });
  });

  it("has an id the app recognises after a restart", () => {
    const { id, nightly } = specOf("all");
    expect(id).toMatch(/^optimize-nightly-aaaaaaa-[0-9a-f]{6}$/);
    expect(parseExternalId(`${id}@12`)).toEqual({ jobId: id, runId: 12 });
    expect(nightly).toBe(true);
  });
});
