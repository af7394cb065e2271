// Before a win is called one: the final verification (held-out configurations included) and
// the timing against the noise.
import { describe, expect, it } from "vitest";
import { finalize, noFasterWhereLost, where } from "../../../runner/src/evolve/final.js";
import { judgeSpeedup } from "../../../runner/src/evolve/noise.js";
import type { FinalTiming, Individual, Rechecker } from "../../../runner/src/evolve/types.js";
import { BASELINE, evaluationOf, fakeRechecker, finalConfig } from "./fakes.js";

function individual(id: string, source: string): Individual {
  return {
    id,
    hash: id,
    source,
    defines: {},
    flags: [],
    parents: ["c0"],
    insight: "",
    proposer: "fake",
    evaluation: evaluationOf(source),
  };
}

/** A timing where k8 is faster overall but slower beyond the noise on 8192x16384; others faster everywhere. */
function k8SlowerOnOneShape(source: string | null): FinalTiming {
  return {
    ok: true,
    reason: null,
    message: "",
    configs: source?.includes("k8")
      ? [
          finalConfig("32768x1024", spread(0.6, 0.59, 0.61)),
          finalConfig("8192x16384", spread(1.1, 1.09, 1.11)),
        ]
      : [
          finalConfig("32768x1024", spread(0.9, 0.89, 0.91)),
          finalConfig("8192x16384", spread(0.95, 0.94, 0.96)),
        ],
  };
}

const baseline = individual("c0", BASELINE);
const spread = (medianMs: number, p20Ms: number, p80Ms: number) => ({ medianMs, p20Ms, p80Ms });

describe("the noise rule", () => {
  it("a win needs the geometric mean of baseline p20 / candidate p80 above 1", () => {
    const clear = judgeSpeedup([
      { baseline: spread(1, 0.95, 1.05), candidate: spread(0.8, 0.78, 0.82) },
      { baseline: spread(2, 1.9, 2.1), candidate: spread(1.7, 1.65, 1.75) },
    ]);
    expect(clear?.win).toBe(true);
    expect(clear?.clearlyFaster).toEqual([true, true]);
    expect(clear?.lowerBound).toBeCloseTo(Math.sqrt((0.95 / 0.82) * (1.9 / 1.75)), 10);
    expect(clear?.speedup).toBeCloseTo(Math.sqrt((1 / 0.8) * (2 / 1.7)), 10);
  });

  it("a faster median inside the spread is not a win", () => {
    // 3 % faster by the median, but the spreads overlap
    const inside = judgeSpeedup([
      { baseline: spread(1, 0.95, 1.05), candidate: spread(0.97, 0.93, 1.01) },
    ]);
    expect(inside?.speedup).toBeGreaterThan(1);
    expect(inside?.lowerBound).toBeLessThan(1);
    expect(inside?.win).toBe(false);
    expect(inside?.clearlyFaster).toEqual([false]);
  });

  it("faster on the geometric mean but clearly slower on one shape is not a win", () => {
    const mixed = judgeSpeedup([
      { baseline: spread(1, 0.99, 1.01), candidate: spread(0.6, 0.59, 0.61) },
      { baseline: spread(1, 0.99, 1.01), candidate: spread(1.06, 1.05, 1.07) },
    ]);
    expect(mixed?.lowerBound).toBeGreaterThan(1);
    expect(mixed?.clearlySlower).toEqual([false, true]);
    expect(mixed?.win).toBe(false);
  });

  it("launch-bound configurations stay out of the headline, unless there is nothing else", () => {
    const judged = judgeSpeedup([
      { baseline: spread(1, 0.99, 1.01), candidate: spread(0.5, 0.49, 0.51) },
      // 3 µs of launches: a 3× "speedup" here would only measure the launcher
      {
        baseline: spread(0.009, 0.0088, 0.0092),
        candidate: spread(0.003, 0.0029, 0.0031),
        launchBound: true,
      },
    ]);
    expect(judged?.speedup).toBeCloseTo(2, 10);
    expect(judged?.lowerBound).toBeCloseTo(0.99 / 0.51, 10);
    const onlyTiny = judgeSpeedup([
      {
        baseline: spread(0.009, 0.0088, 0.0092),
        candidate: spread(0.006, 0.0059, 0.0061),
        launchBound: true,
      },
    ]);
    expect(onlyTiny?.speedup).toBeCloseTo(1.5, 10);
  });

  it("a launch-bound configuration still counts against a kernel that makes it slower", () => {
    const judged = judgeSpeedup([
      { baseline: spread(1, 0.99, 1.01), candidate: spread(0.5, 0.49, 0.51) },
      {
        baseline: spread(0.009, 0.0088, 0.0092),
        candidate: spread(0.02, 0.019, 0.021),
        launchBound: true,
      },
    ]);
    expect(judged?.clearlySlower).toEqual([false, true]);
    expect(judged?.win).toBe(false);
  });

  it("a configuration without a time gives no judgement", () => {
    expect(judgeSpeedup([])).toBeNull();
    expect(judgeSpeedup([{ baseline: spread(1, 1, 1), candidate: spread(0, 0, 0) }])).toBeNull();
  });
});

describe("finalize", () => {
  it("re-times the best, re-verifies it with held-out configurations, and calls a win", async () => {
    const { rechecker, calls } = fakeRechecker();
    const best = individual("c7", "k7 speed=1.5");
    const final = await finalize({ population: [best, baseline], baseline, rechecker });
    expect(calls).toEqual(["time k7 speed=1.5", "verify k7 speed=1.5"]);
    expect(final.win).toBe(true);
    expect(final.candidate?.id).toBe("c7");
    expect(final.verification?.configs.some((config) => config.heldout)).toBe(true);
    expect(final.verdict).toMatch(/c7 passed every configuration, held-out ones included/);
  });

  it("a candidate inside the noise is not a win", async () => {
    const { rechecker } = fakeRechecker({
      time: () => ({
        ok: true,
        reason: null,
        message: "",
        configs: [finalConfig("8192x8192", spread(0.98, 0.94, 1.02))],
      }),
    });
    const best = individual("c3", "k3 speed=1.2");
    const final = await finalize({ population: [best, baseline], baseline, rechecker });
    expect(final.candidate?.id).toBe("c3");
    expect(final.judged?.speedup).toBeGreaterThan(1);
    expect(final.win).toBe(false);
    expect(final.verdict).toMatch(/within the noise/);
  });

  it("passes over a candidate that fails a held-out configuration for the next best", async () => {
    const { rechecker, calls } = fakeRechecker({
      verify: (source) =>
        source.includes("k9")
          ? {
              ok: false,
              status: "rejected",
              reason: "shape-specific",
              message: "wrong on tall-12289x999",
              configs: [{ name: "tall-12289x999", heldout: true, ok: false, reason: "mismatch" }],
            }
          : { ok: true, status: "passed", reason: null, message: "", configs: [] },
    });
    const population = [
      individual("c9", "k9 speed=1.8"),
      individual("c4", "k4 speed=1.3"),
      baseline,
    ];
    const steps: string[] = [];
    const final = await finalize({
      population,
      baseline,
      rechecker,
      onStep: (line) => steps.push(line.replace(/[0-9.]+ s/, "N s")),
    });
    expect(calls).toEqual([
      "time k9 speed=1.8",
      "verify k9 speed=1.8",
      "time k4 speed=1.3",
      "verify k4 speed=1.3",
    ]);
    expect(steps).toEqual([
      "  c9 timed in N s",
      "  c9 verified in N s: shape-specific",
      "  c4 timed in N s",
      "  c4 verified in N s: passed",
    ]);
    expect(final.rejected).toEqual([{ id: "c9", reason: "shape-specific" }]);
    expect(final.candidate?.id).toBe("c4");
    expect(final.win).toBe(true);
  });

  it("tries first the contenders the search's timing did not see slower on any shape", async () => {
    const { rechecker, calls } = fakeRechecker();
    const uneven: Individual = {
      ...individual("c9", "k9 speed=1.8"),
      evaluation: {
        ...evaluationOf("k9 speed=1.8"),
        timings: [
          {
            config: "8192x8192",
            medianMs: 0.3,
            p20Ms: 0.29,
            p80Ms: 0.31,
            baselineMs: 1,
            baselineP20Ms: 0.99,
            baselineP80Ms: 1.01,
          },
          {
            config: "odd",
            medianMs: 1.2,
            p20Ms: 1.18,
            p80Ms: 1.22,
            baselineMs: 1,
            baselineP20Ms: 0.99,
            baselineP80Ms: 1.01,
          },
        ],
      },
    };
    const even = individual("c4", "k4 speed=1.3");
    const final = await finalize({ population: [uneven, even, baseline], baseline, rechecker });
    expect(calls).toEqual(["time k4 speed=1.3", "verify k4 speed=1.3"]);
    expect(final.candidate?.id).toBe("c4");
    expect(final.win).toBe(true);
  });

  it("passes over a candidate that is slower beyond the noise on one shape", async () => {
    const { rechecker, calls } = fakeRechecker({
      time: k8SlowerOnOneShape,
    });
    const population = [
      individual("c8", "k8 speed=1.3"),
      individual("c5", "k5 speed=1.1"),
      baseline,
    ];
    const final = await finalize({ population, baseline, rechecker });
    // c8, passed over by its timing, is not verified: it could not be the result
    expect(calls).toEqual(["time k8 speed=1.3", "time k5 speed=1.1", "verify k5 speed=1.1"]);
    expect(final.rejected).toEqual([{ id: "c8", reason: "slower beyond the noise on 8192x16384" }]);
    expect(final.candidate?.id).toBe("c5");
    expect(final.win).toBe(true);
  });

  it("verifies the first contender while its timing waits, and keeps that verdict", async () => {
    const { rechecker, calls } = fakeRechecker();
    let waits = true;
    const time = rechecker.time.bind(rechecker);
    const waiting: Rechecker = {
      ...rechecker,
      timingWaits: () => waits,
      async time(variant, signal) {
        await new Promise((resolve) => setTimeout(resolve, 5)); // the reference's timing ends
        waits = false;
        return time(variant, signal);
      },
    };
    const best = individual("c7", "k7 speed=1.5");
    const final = await finalize({ population: [best, baseline], baseline, rechecker: waiting });
    // the verification started first and was not run again
    expect(calls).toEqual(["verify k7 speed=1.5", "time k7 speed=1.5"]);
    expect(final.win).toBe(true);
    expect(final.verification?.configs.some((config) => config.heldout)).toBe(true);
  });

  it("a first contender its timing passes over is not the result whatever its early verification said", async () => {
    const { rechecker, calls } = fakeRechecker({
      time: k8SlowerOnOneShape,
    });
    const population = [
      individual("c8", "k8 speed=1.3"),
      individual("c5", "k5 speed=1.1"),
      baseline,
    ];
    const final = await finalize({
      population,
      baseline,
      rechecker: { ...rechecker, timingWaits: () => true },
    });
    // only the first contender is verified early; the next one after its timing, as ever
    expect(calls).toEqual([
      "verify k8 speed=1.3",
      "time k8 speed=1.3",
      "time k5 speed=1.1",
      "verify k5 speed=1.1",
    ]);
    expect(final.rejected).toEqual([{ id: "c8", reason: "slower beyond the noise on 8192x16384" }]);
    expect(final.candidate?.id).toBe("c5");
  });

  it("on several GPUs verifies each contender beside its timing, and returns only once all have ended", async () => {
    const { rechecker, calls } = fakeRechecker({ time: k8SlowerOnOneShape });
    const ended: string[] = [];
    const verify = rechecker.verify.bind(rechecker);
    const aside: Rechecker = {
      ...rechecker,
      verifiesAside: () => true,
      async verify(variant, signal) {
        const verdict = verify(variant, signal);
        await new Promise((resolve) => setTimeout(resolve, 20)); // slower than a timing
        ended.push(variant.source);
        return verdict;
      },
    };
    const population = [
      individual("c8", "k8 speed=1.3"),
      individual("c5", "k5 speed=1.1"),
      baseline,
    ];
    const final = await finalize({ population, baseline, rechecker: aside });
    // both verified beside their timings: c8's verdict unused (its timing passed it over)
    expect(calls).toEqual([
      "verify k8 speed=1.3",
      "time k8 speed=1.3",
      "verify k5 speed=1.1",
      "time k5 speed=1.1",
    ]);
    // none outlives the result
    expect(ended.sort()).toEqual(["k5 speed=1.1", "k8 speed=1.3"]);
    expect(final.rejected).toEqual([{ id: "c8", reason: "slower beyond the noise on 8192x16384" }]);
    expect(final.candidate?.id).toBe("c5");
    expect(final.win).toBe(true);
  });

  it("a failed early verification passes its contender over", async () => {
    const { rechecker, calls } = fakeRechecker({
      verify: (source) => ({
        ok: !source.includes("k7"),
        status: source.includes("k7") ? "rejected" : "passed",
        reason: source.includes("k7") ? "mismatch" : null,
        message: "",
        configs: [
          { name: "tall-12289x999", heldout: true, ok: !source.includes("k7"), reason: null },
        ],
      }),
    });
    const population = [
      individual("c7", "k7 speed=1.5"),
      individual("c5", "k5 speed=1.2"),
      baseline,
    ];
    const final = await finalize({
      population,
      baseline,
      rechecker: { ...rechecker, timingWaits: () => true },
    });
    expect(calls).toEqual([
      "verify k7 speed=1.5",
      "time k7 speed=1.5",
      "time k5 speed=1.2",
      "verify k5 speed=1.2",
    ]);
    expect(final.rejected).toEqual([{ id: "c7", reason: "mismatch" }]);
    expect(final.candidate?.id).toBe("c5");
  });

  it("with every contender passed over for a shape, the baseline's figures are the last one's timing", async () => {
    // each contender faster overall, slower beyond the noise on 8192x16384; the last timed
    // beside a baseline of its own figures, so whose they are shows
    const { rechecker, calls } = fakeRechecker({
      time: (source) => {
        const base = source?.includes("k5") ? 2 : 1;
        return {
          ok: true,
          reason: null,
          message: "",
          configs: [
            {
              ...finalConfig("32768x1024", spread(0.6, 0.59, 0.61)),
              baseline: spread(base, base, base),
            },
            {
              ...finalConfig("8192x16384", spread(1.1, 1.09, 1.11)),
              baseline: spread(1, 0.99, 1.01),
            },
          ],
        };
      },
    });
    const population = [
      individual("c8", "k8 speed=1.3"),
      individual("c5", "k5 speed=1.1"),
      baseline,
    ];
    const final = await finalize({ population, baseline, rechecker });
    // neither verified (their timings passed them over), and no timing of the baseline
    // alone: it was just timed beside c5, at the same budget
    expect(calls).toEqual(["time k8 speed=1.3", "time k5 speed=1.1"]);
    expect(final.candidate).toBeNull();
    expect(final.win).toBe(false);
    expect(final.rejected.map((r) => r.id)).toEqual(["c8", "c5"]);
    expect(final.timing.configs.map((config) => config.candidate)).toEqual([null, null]);
    expect(final.timing.configs[0]?.baseline).toEqual(spread(2, 2, 2));
    expect(final.timing.configs[0]?.eager).toEqual(finalConfig("x", null).eager);
    expect(final.verdict).toMatch(/^no candidate passed its final checks \(c8: slower/);
  });

  it("does not re-time a contender the search saw no faster where a re-timed one lost", async () => {
    // c8 loses on 32768x1024 in its final timing; in the search c6 was no faster there
    // (0.90x against c8's 0.95x), c5 was faster (1.02x)
    const searched = (id: string, source: string, speedup: number): Individual => ({
      ...individual(id, source),
      evaluation: {
        ...evaluationOf(source),
        timings: [
          {
            config: "32768x1024",
            medianMs: 1 / speedup,
            p20Ms: 0.9 / speedup,
            p80Ms: 1.1 / speedup,
            baselineMs: 1,
            baselineP20Ms: 0.9,
            baselineP80Ms: 1.1,
          },
        ],
      },
    });
    const { rechecker, calls } = fakeRechecker({
      time: (source) => ({
        ok: true,
        reason: null,
        message: "",
        configs: [
          finalConfig("8192x8192", spread(0.6, 0.59, 0.61)),
          finalConfig(
            "32768x1024",
            source?.includes("k8") ? spread(1.1, 1.09, 1.11) : spread(0.9, 0.89, 0.91),
          ),
        ],
      }),
    });
    const steps: string[] = [];
    const final = await finalize({
      population: [
        searched("c8", "k8 speed=1.4", 0.95),
        searched("c6", "k6 speed=1.3", 0.9),
        searched("c5", "k5 speed=1.2", 1.02),
        baseline,
      ],
      baseline,
      rechecker,
      tries: 2,
      onStep: (line) => steps.push(line.replace(/in [0-9.]+ s/, "in N s")),
    });
    // c6 costs no timing and no try: c5 is the second contender timed, and wins
    expect(calls).toEqual(["time k8 speed=1.4", "time k5 speed=1.2", "verify k5 speed=1.2"]);
    expect(final.candidate?.id).toBe("c5");
    expect(final.win).toBe(true);
    expect(final.rejected).toEqual([
      { id: "c8", reason: "slower beyond the noise on 32768x1024" },
      {
        id: "c6",
        reason:
          "in the search no faster than c8 on 32768x1024 (0.900× against 0.950×), where c8 was slower beyond the noise",
      },
    ]);
    expect(steps).toContain(
      "  c6 not re-timed: in the search no faster than c8 on 32768x1024 (0.900× against 0.950×), where c8 was slower beyond the noise",
    );
  });

  it("re-times every contender where the search has no time on the shape another lost", () => {
    const lost = {
      individual: individual("c8", "k8 speed=1.4"),
      configs: ["8192x16384"], // the search's timings (fakes) are on "odd" only
    };
    expect(noFasterWhereLost(individual("c6", "k6 speed=1.3"), [lost])).toBeNull();
    expect(noFasterWhereLost(individual("c6", "k6 speed=1.3"), [])).toBeNull();
    // the fakes' search timings are on "odd", at the speed their source names
    expect(
      noFasterWhereLost(individual("c6", "k6 speed=1.3"), [{ ...lost, configs: ["odd"] }]),
    ).toMatch(/^in the search no faster than c8 on odd \(1\.300× against 1\.400×\)/);
    expect(
      noFasterWhereLost(individual("c9", "k9 speed=1.5"), [{ ...lost, configs: ["odd"] }]),
    ).toBeNull();
  });

  it("with every contender failing its verification, times the baseline alone", async () => {
    const { rechecker, calls } = fakeRechecker({
      verify: () => ({
        ok: false,
        status: "rejected",
        reason: "mismatch",
        message: "",
        configs: [],
      }),
    });
    const final = await finalize({
      population: [individual("c8", "k8 speed=1.3"), baseline],
      baseline,
      rechecker,
    });
    expect(calls).toEqual(["time k8 speed=1.3", "verify k8 speed=1.3", "time baseline"]);
    expect(final.candidate).toBeNull();
  });

  it("with nothing faster than the baseline, times the baseline alone", async () => {
    const { rechecker, calls } = fakeRechecker();
    const slower = individual("c2", "k2 speed=0.9");
    const final = await finalize({ population: [baseline, slower], baseline, rechecker });
    expect(calls).toEqual(["time baseline"]);
    expect(final.win).toBe(false);
    expect(final.candidate).toBeNull();
    expect(final.verdict).toBe("no candidate was faster than the baseline in the search");
  });
});

describe("the final checks' log", () => {
  it("says where a step's seconds went: each phase of 0.1 s or more, then the rest", () => {
    expect(where(undefined)).toBe("");
    expect(where(undefined, 3)).toBe("");
    expect(where({})).toBe("");
    expect(where({ start: 0.04 })).toBe("");
    expect(where({ start: 0.04 }, 0.1)).toBe("");
    const phases = { start: 0.9, timing: 6.07, compile: 2, inputs: 0.3, load: 0.2, cost: 0.1 };
    expect(where({ ...phases, x: 0.01 })).toBe(
      " (timing 6.1 s, compile 2.0 s, start 0.9 s, inputs 0.3 s, load 0.2 s, cost 0.1 s)",
    );
    // 9.58 s of phases in an 11 s step: 1.4 s outside them
    expect(where({ ...phases, x: 0.01 }, 11)).toBe(
      " (timing 6.1 s, compile 2.0 s, start 0.9 s, inputs 0.3 s, load 0.2 s, cost 0.1 s, elsewhere 1.4 s)",
    );
  });

  it("puts them on the step's line", async () => {
    const { rechecker } = fakeRechecker({
      verify: () => ({
        ok: true,
        status: "passed",
        reason: null,
        message: "",
        configs: [],
        phases: { candidate: 3.2, checks: 1.5 },
      }),
      time: (source) => ({
        ok: true,
        reason: null,
        message: "",
        configs: [
          finalConfig(
            "8192x8192",
            source === null ? null : { medianMs: 0.5, p20Ms: 0.49, p80Ms: 0.51 },
          ),
        ],
        phases: { timing: 4.5, compile: 2.2 },
      }),
    });
    const steps: string[] = [];
    const final = await finalize({
      population: [individual("c4", "k4 speed=2"), baseline],
      baseline,
      rechecker,
      onStep: (line) => steps.push(line.replace(/in [0-9.]+ s/, "in N s")),
    });
    expect(steps).toEqual([
      "  c4 timed in N s (timing 4.5 s, compile 2.2 s)",
      "  c4 verified in N s (candidate 3.2 s, checks 1.5 s): passed",
    ]);
    expect(final.win).toBe(true);
  });
});
