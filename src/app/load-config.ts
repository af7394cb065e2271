// The repository's `.github/evokernel.yml`, read from the default
// branch (so a pull request cannot change what runs on it) by config-file.ts, bounded, then
// checked with the shared schema. A file that is not YAML is an invalid config, not a crash.
import { parseConfig, type ConfigParse } from "../shared/config.js";
import { ConfigFileError } from "./config-file.js";
import type { GitHub } from "./github.js";

export const CONFIG_FILE = "evokernel.yml";

export async function loadConfig(github: Pick<GitHub, "readConfig">): Promise<ConfigParse> {
  let raw: unknown;
  try {
    raw = await github.readConfig();
  } catch (error) {
    // Only a file we could not read as a config is the user's to fix; anything else (5xx,
    // 401, a timeout) is ours.
    if (error instanceof ConfigFileError) return { ok: false, errors: [error.message] };
    throw new Error("reading .github/evokernel.yml failed", { cause: error });
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
