// The Probot entry: `export default (app, { addHandler })`. It wires one thin handler per
// event to the shared state; every handler answers the webhook at once and does its work on
// the in-process queue. `createEvokernelApp` builds an app with its own state (tests, the
// bundle); the default export builds one from the environment.
import type { ApplicationFunction, Context, Probot } from "probot";
import type { z } from "zod";
import type { JobSpec } from "../shared/job.js";
import type { AppState } from "./app-state.js";
import { createActionsDispatcher } from "./dispatch/actions.js";
import { createLocalDispatcher } from "./dispatch/local.js";
import type { Dispatcher, JobOutcome, LostJob } from "./dispatch/types.js";
import { type AppIdentity, createGitHub, listInstalledRepos } from "./github.js";
import { handleAnswerButton } from "./handlers/answer.js";
import { handleRerun } from "./handlers/check-run-rerun.js";
import { handleCheckRun } from "./handlers/check-run.js";
import { handleSuiteRerun } from "./handlers/check-suite-rerun.js";
import { handleIssueComment, isCommandComment } from "./handlers/issue-comment.js";
import {
  checkRunEventSchema,
  checkSuiteEventSchema,
  issueCommentEventSchema,
  pullRequestEventSchema,
  repoOf,
  workflowRunEventSchema,
} from "./handlers/payloads.js";
import {
  handlePullClosed,
  handlePullRequest,
  PULL_REQUEST_ACTIONS,
} from "./handlers/pull-request.js";
import { handleWorkflowRun } from "./handlers/workflow-run.js";
import { CHECK_NAME_PREFIX, createJobRegistry } from "./job-registry.js";
import { loadConfig } from "./load-config.js";
import { createNightlyScheduler, startNightThroughJobs } from "./nightly-scheduler.js";
import { createWorkQueue } from "./queue.js";
import { createEarlyRuns } from "./early-runs.js";
import { endJob, RETRY_END_MS } from "./jobs/finish.js";
import { concludeLostJobs, recoverOpenChecks } from "./jobs/recover.js";
import { gitHubHint } from "./operator-log.js";
import { createSeenSet } from "./seen.js";
import { appSettings, type AppSettings } from "./settings.js";
import { createRedactor, secretValues } from "./redact.js";
import { readDotEnv } from "./setup/server.js";

export interface EvokernelApp {
  readonly appFn: ApplicationFunction;
  /** Resolves when every queued webhook's work and every local job is done. */
  idle(): Promise<void>;
  /** Work items queued or running now (tests wait for one piece of work to end). */
  readonly pending: number;
}

export function createEvokernelApp(settings: AppSettings = appSettings(process.env)): EvokernelApp {
  let state: AppState | undefined;
  const dispatchers: Dispatcher[] = [];

  const appFn: ApplicationFunction = (app) => {
    const log = app.log.child({ name: "evokernel" });
    const identity = appIdentity(app, settings.botLogin);
    // Work that failed on GitHub's side says what to check (the address, the App's key).
    const onError = (label: string, error: unknown) => {
      const hint = gitHubHint(error, {
        ...settings.gitHub,
        ...(settings.appId === undefined ? {} : { APP_ID: String(settings.appId) }),
      });
      log.error({ err: error }, `${label} failed${hint === undefined ? "" : `: ${hint}`}`);
    };
    const actions = settings.actions ?? createActionsDispatcher();
    const local = settings.local
      ? createLocalDispatcher({
          ...settings.local,
          onError,
          onNotice: (message) => log.warn(message),
          onInfo: (message) => log.info(message),
          onDone: (spec, outcome) => finishLocal(spec, outcome),
        })
      : undefined;
    dispatchers.push(actions, ...(local ? [local] : []));
    const current: AppState = {
      queue: createWorkQueue(settings.concurrency, onError),
      seen: createSeenSet(50_000),
      jobs: createJobRegistry(),
      earlyRuns: createEarlyRuns(),
      log,
      dispatchers,
      jobTimeoutMs: settings.jobTimeoutMs,
      redact: createRedactor(settings.secrets ?? heldSecrets()),
      ...(settings.appId === undefined ? {} : { appId: settings.appId }),
      ...(settings.retryEndMs === undefined ? {} : { retryEndMs: settings.retryEndMs }),
      ...(settings.maxJobsPerInstallation === undefined
        ? {}
        : { maxJobsPerInstallation: settings.maxJobsPerInstallation }),
      dispatcherFor(config) {
        if (settings.forceLocal && local) return local;
        if (config.dispatch === "actions") return actions;
        return (
          local ??
          "This repository's `.github/evokernel.yml` asks for `dispatch: local`, but the app's operator has not enabled local runs (EVOKERNEL_LOCAL_REPO). Use `dispatch: actions` with a GPU runner, or ask the operator."
        );
      },
      async githubFor(installationId, repo) {
        return createGitHub(await app.auth(installationId), repo, identity);
      },
    };
    state = current;
    if (local?.recover) {
      // Whatever recovery is set to: a runner the last process left would hold a GPU.
      const recover = local.recover.bind(local);
      const forget = (jobId: string) => local.forget?.(jobId) ?? Promise.resolve();
      const conclude = (lost: readonly LostJob[]) => {
        current.queue.push("local jobs left by the last process", async () => {
          const { concluded, left } = await concludeLostJobs(current, lost, forget);
          log.info(
            { lost: lost.length, concluded, left: left.length },
            "start-up: local jobs of the last process failed",
          );
          // GitHub could not take some: tried again later (their records stay meanwhile).
          if (left.length > 0)
            setTimeout(() => conclude(left), settings.retryEndMs ?? RETRY_END_MS).unref();
        });
      };
      current.queue.push("local jobs left by the last process", async () => {
        const lost = await recover();
        if (lost.length > 0) conclude(lost);
      });
    }
    if (settings.recover) {
      const appId = settings.recover.appId;
      current.queue.push("start-up recovery", async () => {
        const summary = await recoverOpenChecks(current, {
          listRepos: () => listInstalledRepos((id) => app.auth(id)),
          now: () => Date.now(),
          ...(appId === undefined ? {} : { appId }),
        });
        log.info(summary, "start-up recovery: open check runs concluded or watched");
      });
    }
    if (settings.nightly) {
      createNightlyScheduler({
        listRepos: () => listInstalledRepos((id) => app.auth(id)),
        githubFor: (id, repo) => current.githubFor(id, repo),
        start: startNightThroughJobs(current),
        now: () => new Date(),
        graceMs: settings.nightly.graceMs,
        first: (key) => current.seen.first(key),
        onError,
      }).start(settings.nightly.tickMs);
    }

    /** False while the job's check run is not concluded (its record then stays on disk). */
    async function finishLocal(spec: JobSpec, outcome: JobOutcome): Promise<boolean> {
      const job = current.jobs.get(spec.id);
      if (!job) return true;
      await endJob(
        current,
        await current.githubFor(job.installationId, job.repo),
        job,
        outcome,
        "local",
      );
      return current.jobs.get(spec.id) === undefined;
    }

    /** Parse, de-duplicate by delivery id, enqueue: the webhook is answered before any work. */
    function enqueue<S extends z.ZodType>(
      context: Context,
      schema: S,
      accept: (event: z.infer<S>) => boolean,
      work: (event: z.infer<S>, octokit: Context["octokit"], delivery: string) => Promise<void>,
    ): void {
      const parsed = schema.safeParse(context.payload);
      if (!parsed.success) {
        log.warn(
          { event: context.name, issues: parsed.error.issues.slice(0, 3) },
          "payload without the fields evokernel needs; ignored",
        );
        return;
      }
      if (!accept(parsed.data)) return;
      const delivery = context.id;
      const key = `delivery:${delivery}`;
      // Only the parsed fields (zod drops the rest) wait in the queue, never the context or
      // its client: a backlog of 1-24 MB payloads and one Octokit each stayed on the heap
      // (516 MB resident in the first mixed load run). The client is made when the work
      // starts (Probot caches the installation's token: no request). app.auth builds it from
      // the same class (evokernelOctokit: time limits, retry, throttling) and, unlike the
      // context's client, gives the throttling the installation as its id: one
      // installation's write pacing no longer paces every other's.
      const event = parsed.data;
      const installationId = installationIdOf(event);
      const label = `${context.name} ${context.id}`;
      if (!current.seen.first(key)) return;
      // Work that failed (GitHub down, say) may be redelivered by hand: forget it was seen.
      // Keyed by installation: one whose GitHub calls hang holds at most a quarter of the slots.
      current.queue.push(
        label,
        async () => {
          try {
            await work(event, await app.auth(installationId), delivery);
          } catch (error) {
            current.seen.forget(key);
            throw error;
          }
        },
        `installation:${installationId ?? "none"}`,
      );
    }

    app.on(
      PULL_REQUEST_ACTIONS.map((action) => `pull_request.${action}` as const),
      (context) => {
        enqueue(
          context,
          pullRequestEventSchema,
          () => true,
          async (event, octokit, delivery) => {
            const github = createGitHub(octokit, repoOf(event), identity);
            // A closed PR's jobs are cancelled whatever the config says: no config read.
            if (event.action === "closed") await handlePullClosed(current, github, event);
            else
              await handlePullRequest(current, github, event, await loadConfig(github), delivery);
          },
        );
      },
    );
    app.on("issue_comment.created", (context) => {
      enqueue(context, issueCommentEventSchema, isCommandComment, async (event, octokit) => {
        const github = createGitHub(octokit, repoOf(event), identity);
        await handleIssueComment(current, github, event, () => loadConfig(github));
      });
    });
    app.on("workflow_run.completed", (context) => {
      enqueue(
        context,
        workflowRunEventSchema,
        (event) => event.workflow_run.event === "workflow_dispatch",
        async (event, octokit) => {
          const github = createGitHub(octokit, repoOf(event), identity);
          await handleWorkflowRun(current, github, event, () => loadConfig(github));
        },
      );
    });
    app.on("check_run.rerequested", (context) => {
      enqueue(
        context,
        checkRunEventSchema,
        (event) => event.check_run.name.startsWith(CHECK_NAME_PREFIX),
        async (event, octokit) => {
          const github = createGitHub(octokit, repoOf(event), identity);
          await handleRerun(current, github, event, () => loadConfig(github));
        },
      );
    });
    app.on("check_suite.rerequested", (context) => {
      enqueue(
        context,
        checkSuiteEventSchema,
        () => true,
        async (event, octokit) => {
          const github = createGitHub(octokit, repoOf(event), identity);
          await handleSuiteRerun(current, github, event, () => loadConfig(github));
        },
      );
    });
    app.on("check_run.requested_action", (context) => {
      enqueue(
        context,
        checkRunEventSchema,
        () => true,
        async (event, octokit) => {
          const github = createGitHub(octokit, repoOf(event), identity);
          // Apply, or one of the buttons that answer a verdict (each handler ignores the rest).
          await handleCheckRun(current, github, event);
          await handleAnswerButton(current, github, event);
        },
      );
    });
  };

  return {
    appFn,
    get pending() {
      return state?.queue.size ?? 0;
    },
    async idle() {
      // Work can queue more work (a local job finishing reports through GitHub): settle both.
      for (;;) {
        await state?.queue.idle();
        await Promise.all(
          dispatchers.map((dispatcher) => dispatcher.idle?.() ?? Promise.resolve()),
        );
        if ((state?.queue.size ?? 0) === 0) return;
      }
    },
  };
}

/**
 * The app's bot login (`<slug>[bot]`: what its own comments and reviews carry), asked of
 * GitHub once through the app's own client (GET /app with the App's JWT) unless given.
 */
export function appIdentity(app: Pick<Probot, "auth">, botLogin?: string): AppIdentity {
  let login: Promise<string> | undefined;
  return {
    login() {
      login ??= botLogin
        ? Promise.resolve(botLogin)
        : (async () => {
            const octokit = await app.auth();
            const { data } = await octokit.rest.apps.getAuthenticated();
            const slug = data && "slug" in data ? data.slug : undefined;
            if (!slug) throw new Error("GitHub did not name the App (GET /app)");
            return `${slug}[bot]`;
          })();
      // A failed lookup is asked again next time, not remembered.
      login.catch(() => (login = undefined));
      return login;
    },
  };
}

function installationIdOf(event: unknown): number | undefined {
  const installation =
    typeof event === "object" && event !== null && "installation" in event
      ? event.installation
      : undefined;
  return typeof installation === "object" &&
    installation !== null &&
    "id" in installation &&
    typeof installation.id === "number"
    ? installation.id
    : undefined;
}

const defaultApp: ApplicationFunction = (app: Probot, options) =>
  createEvokernelApp().appFn(app, options);
export default defaultApp;

/** The secrets this process holds: its environment, .env and the key file, as Probot reads them. */
function heldSecrets(): string[] {
  let dotEnv: Record<string, string> = {};
  try {
    dotEnv = readDotEnv(process.cwd());
  } catch {
    // An unreadable .env holds nothing this process could leak.
  }
  return secretValues({ ...process.env, ...dotEnv }, process.cwd());
}
