// A job the app finds again after a restart (its run's result came back, the registry is
// empty): the spec is rebuilt from what the app itself wrote or reads, never taken from the
// result's artifact. The job id and commit come from the app's own check run; the PR number
// and kind from that id; the tasks a suggestion may touch and the regression threshold from
// the repository's config on the default branch. The artifact's copy of the spec is
// untrusted: code from the pull request ran beside it.
import type { ConfigParse } from "../../shared/config.js";
import type { JobSpec } from "../../shared/job.js";
import { jobKindSchema } from "../../shared/job.js";

/** The default branch's config lost or broken: nothing may be suggested, the usual threshold. */
const FALLBACK_THRESHOLD = 3;

export function recoveredSpec(
  artifact: JobSpec,
  checkRun: { readonly headSha: string },
  config: ConfigParse | undefined,
): { spec: JobSpec; threshold: number } {
  const [kindText, prText] = artifact.id.split("-");
  const kind = jobKindSchema.safeParse(kindText);
  const pr = prText !== undefined && /^\d+$/.test(prText) ? Number(prText) : undefined;
  // The artifact's own pr and paths are dropped, not trusted.
  const rest: JobSpec = { ...artifact };
  delete rest.pr;
  delete rest.paths;
  const trusted = config?.ok === true ? config.config : undefined;
  const threshold = trusted?.regressionThreshold ?? FALLBACK_THRESHOLD;
  return {
    spec: {
      ...rest,
      kind: kind.success ? kind.data : artifact.kind,
      sha: checkRun.headSha,
      ...(pr === undefined ? {} : { pr }),
      // The original plan is gone with the registry: every task under the config's roots
      // (none without a config, so nothing is suggested).
      tasks: [],
      roots: trusted === undefined ? [] : [...trusted.tasks],
      ...(trusted?.paths === undefined ? {} : { paths: [...trusted.paths] }),
      regressionThreshold: threshold,
      ...(trusted?.thresholds === undefined ? {} : { thresholds: [...trusted.thresholds] }),
    },
    threshold,
  };
}
