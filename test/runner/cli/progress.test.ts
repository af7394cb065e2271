// Progress that never goes quiet: a step still running is reported every 10 s (on a pipe a
// line each time, on a terminal the one line rewritten), with the seconds its done line will
// give; the harness's start likewise. Timers are faked: nothing here waits on the clock.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createProgress, HEARTBEAT_MS } from "../../../runner/src/cli/progress.js";
import type { Io } from "../../../runner/src/cli/command.js";
import { whileWaiting, WAIT_REPORT_MS } from "../../../runner/src/pipeline/session.js";

function io(tty: boolean): Io & { err: string[] } {
  const err: string[] = [];
  return {
    err,
    stdout: () => undefined,
    stderr: (text) => err.push(text),
    stderrIsTTY: tty,
    cwd: "/",
  };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "Date"] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe("a step's progress", () => {
  it("says at once what starts, then every 10 s that it still runs, on a pipe", () => {
    const out = io(false);
    const progress = createProgress(out);
    progress({ type: "start", step: "verify", candidate: "/x/23_Softmax_new.py" });
    expect(out.err).toEqual(["verify 23_Softmax_new.py …\n"]);
    vi.advanceTimersByTime(2 * HEARTBEAT_MS + 500);
    expect(out.err.slice(1)).toEqual([
      "still running: verify 23_Softmax_new.py (10 s)\n",
      "still running: verify 23_Softmax_new.py (20 s)\n",
    ]);
    progress({
      type: "done",
      step: "verify",
      candidate: "/x/23_Softmax_new.py",
      ok: true,
      seconds: 20.5,
      detail: "passed",
    });
    // Nothing runs: no more lines, and no timer left to hold the process.
    vi.advanceTimersByTime(5 * HEARTBEAT_MS);
    expect(out.err).toHaveLength(4);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("rewrites the one line on a terminal, and names a few of many running steps", () => {
    const out = io(true);
    const progress = createProgress(out);
    for (const name of ["a.cu", "b.cu", "c.cu", "d.cu", "e.cu"])
      progress({ type: "start", step: "build", candidate: name });
    vi.advanceTimersByTime(HEARTBEAT_MS);
    expect(out.err.at(-1)).toBe(
      "\r\x1b[Kstill running: build a.cu (10 s), build b.cu (10 s), build c.cu (10 s) and 2 more",
    );
  });
});

describe("the harness's start", () => {
  it("is reported every 10 s while it is awaited, and no more once it is done", async () => {
    const said: string[] = [];
    let done: (value: string) => void = () => undefined;
    const waiting = whileWaiting(
      new Promise<string>((resolve) => (done = resolve)),
      (line) => said.push(line),
      (seconds) => `still starting (${seconds.toFixed(0)} s)`,
    );
    vi.advanceTimersByTime(2 * WAIT_REPORT_MS + 100);
    expect(said).toEqual(["still starting (10 s)", "still starting (20 s)"]);
    done("device");
    expect(await waiting).toBe("device");
    vi.advanceTimersByTime(3 * WAIT_REPORT_MS);
    expect(said).toHaveLength(2);
  });
});
