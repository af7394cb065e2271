// evokernel verify: the full cascade for each candidate of one task.
import { EnvironmentError, UsageError } from "../errors.js";
import { evaluateCandidates } from "../evaluate.js";
import { renderCandidates } from "../report/candidates.js";
import { renderStatic } from "../report/verify-table.js";
import { flag, printJson, stringOption, stringsOption, type Command } from "./command.js";
import { createProgress } from "./progress.js";
import { NO_GPU, withSession } from "./session.js";
import { candidatesFor, loadTarget } from "./target.js";

export const verifyCommand: Command = {
  name: "verify",
  summary: "check candidates against the task's reference",
  usage: `usage: evokernel verify <task> [--candidate FILE]… [--heldout] [--device cpu|cuda] [--seed N] [--json]

Runs each candidate through the static check, the build, and verification on every
configuration of the task. Without --candidate, verifies the task's own kernel.

  <task>              a task folder, a KernelBench .py file, or a name under ./kernels
  -c, --candidate F   a candidate file (.cu or .py); repeat for several
      --heldout       also verify the held-out configurations
      --device D      cuda (default) or cpu (py candidates only; no GPU needed)
      --seed N        seed for the inputs
      --json          print one JSON document: { task, device, candidates }

exit: 0 all passed, 1 a candidate rejected or the task invalid, 2 usage,
      3 no GPU or no Python with torch (the static check still runs), 4 internal error`,
  options: {
    candidate: { type: "string", short: "c", multiple: true },
    heldout: { type: "boolean" },
    device: { type: "string" },
    seed: { type: "string" },
    json: { type: "boolean" },
  },
  async run(parsed, io) {
    const deviceChoice = stringOption(parsed, "device") ?? "cuda";
    if (deviceChoice !== "cuda" && deviceChoice !== "cpu") {
      throw new UsageError(`--device is cuda or cpu, not ${deviceChoice}`);
    }
    const seedText = stringOption(parsed, "seed");
    const seed = seedText === undefined ? undefined : Number(seedText);
    if (seed !== undefined && !Number.isInteger(seed))
      throw new UsageError(`--seed is an integer, not ${seedText}`);
    const target = await loadTarget(parsed.positionals[0], io.cwd);
    const candidates = await candidatesFor(target, stringsOption(parsed, "candidate"), io.cwd);
    const json = flag(parsed, "json");

    return withSession(async function verifyWithServer(session) {
      const noGpu = deviceChoice === "cuda" && !session.device.cuda;
      const results = await evaluateCandidates(target.task.path, candidates, {
        device: deviceChoice,
        heldout: flag(parsed, "heldout"),
        ...(seed === undefined ? {} : { seed }),
        staticOnly: noGpu,
        knownDevice: session.device.device,
        server: session.server,
        onEvent: createProgress(io),
      });
      const document = { task: target.task, device: session.device, candidates: results };
      if (noGpu) {
        if (json) printJson(io, { ...document, error: { exitCode: 3, message: NO_GPU } });
        else
          io.stdout(
            `${results.map((result) => renderStatic(result.candidate, result.static)).join("\n")}\n`,
          );
        if (json) return 3;
        throw new EnvironmentError(NO_GPU);
      }
      if (json) printJson(io, document);
      else io.stdout(`${renderCandidates(results)}\n`);
      return results.every((result) => result.ok) ? 0 : 1;
    });
  },
};
