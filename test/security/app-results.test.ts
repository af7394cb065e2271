// Issue 16.7, "trust in results": a result that says "verified on 0 shapes, 10× faster"
// turned the check green. Now a result counts only when its claims follow from its own
// records (src/shared/result-check.ts), checked where the app reports any job's outcome;
// one that does not add up is a runner error, said so in a failing check. Each case below is
// one claim a forged or broken result makes; each fails when its check is taken out.
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ReviewResult, TaskReview } from "../../src/shared/review.js";
import { parseReviewResult } from "../../src/shared/review.js";
import { checkReviewResult } from "../../src/shared/result-check.js";
import {
  API,
  CONFIG_PATH,
  HEAD,
  OWNER,
  REPO,
  pullRequestPayload,
  reviewFixture,
  startHarness,
  strictNock,
  workflowRunPayload,
  type Harness,
  mockJobStart,
  BASE,
} from "../helpers/app-harness.js";
import { writeZip } from "../helpers/zip-writer.js";

function fixture(jobId = "review-7-aaaaaaa-000000"): ReviewResult {
  const parsed = parseReviewResult(reviewFixture(jobId));
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  return parsed.result;
}

/** The fixture with its first (passed, optimized, suggested) task changed. */
function withTask(change: (task: TaskReview) => TaskReview): ReviewResult {
  const review = fixture();
  const [first, ...rest] = review.tasks;
  if (first === undefined) throw new Error("empty fixture");
  return { ...review, tasks: [change(structuredClone(first)), ...rest] };
}

function problems(review: ReviewResult): string {
  const checked = checkReviewResult(review);
  return checked.ok ? "" : checked.problems.join("\n");
}

const TEN_X = { medianMs: 0.0125, p20Ms: 0.012, p80Ms: 0.013 };

describe("a result's claims must follow from its records", () => {
  it("passes the honest fixture, with every shown number derived from the times", () => {
    const checked = checkReviewResult(fixture());
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    const task = checked.review.tasks[0];
    // The fixture rounds its summary (1.2, 1.3); what counts is base p20 / head p80 exactly.
    expect(task?.speedup?.lowerBound).toBe(0.1225 / 0.10200000000000001);
    // The floor column too: floor over the median, whatever the result wrote.
    const forged = withTask((first) => ({
      ...first,
      timings: first.timings.map((config) => ({
        ...config,
        percentOfFloor: { base: 400, head: 900 },
      })),
    }));
    const derived = checkReviewResult(forged);
    expect(derived.ok && derived.review.tasks[0]?.timings[0]?.percentOfFloor).toEqual({
      base: (0.05 / 0.125) * 100,
      head: (0.05 / 0.1) * 100,
    });
  });

  it('refuses "verified on 0 shapes, 10x faster"', () => {
    const forged = withTask((task) => ({
      ...task,
      verification: task.verification && { ...task.verification, configs: [] },
      timings: task.timings.map((config) => ({ ...config, head: TEN_X, speedup: 10 })),
      speedup: { median: 10, lowerBound: 9, upperBound: 11, configs: 1 },
    }));
    expect(problems(forged)).toMatch(/passed, yet verified on no configuration/);
  });

  it("refuses a passed task without a verification, or with a failed configuration", () => {
    expect(problems(withTask((task) => ({ ...task, verification: null })))).toMatch(
      /verified on no configuration/,
    );
    const failedOne = withTask((task) => {
      const configs = task.verification?.configs ?? [];
      return {
        ...task,
        verification: task.verification && {
          ...task.verification,
          configs: configs.map((config, index) =>
            index === 1 ? { ...config, ok: false } : config,
          ),
        },
      };
    });
    expect(problems(failedOne)).toMatch(/verification failed on tall-12289x999/);
  });

  it("refuses a timed configuration that was not verified", () => {
    const unverified = withTask((task) => ({
      ...task,
      timings: task.timings.map((config) => ({ ...config, name: "tiny-1x1" })),
    }));
    expect(problems(unverified)).toMatch(/tiny-1x1 is timed but was not verified/);
    const twice = withTask((task) => ({ ...task, timings: [...task.timings, ...task.timings] }));
    expect(problems(twice)).toMatch(/timed twice/);
  });

  it("refuses a speedup field the recorded times do not give", () => {
    const config = withTask((task) => ({
      ...task,
      timings: task.timings.map((timing) => ({ ...timing, speedup: 10 })),
    }));
    expect(problems(config)).toMatch(/speedup 10 is not base\/head from its times/);
    const summary = withTask((task) => ({
      ...task,
      speedup: { median: 10, lowerBound: 9.5, upperBound: 10.5, configs: 1 },
    }));
    expect(problems(summary)).toMatch(/speedup summary is not what its times give/);
    const change = withTask((task) => ({
      ...task,
      timings: task.timings.map((timing) => ({
        ...timing,
        head: { medianMs: 0.124, p20Ms: 0.12, p80Ms: 0.13 },
        speedup: 0.125 / 0.124,
      })),
      speedup: null,
    }));
    // Overlapping spreads: "faster" and an improvement are claims the times do not make.
    expect(problems(change)).toMatch(/change faster, yet its times say same/);
    expect(problems(change)).toMatch(/improvement true, yet its times say otherwise/);
  });

  it("refuses times that are not spreads", () => {
    const zero = withTask((task) => ({
      ...task,
      timings: task.timings.map((timing) => ({
        ...timing,
        head: { medianMs: 0.001, p20Ms: 0, p80Ms: 0.5 },
      })),
    }));
    expect(problems(zero)).toMatch(/the head time is not a spread/);
  });

  it("refuses a suggestion without a win its own records support", () => {
    expect(problems(withTask((task) => ({ ...task, optimize: null })))).toMatch(
      /without a winning search/,
    );
    const other = withTask((task) => ({
      ...task,
      suggestion: task.suggestion && { ...task.suggestion, after: "// something else\n" },
    }));
    expect(problems(other)).toMatch(/not the search's best kernel/);
    const slowWin = withTask((task) => {
      const result = task.optimize;
      if (result === null) throw new Error("fixture without optimize");
      return {
        ...task,
        optimize: {
          ...result,
          speedup: { ...result.speedup, baseline: 3, lowerBound: 2.9 },
          configs: result.configs.map((config) => ({
            ...config,
            best: { medianMs: 0.099, p20Ms: 0.09, p80Ms: 0.11 },
            speedup: { ...config.speedup, baseline: 0.1 / 0.099 },
          })),
        },
      };
    });
    expect(problems(slowWin)).toMatch(/do not show a win beyond the noise/);
    expect(problems(slowWin)).toMatch(/evolved kernel's speedup is not what its times give/);
    const unverifiedWin = withTask((task) => {
      const result = task.optimize;
      if (result === null) throw new Error("fixture without optimize");
      return {
        ...task,
        optimize: { ...result, verification: { ...result.verification, configs: [] } },
      };
    });
    expect(problems(unverifiedWin)).toMatch(/no passing verification/);
    // The same win claimed without a suggestion ("Evolved: … faster" in the comment).
    expect(
      problems({ ...slowWin, tasks: slowWin.tasks.map((task) => ({ ...task, suggestion: null })) }),
    ).toMatch(/do not show a win beyond the noise/);
    expect(problems(unverifiedWin)).toMatch(/timed on 8192x8192, which was not verified/);
  });

  it("refuses a task the job was not asked to run, or one task twice", () => {
    const review = fixture();
    const planned = ["kernels/softmax", "kernels/layernorm"];
    expect(checkReviewResult(review, planned).ok).toBe(true);
    // A named folder stands for the tasks under it; a #backward variant for its task.
    expect(checkReviewResult(review, ["kernels"]).ok).toBe(true);
    const [first] = review.tasks;
    if (first === undefined) throw new Error("empty fixture");
    const extra = {
      ...review,
      tasks: [...review.tasks, { ...first, task: { ...first.task, path: "kernels/other" } }],
    };
    expect(checkReviewResult(extra, planned)).toMatchObject({
      ok: false,
      problems: ["kernels/other: not a task this job was asked to run"],
    });
    const twice = { ...review, tasks: [...review.tasks, first] };
    expect(problems(twice)).toMatch(/kernels\/softmax: reported twice/);
  });

  it("refuses a quiet task (unchanged, removed, skipped) that carries timings", () => {
    const quiet = withTask((task) => ({ ...task, status: "unchanged" }));
    expect(problems(quiet)).toMatch(/unchanged, yet it carries timings/);
  });
});

// Through the app: the forged result fails the check as a runner error, and nothing else
// (no comment, no review, no branch) is posted.
const R = `/repos/${OWNER}/${REPO}`;
let mocks: { done(): void };
let harness: Harness;
let bodies: Record<string, unknown[]>;

beforeEach(async () => {
  mocks = strictNock();
  bodies = {};
  harness = await startHarness();
});

afterEach(() => {
  mocks.done();
});

function record(key: string) {
  return (body: nock.Body) => {
    (bodies[key] ??= []).push(body);
    return true;
  };
}

describe("a result that does not add up, through the app", () => {
  it("is a runner error in a failing check run, never a green one", async () => {
    nock(API)
      .get(CONFIG_PATH)
      .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, [{ filename: "kernels/softmax/kernel.cu", status: "modified" }])
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
      .reply(200, { workflow_run_id: 4242 });
    mockJobStart(nock(API), {
      id: 900,
      pull: {
        number: 7,
        state: "open",
        head: { sha: HEAD, ref: "x", repo: { full_name: `${OWNER}/${REPO}` } },
        base: { sha: BASE, ref: "main", repo: { full_name: `${OWNER}/${REPO}` } },
      },
      linked: () => undefined,
    });
    await harness.receive("pull_request", pullRequestPayload("opened"));
    const spec = (bodies.dispatch?.[0] as { inputs: { spec: string } }).inputs.spec;
    const jobId = (JSON.parse(spec) as { id: string }).id;

    const forged = fixture(jobId);
    const first = forged.tasks[0];
    if (first?.verification == null) throw new Error("fixture changed");
    forged.tasks[0] = {
      ...first,
      summary: "verified on 0 shapes, 10x faster",
      verification: { ...first.verification, configs: [] },
      timings: first.timings.map((config) => ({ ...config, head: TEN_X, speedup: 10 })),
      speedup: { median: 10, lowerBound: 9, upperBound: 11, configs: 1 },
    };
    nock("https://blob.example.test")
      .get("/artifact.zip")
      .reply(200, writeZip({ "evokernel-result.json": JSON.stringify(forged) }), {
        "content-type": "application/zip",
      });
    nock(API)
      .get(`${R}/actions/runs/4242/artifacts`)
      .query({ name: "evokernel-result", per_page: 100 })
      .reply(200, {
        total_count: 1,
        artifacts: [{ id: 77, name: "evokernel-result", expired: false }],
      })
      .get(`${R}/actions/artifacts/77/zip`)
      .reply(302, "", { location: "https://blob.example.test/artifact.zip" })
      .patch(`${R}/check-runs/900`, record("check"))
      .reply(200, { id: 900 });
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));

    const check = bodies.check?.[0] as {
      conclusion: string;
      output: { title: string; summary: string };
    };
    expect(check.conclusion).toBe("failure");
    expect(check.output.title).toBe("Runner error: the result does not add up");
    expect(check.output.summary).toContain(
      "kernels/softmax: passed, yet verified on no configuration",
    );
    expect(check.output.summary).toContain("not a verdict on the kernel");
  });
});
