// Concurrency per job, not per pull request: the example workflow's `concurrency` group and
// the app's own (jobs/concurrency.ts) must name the same groups, or Actions would cancel a
// job the app still waits for (or run two the app meant as one). The workflow's expression
// is evaluated here on the specs the app builds; then the app's side through startJob, with
// a fake GitHub and a recording backend.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { Logger } from "probot";
import type { AppState } from "../../../src/app/app-state.js";
import type { Dispatcher } from "../../../src/app/dispatch/types.js";
import type { CheckRun, GitHub } from "../../../src/app/github.js";
import { buildJobSpec, type SpecInput } from "../../../src/app/job-spec.js";
import { claimKey } from "../../../src/app/jobs/claim.js";
import { concurrencyGroup, supersededBy } from "../../../src/app/jobs/concurrency.js";
import { createEarlyRuns } from "../../../src/app/early-runs.js";
import { createJobRegistry } from "../../../src/app/job-registry.js";
import { startJob } from "../../../src/app/jobs/start.js";
import { createWorkQueue } from "../../../src/app/queue.js";
import { createSeenSet } from "../../../src/app/seen.js";
import { DEFAULT_CONFIG } from "../../../src/shared/config.js";
import type { JobSpec } from "../../../src/shared/job.js";

const HEAD = "a".repeat(40);
const BASE = "b".repeat(40);
const repo = { owner: "octo", repo: "kernels" };

const workflow = parse(
  readFileSync(join(import.meta.dirname, "../../../action/example-workflow.yml"), "utf8"),
) as { concurrency: { group: string; "cancel-in-progress": boolean } };

/**
 * The workflow's group on a spec, as Actions evaluates it: `${{ … }}` holding
 * `fromJSON(inputs.spec).field`, `a || b` and `join(list, 'sep')`, nothing else (an
 * expression this does not know fails the test: extend it with the workflow).
 */
function workflowGroup(spec: JobSpec): string {
  const fields = JSON.parse(JSON.stringify(spec)) as Record<string, unknown>;
  const value = (text: string): unknown => {
    const term = text.trim();
    const or = term.split("||");
    if (or.length > 1) return or.map(value).find((each) => Boolean(each)) ?? or.at(-1);
    const join = /^join\((.+),\s*'([^']*)'\)$/.exec(term);
    if (join?.[1] !== undefined) {
      const list = value(join[1]);
      if (!Array.isArray(list)) throw new Error(`join of a non-list: ${term}`);
      return list.join(join[2]);
    }
    const field = /^fromJSON\(inputs\.spec\)\.(\w+)$/.exec(term);
    if (field?.[1] !== undefined) return fields[field[1]];
    throw new Error(`an expression this test cannot evaluate: ${term}`);
  };
  return workflow.concurrency.group.replace(/\$\{\{(.+?)\}\}/g, (_, inner: string) => {
    const result = value(inner);
    if (typeof result === "string" || typeof result === "number") return String(result);
    if (result === undefined || result === null) return "";
    throw new Error(`not a string: ${inner}`);
  });
}

function spec(over: Partial<SpecInput> & Pick<SpecInput, "kind">, sha = HEAD): JobSpec {
  return buildJobSpec({
    repo,
    pull: { number: 7, headSha: sha, baseSha: BASE },
    config: DEFAULT_CONFIG,
    tasks: [],
    requestedBy: "maintainer",
    ...over,
  });
}

const specs = {
  softmax: spec({ kind: "bench", tasks: ["kernels/softmax"] }),
  layernorm: spec({ kind: "bench", tasks: ["kernels/layernorm"] }),
  both: spec({ kind: "bench", tasks: ["kernels/softmax", "kernels/layernorm"] }),
  bothAgain: spec({ kind: "bench", tasks: ["kernels/layernorm", "kernels/softmax"] }),
  softmaxAgain: spec({ kind: "bench", tasks: ["kernels/softmax"] }),
  optimize4: spec({ kind: "optimize", tasks: ["kernels/softmax"], candidates: 4 }),
  optimize8: spec({ kind: "optimize", tasks: ["kernels/softmax"], candidates: 8 }),
  review: spec({ kind: "review" }),
  verify: spec({ kind: "verify", tasks: ["kernels/softmax"] }),
  otherPull: buildJobSpec({
    repo,
    pull: { number: 8, headSha: HEAD, baseSha: BASE },
    config: DEFAULT_CONFIG,
    tasks: ["kernels/softmax"],
    requestedBy: "maintainer",
    kind: "bench",
  }),
};

describe("the example workflow's concurrency group", () => {
  it("cancels in progress, so a later job of a group replaces the earlier", () => {
    expect(workflow.concurrency["cancel-in-progress"]).toBe(true);
  });

  it("is the app's group for every job the app builds", () => {
    for (const each of Object.values(specs))
      expect(workflowGroup(each), each.id).toBe(concurrencyGroup(each));
    const nightly = { ...specs.softmax, id: "bench-x-aaaaaaa-123456" } as JobSpec;
    delete (nightly as { pr?: number }).pr;
    expect(workflowGroup(nightly)).toBe(concurrencyGroup(nightly));
  });

  it("keeps different tasks of one pull request apart and the same tasks together", () => {
    const group = (each: JobSpec) => workflowGroup(each);
    expect(group(specs.softmax)).not.toBe(group(specs.layernorm));
    expect(group(specs.softmax)).not.toBe(group(specs.both));
    expect(group(specs.softmax)).not.toBe(group(specs.otherPull));
    expect(group(specs.softmax)).not.toBe(group(specs.verify));
    expect(group(specs.both)).toBe(group(specs.bothAgain));
    expect(group(specs.softmax)).toBe(group(specs.softmaxAgain));
    expect(group(specs.optimize4)).toBe(group(specs.optimize8));
  });

  it("agrees with the app on every pair: same group exactly where the app supersedes", () => {
    const all = Object.values(specs);
    for (const older of all)
      for (const newer of all) {
        if (older === newer) continue;
        const live = [{ spec: older } as never];
        const appSupersedes = supersededBy(live, newer).length === 1;
        const workflowCancels = workflowGroup(older) === workflowGroup(newer);
        expect(appSupersedes, `${older.id} then ${newer.id}`).toBe(workflowCancels);
        // The same work on one commit is never dispatched twice (jobs/claim.ts): such a
        // pair is always in one group, so the workflow never runs it twice either.
        if (claimKey(older) === claimKey(newer)) expect(workflowCancels).toBe(true);
      }
  });
});

/** A GitHub that keeps check runs in memory; the head is HEAD. */
function fakeGitHub(): { github: GitHub; runs: Map<number, CheckRun & { conclusion?: string }> } {
  const runs = new Map<number, CheckRun & { conclusion?: string }>();
  let next = 100;
  const github = {
    repo,
    listCheckRuns: (sha: string) =>
      Promise.resolve([...runs.values()].filter((run) => run.headSha === sha)),
    createCheckRun: (
      name: string,
      sha: string,
      options: { externalId?: string; status: string },
    ) => {
      const id = ++next;
      runs.set(id, {
        id,
        name,
        headSha: sha,
        status: options.status,
        externalId: options.externalId ?? null,
      } as never);
      return Promise.resolve(id);
    },
    updateCheckRun: (
      id: number,
      update: { status?: string; conclusion?: string; externalId?: string },
    ) => {
      const run = runs.get(id);
      if (run) runs.set(id, { ...run, ...update });
      return Promise.resolve();
    },
    getPull: () => Promise.resolve({ number: 7, headSha: HEAD, baseSha: BASE }),
  };
  return { github: github as unknown as GitHub, runs };
}

function fakeState(): { state: AppState; started: string[]; cancelled: string[] } {
  const started: string[] = [];
  const cancelled: string[] = [];
  const dispatcher: Dispatcher = {
    name: "actions",
    start: ({ spec: each }) => {
      started.push(each.id);
      return Promise.resolve({ runId: started.length });
    },
    cancel: (jobId) => {
      cancelled.push(jobId);
      return Promise.resolve();
    },
  };
  const log = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Logger;
  const state: AppState = {
    queue: createWorkQueue(1, () => undefined),
    seen: createSeenSet(10),
    jobs: createJobRegistry(),
    earlyRuns: createEarlyRuns(),
    log,
    dispatcherFor: () => dispatcher,
    dispatchers: [dispatcher],
    githubFor: () => Promise.reject(new Error("not in this test")),
    jobTimeoutMs: 3_600_000,
  };
  return { state, started, cancelled };
}

describe("the app's side", () => {
  const request = (state: AppState, github: GitHub, each: JobSpec) =>
    startJob(state, {
      github,
      spec: each,
      config: DEFAULT_CONFIG,
      installationId: 1,
      defaultBranch: "main",
      recheckHead: true,
    });

  it("runs two commands on different tasks of one pull request side by side", async () => {
    const { state, started, cancelled } = fakeState();
    const { github } = fakeGitHub();
    expect((await request(state, github, specs.softmax)).kind).toBe("started");
    expect((await request(state, github, specs.layernorm)).kind).toBe("started");
    expect(started).toEqual([specs.softmax.id, specs.layernorm.id]);
    expect(cancelled).toEqual([]);
    expect(state.jobs.size).toBe(2);
  });

  it("lets a later job on the same tasks supersede the earlier, whose check run says so", async () => {
    const { state, started, cancelled } = fakeState();
    const { github, runs } = fakeGitHub();
    await request(state, github, specs.optimize4);
    const first = state.jobs.get(specs.optimize4.id)?.checkRunId;
    expect((await request(state, github, specs.optimize8)).kind).toBe("started");
    expect(started).toEqual([specs.optimize4.id, specs.optimize8.id]);
    expect(cancelled).toEqual([specs.optimize4.id]);
    expect(state.jobs.get(specs.optimize4.id)).toBeUndefined();
    const old = runs.get(first ?? 0) as unknown as {
      conclusion: string;
      output: { title: string; summary: string };
    };
    expect(old.conclusion).toBe("neutral");
    expect(old.output.summary).toContain(specs.optimize8.id);
  });
});
