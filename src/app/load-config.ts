// The repository's `.github/evokernel.yml`, read from the default branch through Probot's
// context.config (so a pull request cannot change what runs on it), then checked with the
// shared schema. A file that is not YAML is an invalid config, not a crash.
import type { Context } from "probot";
import { parseConfig, type ConfigParse } from "../shared/config.js";

export const CONFIG_FILE = "evokernel.yml";

export async function loadConfig(context: Context): Promise<ConfigParse> {
  let raw: unknown;
  try {
    raw = await context.config(CONFIG_FILE);
  } catch (error) {
    const status =
      typeof error === "object" && error !== null && "status" in error ? error.status : undefined;
    // Only a file we could not parse is the user's to fix; anything else (5xx, 401) is ours.
    if (typeof status === "number")
      throw new Error("reading .github/evokernel.yml failed", { cause: error });
    const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return {
      ok: false,
      errors: [`the file is not valid YAML (${detail}); fix the syntax, e.g. with \`yamllint\``],
    };
  }
  return parseConfig(raw);
}

/** The check run output for a config that does not parse: every error, and what to do. */
export function invalidConfigOutput(errors: readonly string[]): { title: string; summary: string } {
  return {
    title: ".github/evokernel.yml is invalid",
    summary: [
      "evokernel read `.github/evokernel.yml` from the default branch and could not use it:",
      "",
      ...errors.map((error) => `- ${error}`),
      "",
      "Fix the file on the default branch; the next push to this PR runs with it.",
    ].join("\n"),
  };
}
