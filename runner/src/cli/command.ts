// What every command is made of, and the one seam through which commands reach the terminal.
import type { ParseArgsConfig } from "node:util";
import { UsageError } from "../errors.js";

export type Io = {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether stderr is a terminal (then progress rewrites one line). */
  stderrIsTTY: boolean;
  cwd: string;
  /** Aborted at the first Ctrl-C, for commands that stop cleanly; absent: none asked for. */
  interruptSignal?: () => AbortSignal;
};

export type Options = NonNullable<ParseArgsConfig["options"]>;

export type Parsed = {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
};

export type Command = {
  name: string;
  usage: string;
  options: Options;
  /** Resolves to the exit code; throws UsageError/EnvironmentError/TaskError for those exits. */
  run(parsed: Parsed, io: Io): Promise<number>;
};

export function printJson(io: Io, document: unknown): void {
  io.stdout(`${JSON.stringify(document, null, 2)}\n`);
}

export function stringOption(parsed: Parsed, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : undefined;
}

export function stringsOption(parsed: Parsed, name: string): string[] {
  const value = parsed.values[name];
  if (Array.isArray(value)) return value.filter((item) => typeof item === "string");
  return typeof value === "string" ? [value] : [];
}

export function flag(parsed: Parsed, name: string): boolean {
  return parsed.values[name] === true;
}

/** --seed N: the inputs' seed, an integer (absent: the harness chooses one). */
export function seedOption(parsed: Parsed): number | undefined {
  const text = stringOption(parsed, "seed");
  if (text === undefined) return undefined;
  const seed = Number(text);
  if (text.trim() === "" || !Number.isSafeInteger(seed))
    throw new UsageError(`--seed is an integer, not ${text}`);
  return seed;
}

/** --config NAME…: the configurations to run, by name; empty: all of them. */
export function configsOption(parsed: Parsed): string[] {
  const names = stringsOption(parsed, "config");
  const empty = names.find((name) => name.trim() === "");
  if (empty !== undefined) throw new UsageError("--config names a configuration: it is empty");
  return [...new Set(names)];
}
