// evokernel bench: verify one candidate, then time it beside eager PyTorch, torch.compile
// and the task's own kernel.
import { resolve } from "node:path";
import { runCascade } from "../cascade.js";
import { renderCandidate } from "../render/candidates.js";
import {
  configsOption,
  flag,
  printJson,
  seedOption,
  stringOption,
  type Command,
} from "./command.js";
import { createProgress } from "./progress.js";
import { benchReproduction, verifyReproduction } from "./reproduce.js";
import { requireGpu, withSession } from "../pipeline/session.js";
import { candidatesFor, loadTarget, taskRef } from "../workspace/target.js";

export const benchCommand: Command = {
  name: "bench",
  usage: `usage: evokernel bench <task> [--candidate FILE] [--baseline FILE] [--seed N] [--config NAME]… [--no-compile] [--json]

Verifies the candidate first (a wrong kernel is not timed), then times it interleaved with
eager PyTorch, torch.compile and the task's own kernel, with L2 flushed between calls.
Without --candidate, times the task's own kernel. Needs a CUDA GPU.

  <task>              a task folder, a KernelBench .py file, or a name under ./kernels
  -c, --candidate F   the candidate file (.cu or .py)
      --baseline F    time this kernel file beside it as the baseline (e.g. base's kernel,
                      as a review does) instead of the task's own kernel
      --seed N        seed for the inputs (verification's and timing's): the same seed
                      gives the same inputs
      --config NAME   only this configuration; repeat for several; with the same --seed
                      each is timed on the inputs it had in the full run
      --no-compile    skip the torch.compile baseline (it is slow to warm up)
      --json          print one JSON document: { task, device, candidate }

exit: 0 verified and timed, 1 rejected (by verification or timing) or the task invalid,
      2 usage, 3 no GPU or no Python with torch, 4 internal error`,
  options: {
    candidate: { type: "string", short: "c" },
    baseline: { type: "string" },
    seed: { type: "string" },
    config: { type: "string", multiple: true },
    "no-compile": { type: "boolean" },
    json: { type: "boolean" },
  },
  async run(parsed, io) {
    const seed = seedOption(parsed);
    const configs = configsOption(parsed);
    const target = await loadTarget(parsed.positionals[0], io.cwd);
    const given = stringOption(parsed, "candidate");
    const [candidate] = await candidatesFor(target, given === undefined ? [] : [given], io.cwd);
    if (candidate === undefined) throw new Error("candidatesFor returned no candidate");
    // The kernel --baseline names, else the task's own when something else is the candidate.
    const givenBaseline = stringOption(parsed, "baseline");
    const baseline =
      givenBaseline !== undefined
        ? { baseline: resolve(io.cwd, givenBaseline) }
        : given === undefined || target.baseline === null
          ? {}
          : { baseline: target.baseline };

    return withSession(
      async function benchWithServer(session) {
        requireGpu(session);
        const [result] = await runCascade(taskRef(target), [candidate], {
          bench: { ...baseline, compile: !flag(parsed, "no-compile") },
          ...(seed === undefined ? {} : { seed }),
          ...(configs.length === 0 ? {} : { configs }),
          knownDevice: session.device.device,
          server: session.server,
          onEvent: createProgress(io),
        });
        if (result === undefined) throw new Error("runCascade returned no result");
        const task = parsed.positionals[0] ?? target.task.path;
        const reproduce = {
          verify: verifyReproduction(task, result, { cwd: io.cwd, configs, device: "cuda" }),
          bench: benchReproduction(task, result, {
            cwd: io.cwd,
            configs,
            ...(givenBaseline === undefined ? {} : { baseline: givenBaseline }),
          }),
        };
        if (flag(parsed, "json"))
          printJson(io, {
            task: target.task,
            device: session.device,
            candidate: { ...result, reproduce },
          });
        else io.stdout(`${renderCandidate(result)}\n`);
        return result.ok ? 0 : 1;
      },
      { needGpu: true, say: (line) => io.stderr(`${line}\n`) },
    );
  },
};
