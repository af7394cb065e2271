// The in-process work queue: webhook handlers enqueue and return at once (GitHub allows 10 s
// for an answer); the work runs afterwards, a few tasks at a time. Work carries a key (the
// installation) and no key holds more than `perKey` of the slots, so one installation whose
// requests hang (each up to the request timeout) never makes the others wait. Tests await
// `idle()`.

export interface WorkQueue {
  /** Runs `work` later; a failure is reported to `onError`, never thrown at the caller. */
  push(label: string, work: () => Promise<void>, key?: string): void;
  /** Resolves when nothing is queued or running (work queued meanwhile is awaited too). */
  idle(): Promise<void>;
  readonly size: number;
}

export function createWorkQueue(
  concurrency: number,
  onError: (label: string, error: unknown) => void,
  perKey: number = Math.max(1, Math.ceil(concurrency / 4)),
): WorkQueue {
  const waiting: { label: string; work: () => Promise<void>; key: string | undefined }[] = [];
  const runningByKey = new Map<string, number>();
  let running = 0;
  let idleWaiters: (() => void)[] = [];

  function startable(): number {
    return waiting.findIndex(
      (item) => item.key === undefined || (runningByKey.get(item.key) ?? 0) < perKey,
    );
  }

  function next(): void {
    while (running < concurrency) {
      const at = startable();
      if (at < 0) break;
      const [item] = waiting.splice(at, 1);
      if (!item) break;
      running++;
      if (item.key !== undefined) runningByKey.set(item.key, (runningByKey.get(item.key) ?? 0) + 1);
      // setImmediate: the webhook's answer leaves before any of its work starts.
      setImmediate(() => {
        item
          .work()
          .catch((error: unknown) => onError(item.label, error))
          .finally(() => {
            running--;
            if (item.key !== undefined) {
              const left = (runningByKey.get(item.key) ?? 1) - 1;
              if (left === 0) runningByKey.delete(item.key);
              else runningByKey.set(item.key, left);
            }
            next();
          });
      });
    }
    if (running === 0 && waiting.length === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  return {
    push(label, work, key) {
      waiting.push({ label, work, key });
      next();
    },
    idle() {
      if (running === 0 && waiting.length === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    get size() {
      return running + waiting.length;
    },
  };
}
