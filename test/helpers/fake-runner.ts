// A HarnessRunner that answers from a function instead of starting Python: it sees the typed
// request, writes whatever record it is given to the request's `out`, and ends as told.
import { writeFileSync } from "node:fs";
import type { HarnessOutcome, HarnessRunner } from "../../runner/src/harness/outcome.js";
import {
  harnessCommandSchema,
  type HarnessCommand,
} from "../../src/shared/contract/harness-request.js";

export type FakeAnswer = { record?: unknown; text?: string; outcome?: Partial<HarnessOutcome> };

export function fakeRunner(answer: (request: HarnessCommand) => FakeAnswer) {
  const calls: HarnessCommand[] = [];
  const runner: HarnessRunner = async function runFake(request) {
    // what the harness would refuse, the stand-in refuses too
    calls.push(harnessCommandSchema.parse(request));
    const out = "out" in request ? request.out : undefined;
    const { record, text, outcome } = answer(request);
    if (out !== undefined && (record !== undefined || text !== undefined)) {
      writeFileSync(out, text ?? JSON.stringify(record));
    }
    await Promise.resolve();
    return {
      exitCode: 0,
      signal: null,
      timedOut: false,
      memKilled: false,
      seconds: 0.1,
      log: "",
      ...outcome,
    };
  };
  return { runner, calls };
}
