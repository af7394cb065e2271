// Bounded memory of keys already handled: webhook deliveries (a redelivery keeps its
// X-GitHub-Delivery id), comment ids, command + commit. Oldest keys go first.

export interface SeenSet {
  /** True the first time a key is offered, false for every repeat. */
  first(key: string): boolean;
  forget(key: string): void;
}

export function createSeenSet(capacity: number): SeenSet {
  const keys = new Set<string>();
  return {
    first(key) {
      if (keys.has(key)) return false;
      keys.add(key);
      if (keys.size > capacity) {
        const oldest = keys.values().next();
        if (!oldest.done) keys.delete(oldest.value);
      }
      return true;
    },
    forget(key) {
      keys.delete(key);
    },
  };
}
