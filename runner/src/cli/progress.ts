// Progress on stderr: on a terminal the running step rewrites one line; elsewhere (CI logs)
// every event is a line of its own. While steps run, a line every 10 s says which and for how
// long (a verification on the CPU, a build behind others), so a log never goes quiet; the
// seconds it counts are the ones the step's done line then gives.
import { basename } from "node:path";
import type { CascadeEvent } from "../cascade.js";
import { describeEvent } from "../render/progress.js";
import { formatSeconds } from "../render/format.js";
import type { Io } from "./command.js";

/** How often a step that is still running is reported. */
export const HEARTBEAT_MS = 10_000;

export function createProgress(io: Io, everyMs = HEARTBEAT_MS): (event: CascadeEvent) => void {
  const running = new Map<string, { step: string; who: string; since: number }>();
  let timer: ReturnType<typeof setInterval> | undefined;

  function heartbeat(): void {
    const now = Date.now();
    const steps = [...running.values()];
    const shown = steps
      .slice(0, 3)
      .map((item) => `${item.step} ${item.who} (${formatSeconds((now - item.since) / 1000)})`);
    const more = steps.length > 3 ? ` and ${steps.length - 3} more` : "";
    const line = `still running: ${shown.join(", ")}${more}`;
    io.stderr(io.stderrIsTTY ? `\r\x1b[K${line}` : `${line}\n`);
  }

  function track(event: CascadeEvent): void {
    const key = `${event.step}\0${event.candidate}`;
    if (event.type === "start")
      running.set(key, { step: event.step, who: basename(event.candidate), since: Date.now() });
    else running.delete(key);
    if (running.size > 0 && timer === undefined) {
      timer = setInterval(heartbeat, everyMs);
      // Never what keeps the command alive.
      timer.unref();
    } else if (running.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  }

  if (!io.stderrIsTTY)
    return (event) => {
      track(event);
      io.stderr(`${describeEvent(event)}\n`);
    };
  return function rewriteLine(event) {
    track(event);
    const line = `\r\x1b[K${describeEvent(event)}`;
    io.stderr(event.type === "start" ? line : `${line}\n`);
  };
}
