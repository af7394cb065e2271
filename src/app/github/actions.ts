// Workflow runs the app starts and watches (GitHub Actions): a dispatch, finding the run a
// dispatch started, cancelling it, and downloading its result artifact under a size cap.
import { z } from "zod";
import { boundedChunks, checkAnnounced } from "../bounded-read.js";
import { acceptsRunDetails } from "../server-features.js";
import { type AreaContext, GitHubError, statusOf } from "./common.js";

/** A result artifact is small; its download (from blob storage) gets two minutes at most. */
const ARTIFACT_DOWNLOAD_TIMEOUT_MS = 120_000;

export interface DispatchedRun {
  readonly runId?: number;
  readonly runUrl?: string;
}

export interface ActionsApi {
  dispatchWorkflow(
    workflow: string,
    ref: string,
    inputs: Record<string, string>,
  ): Promise<DispatchedRun>;
  /**
   * The run a dispatch without run details started, by the job id in its run-name (listed
   * from `since`); undefined when it is not (yet) there.
   */
  findDispatchedRun(
    workflow: string,
    jobId: string,
    since: Date,
  ): Promise<DispatchedRun | undefined>;
  cancelWorkflowRun(runId: number): Promise<void>;
  /**
   * The named artifact's zip as a stream of bytes, or undefined when the run has none by that
   * name. Over `maxBytes` (as listed, as announced, or as it arrives): TooLargeError.
   */
  downloadArtifact(
    runId: number,
    name: string,
    maxBytes: number,
  ): Promise<AsyncIterable<Uint8Array> | undefined>;
}

const dispatchDetailsSchema = z.object({
  workflow_run_id: z.number().int().optional(),
  run_url: z.string().optional(),
  html_url: z.string().optional(),
});

export function createActions({ octokit, base, call }: AreaContext): ActionsApi {
  return {
    async dispatchWorkflow(workflow, ref, inputs) {
      // return_run_details (2026-02-19) makes GitHub answer 200 with the run; only where the
      // server documents it (server-features.ts). Without it GitHub answers 204 and the run
      // is found by listing (findDispatchedRun), or later by its job id.
      const details = await acceptsRunDetails(
        String(octokit.request.endpoint.DEFAULTS.baseUrl),
        async () => (await octokit.request("GET /meta")).data,
      );
      const response = await call(`dispatch ${workflow}`, () =>
        octokit.request("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", {
          ...base,
          workflow_id: workflow,
          ref,
          inputs,
          ...(details ? { return_run_details: true } : {}),
        }),
      );
      const parsed = dispatchDetailsSchema.safeParse(response.data);
      if (!parsed.success) return {};
      return {
        ...(parsed.data.workflow_run_id === undefined
          ? {}
          : { runId: parsed.data.workflow_run_id }),
        ...(parsed.data.html_url === undefined ? {} : { runUrl: parsed.data.html_url }),
      };
    },
    async findDispatchedRun(workflow, jobId, since) {
      const { data } = await call(`list the runs of ${workflow}`, () =>
        octokit.rest.actions.listWorkflowRuns({
          ...base,
          workflow_id: workflow,
          event: "workflow_dispatch",
          created: `>=${since.toISOString()}`,
          per_page: 30,
        }),
      );
      const runs = z
        .object({
          workflow_runs: z.array(
            z.object({
              id: z.number().int(),
              html_url: z.string(),
              display_title: z.string().optional(),
            }),
          ),
        })
        .parse(data).workflow_runs;
      // The workflow's run-name holds the job id (action/example-workflow.yml).
      const run = runs.find((item) => item.display_title?.split(/\s+/).includes(jobId) === true);
      return run === undefined ? undefined : { runId: run.id, runUrl: run.html_url };
    },
    async cancelWorkflowRun(runId) {
      try {
        await octokit.rest.actions.cancelWorkflowRun({ ...base, run_id: runId });
      } catch (error) {
        // 409: the run has finished already; nothing to cancel.
        if (statusOf(error) === 409) return;
        throw new GitHubError(`GitHub: cancel run ${runId} failed`, statusOf(error), {
          cause: error,
        });
      }
    },
    async downloadArtifact(runId, artifactName, maxBytes) {
      const { data } = await call(`list the artifacts of run ${runId}`, () =>
        octokit.rest.actions.listWorkflowRunArtifacts({
          ...base,
          run_id: runId,
          name: artifactName,
          per_page: 100,
        }),
      );
      const listed = z
        .object({
          artifacts: z.array(
            z.object({
              id: z.number().int(),
              name: z.string(),
              expired: z.boolean(),
              size_in_bytes: z.number().optional(),
            }),
          ),
        })
        .parse(data);
      const artifact = listed.artifacts.find((item) => item.name === artifactName && !item.expired);
      if (!artifact) return undefined;
      // The listed size first: an oversized artifact is refused without a byte downloaded.
      checkAnnounced(artifact.size_in_bytes, maxBytes, `artifact ${artifactName}`);
      const download = await call(`download artifact ${artifact.id}`, () =>
        octokit.request(
          "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}",
          {
            ...base,
            artifact_id: artifact.id,
            archive_format: "zip",
            // The body as a stream (Octokit would buffer it whole), read under the cap below.
            request: {
              parseSuccessResponseBody: false,
              signal: AbortSignal.timeout(ARTIFACT_DOWNLOAD_TIMEOUT_MS),
            },
          },
        ),
      );
      const body: unknown = download.data;
      if (!(body instanceof ReadableStream))
        throw new GitHubError(
          `GitHub: artifact ${artifact.id} came back without a body`,
          undefined,
          {
            cause: undefined,
          },
        );
      try {
        checkAnnounced(download.headers["content-length"], maxBytes, `artifact ${artifactName}`);
      } catch (error) {
        await body.cancel().catch(() => undefined);
        throw error;
      }
      return boundedChunks(
        body as ReadableStream<Uint8Array>,
        maxBytes,
        `artifact ${artifactName}`,
      );
    },
  };
}
