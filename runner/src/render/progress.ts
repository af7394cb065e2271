// One line per step of the cascade, for stderr while the work runs.
import { basename } from "node:path";
import type { CascadeEvent } from "../cascade.js";
import { formatSeconds } from "./format.js";

export function describeEvent(event: CascadeEvent): string {
  const who = basename(event.candidate);
  if (event.type === "start") return `${event.step.padEnd(6)} ${who} …`;
  // no-gpu: the machine could not run it (verify --device cpu on a CUDA candidate), no verdict
  const verdict = event.ok ? "ok" : event.detail === "no-gpu" ? "not run" : "FAILED";
  return `${event.step.padEnd(6)} ${who} ${verdict} (${event.detail}, ${formatSeconds(event.seconds)})`;
}
