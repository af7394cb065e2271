// Runs async work with at most `concurrency` pieces in flight, in the order it was asked for.
export type Limit = <T>(work: () => Promise<T>) => Promise<T>;

export function createLimit(concurrency: number): Limit {
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`concurrency must be a positive integer, not ${concurrency}`);
  }
  let running = 0;
  const waiting: (() => void)[] = [];

  function next(): void {
    running -= 1;
    waiting.shift()?.();
  }

  return async function limited<T>(work: () => Promise<T>): Promise<T> {
    if (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    running += 1;
    try {
      return await work();
    } finally {
      next();
    }
  };
}
