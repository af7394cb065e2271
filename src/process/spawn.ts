// The one module that starts processes, for the app and the runner alike (eslint lets only
// this file import execa or node:child_process). Every start says which environment the
// child gets: exactly the variables given (`extendEnv: false`: the allowlists of
// src/shared/environment.ts for whatever handles a pull request's code), or ours with some
// set on top (`extendEnv: true`: git on our own clone). The harness's children go through
// runner/src/harness/exec.ts, which adds the sandbox, process groups and output tails.
import { execa, type Options, type ResultPromise } from "execa";

/** What the child's environment is, said at every start: no default to forget. */
export type ChildEnvironment =
  | { readonly env: Readonly<Record<string, string>>; readonly extendEnv: false }
  | { readonly env?: Readonly<Record<string, string>>; readonly extendEnv: true };

/** The options of execa that evokernel uses; the environment's choice is required. */
export type SpawnOptions = Pick<
  Options,
  | "cwd"
  | "input"
  | "stdin"
  | "stdout"
  | "stderr"
  | "all"
  | "buffer"
  | "encoding"
  | "stripFinalNewline"
  | "reject"
  | "detached"
  | "timeout"
  | "cancelSignal"
> &
  ChildEnvironment;

/** Starts `file args`; the promise is execa's, typed by the options given. */
export function spawnProcess<const O extends SpawnOptions>(
  file: string,
  args: readonly string[],
  options: O,
): ResultPromise<{} & O> {
  return execa(file, args, options);
}
