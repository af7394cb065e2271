// The shape of a path a suggestion may name, in one place for the runner (which emits
// suggestions) and the app (which writes them, and trusts nothing the runner says): relative,
// canonical, inside the repository, no hidden segment, a kernel source's suffix.
/** Where a kernel's source can be: the candidate formats (CUDA/C++ sources, or a .py extension). */
export const KERNEL_SOURCE = /\.(?:cu|cuh|cpp|cc|cxx|c|h|hpp|hh|py)$/;

const MAX_PATH = 1024;

/**
 * A path written the one canonical way, relative, inside the repository: no `..`, `.`, empty
 * or hidden segment, no backslash or control character.
 */
export function pathShapeProblem(path: string): string | undefined {
  if (path.length === 0 || path.length > MAX_PATH) return "its path is empty or too long";
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(path))
    return "its path holds a control character or a backslash";
  if (path.startsWith("/")) return "its path is absolute";
  const segments = path.split("/");
  if (segments.some((segment) => segment === ".."))
    return "its path climbs out of its folder (`..`)";
  // With no empty, `.` or `..` segment and no leading `/`, the path is already normalised.
  if (segments.some((segment) => segment === "" || segment === "."))
    return "its path is not in canonical form (an empty or `.` segment)";
  if (segments.some((segment) => segment.startsWith(".")))
    return "its path has a hidden file or folder (such as `.github` or `.git`)";
  return undefined;
}
