// The actions backend: a workflow_dispatch of the repository's evokernel workflow, with the
// job spec as its one input. The result comes back as an artifact on workflow_run.completed
// (handlers/workflow-run.ts reads it through readResultArtifact).
import { encodeJobInputs } from "../../shared/job.js";
import { parseReviewResult, type ReviewResult } from "../../shared/review.js";
import type { ActionsApi } from "../github.js";
import { TooLargeError } from "../bounded-read.js";
import { ARTIFACT_LIMITS } from "../input-limits.js";
import { unzipBounded, ZipError, type ZipEntry } from "../zip.js";
import type { Dispatcher } from "./types.js";
import { codeSpan, mdText } from "../../report/escape.js";

/** The artifact the Action uploads (action/). */
export const RESULT_ARTIFACT = "evokernel-result";

/**
 * `findRunWaitsMs`: the pauses before each look for a run dispatched without run details;
 * found none, the job is still matched by its id when its run completes.
 */
export function createActionsDispatcher(
  findRunWaitsMs: readonly number[] = [1_000, 2_000, 4_000],
): Dispatcher {
  return {
    name: "actions",
    async start({ spec, github, workflow, ref }) {
      // A minute of slack for the clocks of GitHub and this machine.
      const since = new Date(Date.now() - 60_000);
      const run = await github.dispatchWorkflow(workflow, ref, { ...encodeJobInputs(spec) });
      if (run.runId !== undefined) return run;
      // A server without run details (GHES): the run appears in the list within seconds.
      for (const waitMs of findRunWaitsMs) {
        await new Promise((resolve) => setTimeout(resolve, waitMs));
        // Not finding it is no failure: the result still names its job.
        const found = await github
          .findDispatchedRun(workflow, spec.id, since)
          .catch(() => undefined);
        if (found !== undefined) return found;
      }
      return run;
    },
    async cancel(_jobId, runId, github) {
      if (runId !== undefined) await github.cancelWorkflowRun(runId);
    },
  };
}

export type ArtifactRead =
  | { readonly ok: true; readonly review: ReviewResult }
  | { readonly ok: false; readonly message: string };

/**
 * The run's result: the artifact's zip, its one JSON file, validated with the review schema.
 * Artifacts are untrusted (code from the PR ran beside them): only parsed, never executed.
 */
export async function readResultArtifact(github: ActionsApi, runId: number): Promise<ArtifactRead> {
  let entries: ZipEntry[];
  try {
    const zip = await github.downloadArtifact(runId, RESULT_ARTIFACT, ARTIFACT_LIMITS.zipBytes);
    if (!zip)
      return {
        ok: false,
        message: `the run uploaded no \`${RESULT_ARTIFACT}\` artifact; open the run's log to see where it stopped`,
      };
    // Only JSON is read; the other entries are counted against the caps and dropped.
    entries = await unzipBounded(zip, ARTIFACT_LIMITS, (name) => name.endsWith(".json"));
  } catch (error) {
    if (error instanceof TooLargeError)
      return {
        ok: false,
        message: `the \`${RESULT_ARTIFACT}\` artifact was not downloaded: ${error.message}; a result is a few hundred KB, so check what the workflow uploads`,
      };
    if (!(error instanceof ZipError)) throw error;
    return {
      ok: false,
      message: `the \`${RESULT_ARTIFACT}\` artifact is not a readable zip within the app's limits (${mdText(error.message)}); re-run the job`,
    };
  }
  const json = entries.filter((entry) => entry.name.endsWith(".json"));
  if (json.length !== 1 || !json[0]) {
    return {
      ok: false,
      message: `the \`${RESULT_ARTIFACT}\` artifact holds ${json.length} JSON files, not one; check the workflow's upload step`,
    };
  }
  let data: unknown;
  try {
    data = JSON.parse(json[0].data.toString("utf8"));
  } catch {
    return {
      ok: false,
      message: `${codeSpan(json[0].name)} in the artifact is not JSON; check the runner's output in the run's log`,
    };
  }
  const parsed = parseReviewResult(data);
  if (!parsed.ok) {
    return {
      ok: false,
      message: `${codeSpan(json[0].name)} does not match the review result schema (${mdText(parsed.errors.slice(0, 3).join("; "))}); are the runner and the app the same version?`,
    };
  }
  return { ok: true, review: parsed.result };
}
