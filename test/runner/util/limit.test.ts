// The limit behind the GPU queue: at most N pieces of work at once; waiting work starts by its
// order (the search's proposal number), then in the order it was asked for.
import { describe, expect, it } from "vitest";
import { createLimit } from "../../../runner/src/util/limit.js";

function gate(): { open: () => void; opened: Promise<void> } {
  let open = () => undefined as void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe("createLimit", () => {
  it("starts waiting work lowest order first, then as asked; work without an order last", async () => {
    const limit = createLimit(1);
    const first = gate();
    const started: string[] = [];
    const run = (name: string, order?: number) =>
      limit(async () => {
        started.push(name);
        if (name === "busy") await first.opened;
      }, order);
    const all = [
      run("busy", 9),
      run("none-a"),
      run("c7", 7),
      run("c3", 3),
      run("none-b"),
      run("c5", 5),
      run("c3-again", 3),
    ];
    first.open();
    await Promise.all(all);
    expect(started).toEqual(["busy", "c3", "c3-again", "c5", "c7", "none-a", "none-b"]);
  });

  it("runs at most `concurrency` at once", async () => {
    const limit = createLimit(2);
    let running = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        limit(async () => {
          running += 1;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 5));
          running -= 1;
        }, 6 - i),
      ),
    );
    expect(most).toBe(2);
  });
});
