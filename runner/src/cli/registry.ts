// The commands by name, each module imported only when its command runs: `--version`,
// `--help` and a typo's answer load none of them (and so no zod, execa or diff).
import type { Command } from "./command.js";

export type CommandEntry = {
  readonly name: string;
  readonly summary: string;
  load(): Promise<Command>;
};

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "tasks",
    summary: "list and check tasks",
    load: async () => (await import("./tasks.js")).tasksCommand,
  },
  {
    name: "verify",
    summary: "check candidates against the task's reference",
    load: async () => (await import("./verify.js")).verifyCommand,
  },
  {
    name: "bench",
    summary: "verify a candidate, then time it against eager, torch.compile and the task's kernel",
    load: async () => (await import("./bench.js")).benchCommand,
  },
  {
    name: "optimize",
    summary: "search for a faster kernel that passes the verifier, and write the result",
    load: async () => (await import("./optimize.js")).optimizeCommand,
  },
  {
    name: "review",
    summary:
      "what the app runs on a pull request, on this checkout: verify and time changed kernels",
    load: async () => (await import("./review.js")).reviewCommand,
  },
  {
    name: "job",
    summary: "run a job spec (the app's, or the Action's) and write its result",
    load: async () => (await import("./job.js")).jobCommand,
  },
  {
    name: "selftest",
    summary: "run the adversarial corpus: every hack rejected, every correct kernel passed",
    load: async () => (await import("./selftest.js")).selftestCommand,
  },
  {
    name: "device",
    summary: "show the GPU, driver and versions the harness sees",
    load: async () => (await import("./device.js")).deviceCommand,
  },
];
