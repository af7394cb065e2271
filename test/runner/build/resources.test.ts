// The resources one run's candidates share, and their defaults (runner/src/build/resources.ts).
import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { createBuildPool } from "../../../runner/src/build/pool.js";
import { createResources } from "../../../runner/src/build/resources.js";
import type { Limit } from "../../../runner/src/util/limit.js";
import { buildRecord } from "../../helpers/records.js";

/** How many of `count` pieces of work `limit` let run at once. */
async function most(limit: Limit, count: number): Promise<number> {
  let running = 0;
  let seen = 0;
  await Promise.all(
    Array.from({ length: count }, () =>
      limit(async () => {
        running += 1;
        seen = Math.max(seen, running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running -= 1;
      }),
    ),
  );
  return seen;
}

describe("createResources", () => {
  it("keeps what it is given", () => {
    const given = {
      pool: createBuildPool({ build: () => Promise.resolve(buildRecord()) }),
      gpu: (work) => work(),
      cpu: (work) => work(),
    } satisfies Parameters<typeof createResources>[0];
    const made = createResources(given);
    expect(made.pool).toBe(given.pool);
    expect(made.gpu).toBe(given.gpu);
    expect(made.cpu).toBe(given.cpu);
  });

  it("by default runs GPU work one piece at a time and a static check per core", async () => {
    const { gpu, cpu } = createResources();
    const cores = availableParallelism();
    expect(await most(gpu, 3)).toBe(1);
    expect(await most(cpu, cores + 2)).toBe(cores);
  });

  it("makes a new set each time: two runs share nothing unless handed the same", () => {
    const [first, second] = [createResources(), createResources()];
    expect(second.pool).not.toBe(first.pool);
    expect(second.gpu).not.toBe(first.gpu);
    expect(second.cpu).not.toBe(first.cpu);
  });
});
