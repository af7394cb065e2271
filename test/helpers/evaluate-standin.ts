// A stand-in for client.evaluate (the quick check, the full check and the timing in one
// harness child) made of stand-ins for client.verify and client.bench: the records the
// three would give, in order, each reported as it ends, stopping after one that is not ok.
import type { HarnessCalls } from "../../runner/src/cascade.js";
import type { EvaluateRecords } from "../../runner/src/harness/client.js";

export function evaluateFrom(
  calls: Pick<HarnessCalls, "verify" | "bench">,
  log?: string[],
): HarnessCalls["evaluate"] {
  return async (task, candidate, options = {}) => {
    log?.push(`evaluate ${candidate}`);
    const { onRecord, artifact, heldout, device, seed, knownDevice, static: checked } = options;
    const shared = {
      ...(options.runner === undefined ? {} : { runner: options.runner }),
      ...(knownDevice === undefined ? {} : { knownDevice }),
    };
    const verifyOptions = {
      ...shared,
      ...(artifact === undefined ? {} : { artifact }),
      ...(device === undefined ? {} : { device }),
      ...(seed === undefined ? {} : { seed }),
      ...(checked === undefined ? {} : { static: checked }),
    };
    const records: EvaluateRecords = { quick: null, verify: null, bench: null };
    records.quick = await calls.verify(task, candidate, {
      ...verifyOptions,
      quick: true,
      heldout: false,
    });
    onRecord?.("quick", records.quick, records.quick.ok ? "verify" : null);
    if (!records.quick.ok) return records;
    records.verify = await calls.verify(task, candidate, {
      ...verifyOptions,
      ...(heldout === undefined ? {} : { heldout }),
    });
    onRecord?.("verify", records.verify, records.verify.ok ? "bench" : null);
    if (!records.verify.ok) return records;
    records.bench = await calls.bench(task, {
      ...shared,
      candidate,
      ...(artifact === undefined ? {} : { artifact }),
      ...(options.baseline === undefined ? {} : { baseline: options.baseline }),
      ...(options.baselineArtifact === undefined
        ? {}
        : { baselineArtifact: options.baselineArtifact }),
      ...(options.compile === undefined ? {} : { compile: options.compile }),
      ...(options.budgetS === undefined ? {} : { budgetS: options.budgetS }),
    });
    onRecord?.("bench", records.bench, null);
    return records;
  };
}
