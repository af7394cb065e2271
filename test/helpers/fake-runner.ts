// A HarnessRunner that answers from a function instead of starting Python: it sees the
// argv, writes whatever record it is given to --out, and ends as told.
import { writeFileSync } from "node:fs";
import type { HarnessOutcome, HarnessRunner } from "../../runner/src/harness/outcome.js";

export type FakeAnswer = { record?: unknown; text?: string; outcome?: Partial<HarnessOutcome> };

export function fakeRunner(answer: (argv: readonly string[]) => FakeAnswer) {
  const calls: string[][] = [];
  const runner: HarnessRunner = async function runFake(argv) {
    calls.push([...argv]);
    const out = argv[argv.indexOf("--out") + 1];
    const { record, text, outcome } = answer(argv);
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
