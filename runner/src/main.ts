// The command line: picks the command, parses its flags, and turns every way a run can end
// into one exit code (docs/CLI.md). Results go to stdout, messages and progress to stderr.
import { parseArgs } from "node:util";
import { benchCommand } from "./commands/bench.js";
import { printJson, type Command, type Io } from "./commands/command.js";
import { deviceCommand } from "./commands/device.js";
import { jobCommand } from "./commands/job.js";
import { optimizeCommand } from "./commands/optimize.js";
import { reviewCommand } from "./commands/review.js";
import { selftestCommand } from "./commands/selftest.js";
import { tasksCommand } from "./commands/tasks.js";
import { verifyCommand } from "./commands/verify.js";
import { EnvironmentError, HarnessError, TaskError, UsageError } from "./errors.js";
import { packageVersion } from "./paths.js";

export type { Io } from "./commands/command.js";

const COMMANDS: readonly Command[] = [
  tasksCommand,
  verifyCommand,
  benchCommand,
  optimizeCommand,
  reviewCommand,
  jobCommand,
  selftestCommand,
  deviceCommand,
];

export const EXIT = { ok: 0, rejected: 1, usage: 2, environment: 3, internal: 4 } as const;

function globalUsage(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  const list = COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`);
  return [
    "usage: evokernel <command> [options]",
    "",
    "Verifies and times custom CUDA kernels against PyTorch references.",
    "",
    "commands:",
    ...list,
    "",
    "  evokernel <command> --help   the command's options",
    "  evokernel --version          the version",
    "",
    "exit: 0 ok, 1 a candidate rejected or a task invalid, 2 usage, 3 no GPU or no Python",
    "      with torch, 4 internal error",
  ].join("\n");
}

export async function main(argv: readonly string[], io: Io): Promise<number> {
  const json = argv.includes("--json");
  try {
    return await dispatch(argv, io);
  } catch (error) {
    const code = exitCodeOf(error);
    const message = describeError(error, argv[0]);
    io.stderr(`evokernel: ${message}\n`);
    if (json) printJson(io, { error: { exitCode: code, message } });
    return code;
  }
}

async function dispatch(argv: readonly string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    io.stderr(`${globalUsage()}\n`);
    return EXIT.usage;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    io.stdout(`${globalUsage()}\n`);
    return EXIT.ok;
  }
  if (name === "--version" || name === "-v") {
    io.stdout(`${packageVersion()}\n`);
    return EXIT.ok;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (command === undefined) {
    const names = COMMANDS.map((candidate) => candidate.name).join(", ");
    throw new UsageError(`unknown command "${name}": use one of ${names} (see evokernel --help)`);
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    io.stdout(`${command.usage}\n`);
    return EXIT.ok;
  }
  return command.run(parse(command, rest), io);
}

function parse(command: Command, args: string[]) {
  try {
    return parseArgs({ args, options: command.options, allowPositionals: true, strict: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UsageError(`${message} (see evokernel ${command.name} --help)`, { cause: error });
  }
}

function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError) return EXIT.usage;
  if (error instanceof TaskError) return EXIT.rejected;
  if (error instanceof EnvironmentError) return EXIT.environment;
  return EXIT.internal;
}

function describeError(error: unknown, command: string | undefined): string {
  if (error instanceof HarnessError) {
    const log = error.log.trim() === "" ? "" : `\nharness output:\n${error.log.trimEnd()}`;
    return `${error.message}${log}`;
  }
  if (
    error instanceof UsageError ||
    error instanceof TaskError ||
    error instanceof EnvironmentError
  ) {
    return error.message;
  }
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return `internal error${command === undefined ? "" : ` in ${command}`}: ${detail}`;
}
