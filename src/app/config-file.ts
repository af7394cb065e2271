// Reading `.github/evokernel.yml` as Probot's config plugin does (the repository's default
// branch, else the organisation's `.github` repository, then `_extends` chains), but bounded:
// each file is refused past CONFIG_FILE_LIMIT while it streams in, before YAML sees it, and
// parsed by `yaml` with limits (aliases, unique keys), so a hostile file costs milliseconds,
// not the seconds a 192 KB one took. A file the user must fix is a ConfigFileError; a GitHub
// failure stays a GitHubError for the caller.
import type { ProbotOctokit } from "probot";
import { isMap, isScalar, isSeq, parseDocument } from "yaml";
import { readBounded, TooLargeError, checkAnnounced } from "./bounded-read.js";
import { CONFIG_FILE_LIMIT } from "./input-limits.js";

export const CONFIG_PATH = ".github/evokernel.yml";

export class ConfigFileError extends Error {
  override readonly name = "ConfigFileError";
}

interface FileRef {
  readonly owner: string;
  readonly repo: string;
  readonly path: string;
}

// The plugin's `_extends` grammar: `[owner/]repo[:path.yml]`.
const EXTENDS =
  /^(?:([a-z\d](?:[a-z\d]|-(?=[a-z\d])){0,38})\/)?([-_.\w\d]+)(?::([-_./\w\d]+\.ya?ml))?$/i;
/** More files than this in one `_extends` chain is a mistake (or a loop through renames). */
const MAX_FILES = 5;

/**
 * The merged config object, or null when no file exists. Later files in an `_extends` chain
 * give way to earlier ones, key by key at the top level (the plugin's Object.assign).
 */
export async function fetchConfig(
  octokit: ProbotOctokit,
  repo: { owner: string; repo: string },
): Promise<Record<string, unknown> | null> {
  const files: { ref: FileRef; config: Record<string, unknown> }[] = [];
  let ref: FileRef | undefined = { owner: repo.owner, repo: repo.repo, path: CONFIG_PATH };
  let config = await readConfigFile(octokit, ref);
  if (config === null && repo.repo !== ".github") {
    ref = { owner: repo.owner, repo: ".github", path: CONFIG_PATH };
    config = await readConfigFile(octokit, ref);
  }
  if (config === null) return null;
  files.push({ ref, config });
  while (config !== null && "_extends" in config) {
    const next = extendsRef(config._extends, repo.owner, ref);
    delete config._extends;
    if (files.some((file) => sameFile(file.ref, next)))
      throw new ConfigFileError(`\`_extends\` loops back to ${describe(next)}`);
    if (files.length >= MAX_FILES)
      throw new ConfigFileError(`\`_extends\` chains more than ${MAX_FILES} files`);
    ref = next;
    config = await readConfigFile(octokit, ref);
    if (config !== null) files.push({ ref, config });
  }
  return Object.assign({}, ...files.map((file) => file.config).reverse()) as Record<
    string,
    unknown
  >;
}

/** One file: null when it does not exist; its YAML as an object, or ConfigFileError. */
async function readConfigFile(
  octokit: ProbotOctokit,
  ref: FileRef,
): Promise<Record<string, unknown> | null> {
  let response;
  try {
    response = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...ref,
      mediaType: { format: "raw" },
      request: { parseSuccessResponseBody: false },
    });
  } catch (error) {
    if (typeof error === "object" && error !== null && "status" in error && error.status === 404)
      return null;
    throw error;
  }
  const body: unknown = response.data;
  if (!(body instanceof ReadableStream)) throw new ConfigFileError(`${describe(ref)} is empty`);
  let text: string;
  try {
    if (String(response.headers["content-type"] ?? "").startsWith("application/json"))
      throw new ConfigFileError(`${describe(ref)} is a folder or a submodule, not a file`);
    checkAnnounced(response.headers["content-length"], CONFIG_FILE_LIMIT, describe(ref));
    text = (
      await readBounded(body as ReadableStream<Uint8Array>, CONFIG_FILE_LIMIT, describe(ref))
    ).toString("utf8");
  } catch (error) {
    await body.cancel().catch(() => undefined);
    if (error instanceof TooLargeError)
      throw new ConfigFileError(`${error.message}; an evokernel config is a few lines`);
    throw error;
  }
  return parseConfigText(text, describe(ref));
}

/**
 * YAML with limits: few aliases (no billion laughs), one document, and unique keys checked
 * here in one pass (the yaml package's own check compares every pair of keys: 2.5 s for a
 * 192 KB file of 8,600 keys on the CI machine).
 */
export function parseConfigText(text: string, where = CONFIG_PATH): Record<string, unknown> {
  const bytes = Buffer.byteLength(text);
  if (bytes > CONFIG_FILE_LIMIT)
    throw new ConfigFileError(
      `${where} is ${bytes} bytes, over the ${CONFIG_FILE_LIMIT} bytes allowed; an evokernel config is a few lines`,
    );
  const invalid = (detail: string) =>
    new ConfigFileError(
      `${where} is not valid YAML (${detail}); fix the syntax, e.g. with \`yamllint\``,
    );
  let value: unknown;
  try {
    const doc = parseDocument(text, { uniqueKeys: false, logLevel: "error" });
    const first = doc.errors[0];
    if (first) throw invalid(first.message.split("\n")[0] ?? "");
    const duplicate = duplicateKey(doc.contents);
    if (duplicate !== undefined) throw invalid(`the key \`${duplicate}\` appears twice`);
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    if (error instanceof ConfigFileError) throw error;
    throw invalid(error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error));
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== "object" || Array.isArray(value))
    throw new ConfigFileError(`${where} must hold a mapping of options, not a ${typeof value}`);
  return value as Record<string, unknown>;
}

const MAX_ALIASES = 20;

/** The first key that appears twice in one mapping, anywhere in the document. */
function duplicateKey(node: unknown): string | undefined {
  if (isMap(node)) {
    const seen = new Set<string>();
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      if (seen.has(key)) return key;
      seen.add(key);
      const inner = duplicateKey(pair.value);
      if (inner !== undefined) return inner;
    }
  } else if (isSeq(node)) {
    for (const item of node.items) {
      const inner = duplicateKey(item);
      if (inner !== undefined) return inner;
    }
  }
  return undefined;
}

function extendsRef(value: unknown, owner: string, from: FileRef): FileRef {
  const match = typeof value === "string" ? EXTENDS.exec(value) : null;
  if (!match || match[2] === undefined)
    throw new ConfigFileError(
      `\`_extends: ${String(value)}\` in ${describe(from)} is not \`[owner/]repo[:path.yml]\``,
    );
  return { owner: match[1] ?? owner, repo: match[2], path: match[3] ?? from.path };
}

function sameFile(a: FileRef, b: FileRef): boolean {
  return a.owner === b.owner && a.repo === b.repo && a.path === b.path;
}

function describe(ref: FileRef): string {
  return `${ref.owner}/${ref.repo}:${ref.path}`;
}
