// The lanes of a search over several GPUs (runner/src/gpu/lanes.ts): which GPUs a run is
// given and the usage errors for a bad list, work on the first free lane, lane 0 alone for
// the final checks, and each request sent to the fork server of the lane its work holds.
import { describe, expect, it } from "vitest";
import { createLanes, gpusOf } from "../../../runner/src/gpu/lanes.js";
import type { HarnessRunner } from "../../../runner/src/harness/outcome.js";
import type { HarnessCommand } from "../../../src/shared/contract/harness-request.js";
import { HarnessError, ServerDownError, UsageError } from "../../../runner/src/errors.js";

describe("gpusOf", () => {
  it("takes --gpus, else CUDA_VISIBLE_DEVICES, else none (one GPU, as always)", () => {
    expect(gpusOf(undefined, {})).toBeNull();
    expect(gpusOf(undefined, { CUDA_VISIBLE_DEVICES: "" })).toBeNull();
    expect(gpusOf(undefined, { CUDA_VISIBLE_DEVICES: "2, 3" })).toEqual(["2", "3"]);
    expect(gpusOf("1,0", {})).toEqual(["1", "0"]);
    expect(gpusOf("3", { CUDA_VISIBLE_DEVICES: "1,3" })).toEqual(["3"]);
    expect(gpusOf("GPU-8f2e-11aa", {})).toEqual(["GPU-8f2e-11aa"]);
  });

  it.each([
    ["0,,1", {}, "--gpus is a comma-separated list of GPU indices or UUIDs"],
    ["", {}, "--gpus is a comma-separated list"],
    ["zero", {}, "--gpus is a comma-separated list"],
    ["-1", {}, "--gpus is a comma-separated list"],
    ["0,0", {}, "--gpus names GPU 0 twice"],
    [
      "0,2",
      { CUDA_VISIBLE_DEVICES: "0,1" },
      "--gpus names 2, which CUDA_VISIBLE_DEVICES=0,1 hides",
    ],
  ])("refuses --gpus %j (%j) as a usage error", (given, env, message) => {
    expect(() => gpusOf(given, env)).toThrow(UsageError);
    expect(() => gpusOf(given, env)).toThrow(message);
  });
});

/** A runner per lane that records which lane each request reached, and holds it open. */
function fakeRunners(count: number) {
  const reached: number[] = [];
  const open: (() => void)[] = [];
  const runners: HarnessRunner[] = Array.from(
    { length: count },
    (_, lane) => () =>
      new Promise((resolve) => {
        reached.push(lane);
        open.push(() =>
          resolve({
            exitCode: 0,
            signal: null,
            timedOut: false,
            memKilled: false,
            seconds: 0,
            log: "",
          }),
        );
      }),
  );
  return { runners, reached, open };
}

const request = { command: "device" } as unknown as HarnessCommand;
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("createLanes", () => {
  it("runs work on every free lane at once and sends each request to its lane's runner", async () => {
    const { runners, reached, open } = fakeRunners(2);
    const lanes = createLanes(["4", "7"], runners);
    const work = [1, 2, 3].map(() => lanes.noted(() => lanes.gpu(() => lanes.run(request, 1000))));
    await tick();
    // two lanes, two pieces of work at once; the third waits for a free lane
    expect(reached.sort()).toEqual([0, 1]);
    open.splice(0).forEach((close) => close());
    await tick();
    await tick();
    expect(reached).toHaveLength(3);
    open.splice(0).forEach((close) => close());
    const gpus = (await Promise.all(work)).map((done) => done.gpu);
    expect(new Set(gpus)).toEqual(new Set(["4", "7"]));
    expect(lanes.use().map((lane) => lane.evaluated)).toEqual(
      ["4", "7"].map((gpu) => gpus.filter((g) => g === gpu).length),
    );
  });

  it("runs the final checks on lane 0 alone, even while lane 1 is free", async () => {
    const { runners, reached, open } = fakeRunners(2);
    const lanes = createLanes(["0", "1"], runners);
    const busy = lanes.gpu(() => lanes.run(request, 1000));
    await tick();
    expect(reached).toEqual([0]);
    const final = lanes.first(() => lanes.run(request, 1000));
    await tick();
    // lane 1 is free, but the final check waits for lane 0
    expect(reached).toEqual([0]);
    open.splice(0).forEach((close) => close());
    await busy;
    await tick();
    expect(reached).toEqual([0, 0]);
    open.splice(0).forEach((close) => close());
    await final;
  });

  it("runs the final checks' verification on the last free lane, beside a timing on lane 0", async () => {
    const { runners, reached, open } = fakeRunners(3);
    const lanes = createLanes(["0", "1", "2"], runners);
    expect(lanes.count).toBe(3);
    const verify = lanes.aside(() => lanes.run(request, 1000));
    const time = lanes.first(() => lanes.run(request, 1000));
    await tick();
    // lane 0 stays free for the timing: the verification took the last lane
    expect(reached).toEqual([2, 0]);
    open.splice(0).forEach((close) => close());
    await Promise.all([verify, time]);
    // one lane: aside is lane 0's queue
    const one = fakeRunners(1);
    const single = createLanes(["5"], one.runners);
    const alone = single.aside(() => single.run(request, 1000));
    await tick();
    expect(one.reached).toEqual([0]);
    one.open.splice(0).forEach((close) => close());
    await alone;
  });

  it("sends requests outside any lane's work to lane 0 (the task's context)", async () => {
    const { runners, reached, open } = fakeRunners(3);
    const lanes = createLanes(["0", "1", "2"], runners);
    const answer = lanes.run(request, 1000);
    await tick();
    expect(reached).toEqual([0]);
    open.splice(0).forEach((close) => close());
    await answer;
    await expect(lanes.noted(() => Promise.resolve(1))).resolves.toEqual({ value: 1, gpu: null });
  });

  it("gives up a lane whose fork server is not started again, and runs its work again on another", async () => {
    // lane 1's server is down (it died at every start): every request there throws at once
    const { runners, reached, open } = fakeRunners(2);
    const downRunner: HarnessRunner = () => {
      reached.push(1);
      return Promise.reject(
        new ServerDownError("the fork server died 3 times in a row; not restarting it", {
          log: "the fork server died (exit 1)\ncannot open the GPU lock file /locks/gpu-1.lock",
        }),
      );
    };
    const lanes = createLanes(["0", "1"], [runners[0] as HarnessRunner, downRunner]);
    // what an evaluation does with a failed request: a failed record, not a throw
    const evaluate = () =>
      lanes.gpu(() =>
        lanes.run(request, 1000).then(
          () => "ran",
          () => "failed record",
        ),
      );
    const first = lanes.noted(evaluate);
    const second = lanes.noted(evaluate);
    const third = lanes.noted(evaluate);
    await tick();
    await tick();
    // lane 0 took the first; the second went to lane 1, failed there, and waits for lane 0
    expect(reached).toEqual([0, 1]);
    for (let round = 0; round < 3; round++) {
      open.splice(0).forEach((close) => close());
      await tick();
      await tick();
    }
    const done = await Promise.all([first, second, third]);
    // none of them is the dead lane's failure: each ran on lane 0
    expect(done).toEqual([0, 1, 2].map(() => ({ value: "ran", gpu: "0" })));
    expect(reached.filter((lane) => lane === 1)).toHaveLength(1);
    const [zero, one] = lanes.use();
    expect(zero?.evaluated).toBe(3);
    expect(one?.evaluated).toBe(0);
    expect(one?.stopped).toContain("cannot open the GPU lock file /locks/gpu-1.lock");
    expect(zero?.stopped).toBeUndefined();
  });

  it("runs the final checks on the first lane still up where lane 0 was given up", async () => {
    const { runners, reached, open } = fakeRunners(2);
    const down: HarnessRunner = () =>
      Promise.reject(
        new ServerDownError("the fork server died 3 times in a row; not restarting it"),
      );
    const lanes = createLanes(["0", "1"], [down, runners[1] as HarnessRunner]);
    const final = lanes.first(() => lanes.run(request, 1000).catch(() => "failed"));
    await tick();
    await tick();
    expect(reached).toEqual([1]);
    open.splice(0).forEach((close) => close());
    await expect(final).resolves.toMatchObject({ exitCode: 0 });
    // a request outside any lane's work goes to the first lane up, too
    const outside = lanes.run(request, 1000);
    await tick();
    expect(reached).toEqual([1, 1]);
    open.splice(0).forEach((close) => close());
    await outside;
  });

  it("fails the work, saying why, once every lane is given up", async () => {
    const down =
      (gpu: string): HarnessRunner =>
      () =>
        Promise.reject(
          new ServerDownError("the fork server died 3 times in a row; not restarting it", {
            log: `no CUDA GPU ${gpu}`,
          }),
        );
    const lanes = createLanes(["0", "1"], [down("0"), down("1")]);
    const evaluate = () => lanes.gpu(() => lanes.run(request, 1000).catch(() => "failed record"));
    const results = await Promise.allSettled([evaluate(), evaluate(), evaluate()]);
    for (const result of results) {
      expect(result.status).toBe("rejected");
      const reason = (result as PromiseRejectedResult).reason as Error;
      expect(reason).toBeInstanceOf(HarnessError);
      expect(reason.message).toContain("every GPU's fork server stopped");
      expect(reason.message).toContain(
        "GPU 0: the fork server died 3 times in a row; not restarting it: no CUDA GPU 0",
      );
      expect(reason.message).toContain("no CUDA GPU 1");
    }
  });
});
