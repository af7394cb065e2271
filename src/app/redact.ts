// Every string the app posts from a job (a runner's log tail, a failure's message, a result's
// names and texts) passes through one redactor first: a job's output is written by code the
// app does not trust (the runner, the PR's code, an LLM's), and a runner that read a secret
// must not be able to publish it through the app. The redactor knows every secret value the
// app holds (the environment and .env: the private key, the webhook secret, the client
// secret, the LLM's key, any token; the key file) and the shapes of secrets it cannot list
// (a PEM private key, GitHub's tokens, which the app mints at run time, Anthropic's keys).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isSecretName, MIN_SECRET_LENGTH, REDACTED, SECRET_SHAPES } from "../shared/redact.js";

export { REDACTED };

export interface Redactor {
  /** `text` with every secret replaced by [redacted]. */
  text(text: string): string;
  /** A copy of `value` with every string in it redacted (a result, before it is rendered). */
  deep<T>(value: T): T;
}

/**
 * The secret values the app holds: from `env` (the process's and .env's, merged), the
 * variables whose names say secret, and the private key wherever Probot would read it
 * (PRIVATE_KEY, PRIVATE_KEY_PATH, a .pem file in `cwd`).
 */
export function secretValues(
  env: Readonly<Record<string, string | undefined>>,
  cwd?: string,
): string[] {
  const values: string[] = [];
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && isSecretName(name)) values.push(value);
  const keyFiles = [
    ...(env["PRIVATE_KEY_PATH"] ? [env["PRIVATE_KEY_PATH"]] : []),
    ...(cwd === undefined
      ? []
      : readdirSafe(cwd)
          .filter((name) => name.endsWith(".pem"))
          .map((name) => join(cwd, name))),
  ];
  for (const file of keyFiles) {
    const text = existsSync(file) ? readFileSafe(file) : undefined;
    if (text !== undefined) values.push(text);
  }
  return values;
}

/** A redactor for `values` (each as given, and the pieces a partial leak would show) and the shapes. */
export function createRedactor(values: readonly string[]): Redactor {
  const pieces = new Set<string>();
  for (const value of values) {
    for (const piece of piecesOf(value)) if (piece.length >= MIN_SECRET_LENGTH) pieces.add(piece);
  }
  // Longest first: a secret that holds another is replaced whole.
  const ordered = [...pieces].sort((a, b) => b.length - a.length);
  function text(input: string): string {
    let out = input;
    for (const shape of SECRET_SHAPES) out = out.replace(shape, REDACTED);
    for (const piece of ordered) if (out.includes(piece)) out = out.split(piece).join(REDACTED);
    return out;
  }
  function deep<T>(value: T): T {
    if (typeof value === "string") return text(value) as T;
    if (Array.isArray(value)) return value.map((item: unknown) => deep(item)) as T;
    if (value !== null && typeof value === "object")
      return Object.fromEntries(
        Object.entries(value).map(([key, item]) => [key, deep(item as unknown)]),
      ) as T;
    return value;
  }
  return { text, deep };
}

/**
 * A value, and what of it a leak may show instead: a PEM key with `\n` written as two
 * characters (as .env holds it) or as real line breaks, and each line of its body (a log
 * that printed part of the file), and its body as one line.
 */
function piecesOf(value: string): string[] {
  const trimmed = value.trim();
  const pieces = [trimmed, trimmed.replace(/\\n/g, "\n"), trimmed.replace(/\n/g, "\\n")];
  const lines = trimmed
    .replace(/\\n/g, "\n")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("-----"));
  if (lines.length > 1) pieces.push(...lines, lines.join(""));
  return pieces;
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function readFileSafe(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}
