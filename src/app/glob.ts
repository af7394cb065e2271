// Path globs as `.github/evokernel.yml` writes them: `*` and `?` within one path segment,
// `**` across segments, everything else literal. A pattern without a wildcard also matches
// every path beneath it (a folder).

/** A predicate for one pattern, compiled once. */
export function globMatcher(pattern: string): (path: string) => boolean {
  const clean = pattern.replace(/^\.?\/+/, "").replace(/\/+$/, "");
  if (!/[*?]/.test(clean)) return (path) => path === clean || path.startsWith(`${clean}/`);
  const regex = new RegExp(`^${globSource(clean.split("/"))}$`);
  return (path) => regex.test(path);
}

function globSource(segments: readonly string[]): string {
  let source = "";
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1;
    if (segment === "**") {
      // `a/**/b` also matches `a/b`; a trailing `**` matches anything below.
      source += last ? ".*" : "(?:[^/]+/)*";
      return;
    }
    source += segmentSource(segment) + (last ? "" : "/");
  });
  return source;
}

function segmentSource(segment: string): string {
  let source = "";
  for (const char of segment) {
    if (char === "*") source += "[^/]*";
    else if (char === "?") source += "[^/]";
    else source += /[\\^$.|+()[\]{}]/.test(char) ? `\\${char}` : char;
  }
  return source;
}
