// The in-process work queue: webhook handlers enqueue and return at once (GitHub allows 10 s
// for an answer); the work runs afterwards, a few tasks at a time. Tests await `idle()`.

export interface WorkQueue {
  /** Runs `work` later; a failure is reported to `onError`, never thrown at the caller. */
  push(label: string, work: () => Promise<void>): void;
  /** Resolves when nothing is queued or running (work queued meanwhile is awaited too). */
  idle(): Promise<void>;
  readonly size: number;
}

export function createWorkQueue(
  concurrency: number,
  onError: (label: string, error: unknown) => void,
): WorkQueue {
  const waiting: { label: string; work: () => Promise<void> }[] = [];
  let running = 0;
  let idleWaiters: (() => void)[] = [];

  function next(): void {
    while (running < concurrency && waiting.length > 0) {
      const item = waiting.shift();
      if (!item) return;
      running++;
      // setImmediate: the webhook's answer leaves before any of its work starts.
      setImmediate(() => {
        item
          .work()
          .catch((error: unknown) => onError(item.label, error))
          .finally(() => {
            running--;
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
    push(label, work) {
      waiting.push({ label, work });
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
