// Glob patterns of `.github/evokernel.yml` (`tasks`, `paths`, `nightly.tasks`), matched
// against paths relative to the repository root with forward slashes, by picomatch in the
// dialect of GitHub's `paths:` filters: `*` (within one name, dots included), `**` (any
// folders), `[ab]` and `[a-z]` (one of), and in a list `!pattern` (a later negation takes
// back what earlier patterns matched; a later positive one adds back). Also `{a,b}`
// (either). GitHub reads `?` and `+` as "zero or one" and "one or more" of the character
// before, which no glob library does: the config refuses them (globProblem), as it refuses
// extglobs. A pattern without any wildcard names a file or a folder and matches everything
// beneath it. The one dialect of the app's planner and of the runner (`evokernel review`, jobs).
import picomatch from "picomatch";

const WILDCARD = /[*[{]/;

const OPTIONS: picomatch.PicomatchOptions = {
  dot: true,
  noextglob: true,
  nonegate: true,
  strictSlashes: true,
};

export function isGlob(pattern: string): boolean {
  return WILDCARD.test(pattern);
}

/**
 * Why a pattern is not accepted, or null. The config schema calls this, so a pattern either
 * means what GitHub's `paths:` filter means or the config says why not.
 */
export function globProblem(pattern: string, options: { negation: boolean }): string | null {
  const body = pattern.startsWith("!") ? pattern.slice(1) : pattern;
  if (pattern.startsWith("!") && !options.negation)
    return `"${pattern}": a negation (!) belongs in \`paths\`, not here`;
  if (trimSlashes(body) === "") return `"${pattern}": names no file`;
  if (/(?<!\\)[?+]/.test(body))
    return `"${pattern}": \`?\` and \`+\` mean "zero or one" and "one or more" of the character before in GitHub's paths filters and something else in globs, so evokernel takes neither: use \`*\`, \`[ab]\` or \`{a,b}\``;
  if (/[@!*]\(/.test(body))
    return `"${pattern}": extended globs (\`@(…)\`, \`!(…)\`) are not supported`;
  if (/\[[^\]]*$/.test(body)) return `"${pattern}": \`[\` is not closed`;
  return null;
}

/** Whether `path` matches the pattern (a pattern without wildcards: the path or beneath it). */
export function matchesGlob(path: string, pattern: string): boolean {
  return globMatcher(pattern)(path);
}

/** `matchesGlob` for one pattern, compiled once. */
export function globMatcher(pattern: string): (path: string) => boolean {
  const clean = trimSlashes(pattern);
  if (!isGlob(clean)) {
    const literal = clean.replace(/\\(.)/g, "$1");
    return (path) => {
      const file = trimSlashes(path);
      return file === literal || file.startsWith(`${literal}/`);
    };
  }
  const match = picomatch(clean, OPTIONS);
  return (path) => match(trimSlashes(path));
}

/**
 * A list of patterns as GitHub reads a `paths:` filter: the last pattern that matches
 * decides, a `!pattern` excluding and any other including. A list of negations alone
 * matches nothing (GitHub asks for at least one positive pattern first).
 */
export function pathFilter(patterns: readonly string[]): (path: string) => boolean {
  const compiled = patterns.map((pattern) => {
    const negated = pattern.startsWith("!");
    return { negated, match: globMatcher(negated ? pattern.slice(1) : pattern) };
  });
  return (path) => {
    let included = false;
    for (const { negated, match } of compiled) {
      if (included === !negated) continue;
      if (match(path)) included = !negated;
    }
    return included;
  };
}

/** Whether `path` is the folder or file a pattern names, or lies under one it matches. */
export function isUnder(path: string, pattern: string): boolean {
  const match = globMatcher(pattern);
  const parts = trimSlashes(path).split("/");
  for (let length = parts.length; length > 0; length--) {
    if (match(parts.slice(0, length).join("/"))) return true;
  }
  return false;
}

function trimSlashes(path: string): string {
  return path.replace(/^\.\//, "").replace(/^\/+|\/+$/g, "");
}
