// The command line: picks the command, parses its flags, and turns every way a run can end
// into one exit code (docs/CLI.md). Results go to stdout, messages and progress to stderr.
import { parseArgs } from "node:util";
import { printJson, type Command, type Io } from "./command.js";
import { COMMANDS, type CommandEntry } from "./registry.js";
import { EnvironmentError, HarnessError, TaskError, UsageError } from "../errors.js";
import { packageVersion } from "../paths.js";
import { closest } from "../util/suggest.js";

export type { Io } from "./command.js";

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
    "  evokernel help <command>     the command's options (or evokernel <command> --help)",
    "  evokernel --version, -V      the version",
    "",
    "exit: 0 ok, 1 a candidate rejected or a task invalid, 2 usage, 3 no GPU or no Python",
    "      with torch (or another setting of this machine), 4 internal error",
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
  return (await plan(argv))(io);
}

/**
 * What a command line would do, every name and flag checked (UsageError as a run would
 * throw it) and nothing run: the docs test holds the documented command lines to this.
 */
export async function checkCommandLine(argv: readonly string[]): Promise<void> {
  await plan(argv);
}

type Action = (io: Io) => Promise<number>;

async function plan(argv: readonly string[]): Promise<Action> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    return (io) => {
      io.stderr(`${globalUsage()}\n`);
      return Promise.resolve(EXIT.usage);
    };
  }
  if (name === "--help" || name === "-h") return print(globalUsage());
  if (name === "help") {
    const topic = rest[0];
    if (topic === undefined) return print(globalUsage());
    return print((await find(topic).load()).usage);
  }
  if (name === "--version" || name === "-V" || name === "-v" || name === "version") {
    return print(packageVersion());
  }
  if (name.startsWith("-")) {
    throw new UsageError(
      `${name} comes after a command: evokernel <command> [options] (see evokernel --help)`,
    );
  }
  const command = await find(name).load();
  if (rest.includes("--help") || rest.includes("-h")) return print(command.usage);
  const parsed = parse(command, rest);
  return (io) => command.run(parsed, io);
}

function print(text: string): Action {
  return (io) => {
    io.stdout(`${text}\n`);
    return Promise.resolve(EXIT.ok);
  };
}

function find(name: string): CommandEntry {
  const entry = COMMANDS.find((candidate) => candidate.name === name);
  if (entry !== undefined) return entry;
  const names = COMMANDS.map((candidate) => candidate.name);
  const guess = closest(name, names);
  const hint = guess === undefined ? "" : `; did you mean "${guess}"?`;
  throw new UsageError(
    `unknown command "${name}"${hint} Use one of ${names.join(", ")} (see evokernel --help)`,
  );
}

/** Our own words for a flag we do not know or a value that is missing, not parseArgs' text. */
function parse(command: Command, args: string[]) {
  checkFlags(command, args);
  try {
    return parseArgs({ args, options: command.options, allowPositionals: true, strict: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UsageError(`${message} (see evokernel help ${command.name})`, { cause: error });
  }
}

function checkFlags(command: Command, args: readonly string[]): void {
  const options = Object.entries(command.options);
  const long = new Map(options.map(([name, option]) => [name, option.type]));
  const short = new Map(
    options.flatMap(([name, option]) =>
      option.short === undefined ? [] : [[option.short, name] as const],
    ),
  );
  const see = `see evokernel help ${command.name}`;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] ?? "";
    if (arg === "--") return;
    if (!arg.startsWith("-") || arg === "-" || /^-\d/.test(arg)) continue;
    const isLong = arg.startsWith("--");
    const [flagName = "", inline] = isLong ? splitOnce(arg.slice(2), "=") : [arg.slice(1)];
    const name = isLong ? flagName : short.get(flagName);
    const type = name === undefined ? undefined : long.get(name);
    if (type === undefined) {
      const guess = closest(isLong ? flagName : arg.replace(/^-+/, ""), [...long.keys()]);
      const hint = guess === undefined ? "" : `; did you mean --${guess}?`;
      throw new UsageError(`${command.name} has no option ${arg}${hint} (${see})`);
    }
    if (type === "boolean" && inline !== undefined) {
      throw new UsageError(`--${name} takes no value: write --${name}, not ${arg} (${see})`);
    }
    if (type === "string" && inline === undefined) {
      const value = args[index + 1];
      if (value === undefined || (value.startsWith("--") && value !== "--")) {
        throw new UsageError(`--${name} needs a value: --${name} VALUE (${see})`);
      }
      index++;
    }
  }
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
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
