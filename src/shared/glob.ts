// Glob patterns of `.github/evokernel.yml` (`tasks`, `paths`), matched against paths
// relative to the repository root with forward slashes. The subset every user writes:
// `**` (any folders), `*` and `?` (within one name), `{a,b}` (either); a pattern without
// any of them names a file or a folder, and matches everything beneath it. The one dialect
// of the app's planner and of the runner (`evokernel review`, jobs).
const SPECIAL = /[*?{]/;

export function isGlob(pattern: string): boolean {
  return SPECIAL.test(pattern);
}

export function globToRegExp(pattern: string): RegExp {
  const glob = trimSlashes(pattern);
  let source = "";
  let braces = 0;
  for (let index = 0; index < glob.length; index++) {
    const char = glob.charAt(index);
    if (char === "*" && glob.charAt(index + 1) === "*") {
      const slash = glob.charAt(index + 2) === "/";
      // `**/` is zero or more folders; a trailing `**` is anything below.
      source += slash ? "(?:.*/)?" : ".*";
      index += slash ? 2 : 1;
    } else if (char === "*") source += "[^/]*";
    else if (char === "?") source += "[^/]";
    else if (char === "{") {
      braces++;
      source += "(?:";
    } else if (char === "}" && braces > 0) {
      braces--;
      source += ")";
    } else if (char === "," && braces > 0) source += "|";
    else source += char.replace(/[.+^$()|[\]\\}]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

/** Whether `path` matches the pattern (a pattern without wildcards: the path or beneath it). */
export function matchesGlob(path: string, pattern: string): boolean {
  return globMatcher(pattern)(path);
}

/** `matchesGlob` for one pattern, compiled once. */
export function globMatcher(pattern: string): (path: string) => boolean {
  const clean = trimSlashes(pattern);
  if (!isGlob(clean)) {
    return (path) => {
      const file = trimSlashes(path);
      return file === clean || file.startsWith(`${clean}/`);
    };
  }
  const regex = globToRegExp(clean);
  return (path) => regex.test(trimSlashes(path));
}

/** Whether `path` is the folder or file a pattern names, or lies under one it matches. */
export function isUnder(path: string, pattern: string): boolean {
  const regex = globToRegExp(pattern);
  const parts = trimSlashes(path).split("/");
  for (let length = parts.length; length > 0; length--) {
    if (regex.test(parts.slice(0, length).join("/"))) return true;
  }
  return false;
}

function trimSlashes(path: string): string {
  return path.replace(/^\.\//, "").replace(/^\/+|\/+$/g, "");
}
