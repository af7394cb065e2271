// Runs async work with at most `concurrency` pieces in flight. Waiting work starts in the order
// it was asked for, except that work given an `order` starts before work given a later one (or
// none): the search's GPU queue evaluates proposal n before n+1 whichever was built first, so
// the proposals waiting on n start as early as they can.
export type Limit = <T>(work: () => Promise<T>, order?: number) => Promise<T>;

export function createLimit(concurrency: number): Limit {
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`concurrency must be a positive integer, not ${concurrency}`);
  }
  let running = 0;
  let asked = 0;
  const waiting: { order: number; asked: number; start: () => void }[] = [];

  function next(): void {
    running -= 1;
    waiting.shift()?.start();
  }

  return async function limited<T>(work: () => Promise<T>, order?: number): Promise<T> {
    if (running >= concurrency) {
      await new Promise<void>((start) => {
        const entry = { order: order ?? Infinity, asked: asked++, start };
        const at = waiting.findIndex(
          (other) =>
            other.order > entry.order || (other.order === entry.order && other.asked > entry.asked),
        );
        waiting.splice(at === -1 ? waiting.length : at, 0, entry);
      });
    }
    running += 1;
    try {
      return await work();
    } finally {
      next();
    }
  };
}
