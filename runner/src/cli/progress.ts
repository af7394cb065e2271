// Progress on stderr: on a terminal the running step rewrites one line; elsewhere (CI logs)
// every event is a line of its own.
import type { EvaluationEvent } from "../evaluate.js";
import { describeEvent } from "../render/progress.js";
import type { Io } from "./command.js";

export function createProgress(io: Io): (event: EvaluationEvent) => void {
  if (!io.stderrIsTTY) return (event) => io.stderr(`${describeEvent(event)}\n`);
  return function rewriteLine(event) {
    const line = `\r\x1b[K${describeEvent(event)}`;
    io.stderr(event.type === "start" ? line : `${line}\n`);
  };
}
