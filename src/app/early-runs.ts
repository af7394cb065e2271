// Runs that ended before their job was on the books. The app dispatches a workflow and then
// creates the job's check run; a run that fails at once (or a slow check-run request) can
// send workflow_run.completed in between, when neither the registry nor GitHub knows the
// job yet. Such a run is parked here, bounded in number and age, and handled again as soon
// as its job is registered (jobs/start.ts), instead of waiting out the job's deadline.

/** A run as GitHub's event names it: its id and its run-name (which holds the job id). */
export interface ParkedRun {
  readonly runId: number;
  readonly title?: string;
}

export interface EarlyRuns {
  /** Remembers a run no job claimed yet, and how to handle it again. */
  park(run: ParkedRun, replay: () => Promise<void>): void;
  /**
   * The replay of the run parked for a job that has just been registered: its run, or (no
   * run id known, dispatched without run details) the run whose run-name names the job.
   */
  take(job: { readonly jobId: string; readonly runId?: number }): (() => Promise<void>) | undefined;
  readonly size: number;
}

interface Entry extends ParkedRun {
  readonly at: number;
  readonly replay: () => Promise<void>;
}

export function createEarlyRuns(
  capacity = 1000,
  maxAgeMs = 30 * 60_000,
  now: () => number = Date.now,
): EarlyRuns {
  // Insertion order is age order: the oldest go first.
  const entries = new Map<number, Entry>();

  function prune(): void {
    for (const [runId, entry] of entries) {
      if (entries.size <= capacity && now() - entry.at <= maxAgeMs) break;
      entries.delete(runId);
    }
  }

  return {
    park(run, replay) {
      entries.delete(run.runId);
      entries.set(run.runId, { ...run, at: now(), replay });
      prune();
    },
    take(job) {
      prune();
      for (const [runId, entry] of entries) {
        const matches =
          job.runId === undefined
            ? entry.title?.split(/\s+/).includes(job.jobId) === true
            : job.runId === runId;
        if (!matches) continue;
        entries.delete(runId);
        return entry.replay;
      }
      return undefined;
    },
    get size() {
      return entries.size;
    },
  };
}
