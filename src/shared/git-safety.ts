// How every git command of the app and the runner runs on a clone that pull requests reach:
// no hooks, no fsmonitor, no replace refs or grafts (a ref planted by one job must not change
// what the next job reads), no submodules, no system or user configuration, no prompts.
// Filters and smudge drivers need configuration to run; with none read but the repository's
// own (which only the app writes, and the sandbox keeps every job away from), a .gitattributes in a pull request names drivers that
// do not exist. (The runner's own checkout writes blobs itself: no filter runs there at all.)
export const GIT_SAFE_ARGS = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "submodule.recurse=false",
  "-c",
  "protocol.file.allow=never",
  "--no-replace-objects",
] as const;

export const GIT_SAFE_ENV = {
  GIT_NO_REPLACE_OBJECTS: "1",
  GIT_GRAFT_FILE: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
} as const;
