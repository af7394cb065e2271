// Which environment variables reach which process, by name. An allowlist, never a denylist:
// a denylist of "secret-looking" names let ANTHROPIC_API_KEY, OPENAI_API_KEY and DATABASE_URL
// through to a pull request's code. Two audiences:
// - the runner (trusted Node code the local backend starts for a job): the machine's
//   basics, the runner's own settings and, only for a job that runs the LLM proposer, the
//   LLM's key (its proposer calls the API);
// - a harness child (where a candidate's code runs): the machine's basics and the
//   harness's settings, never a key.

/** The machine's basics: where programs, libraries, CUDA and caches are. */
export const MACHINE_ENV = [
  "PATH",
  "HOME",
  "LANG",
  "LC_ALL",
  "TMPDIR",
  "CUDA_VISIBLE_DEVICES",
  "CUDA_HOME",
  "CUDA_PATH",
  "LD_LIBRARY_PATH",
  "NVIDIA_VISIBLE_DEVICES",
  "TORCHINDUCTOR_CACHE_DIR",
  "TRITON_CACHE_DIR",
] as const;

/** The harness's own settings (a prefix would let EVOKERNEL_PRIVATE_KEY and the like by). */
export const HARNESS_SETTINGS = [
  "EVOKERNEL_BUILD_JOBS",
  "EVOKERNEL_BUILD_PREPARE",
  "EVOKERNEL_BUILD_SLOTS",
  "EVOKERNEL_CCWRAP_CACHE",
  "EVOKERNEL_CCWRAP_LOG",
  "EVOKERNEL_CCWRAP_SALT",
  "EVOKERNEL_FASTPATH",
  "EVOKERNEL_GPU_LOCKS",
  "EVOKERNEL_GPU_MEM_FRACTION",
  "EVOKERNEL_GPU_SHARE",
  "EVOKERNEL_MEM_LIMIT_MB",
  "EVOKERNEL_PROBE_MEM_MB",
  // the sandbox's process-count and file-size caps (runner/sandbox/enter.sh)
  "EVOKERNEL_SANDBOX_FSIZE",
  "EVOKERNEL_SANDBOX_NPROC",
  "EVOKERNEL_WORKER",
] as const;

/** What the runner reads besides the harness's settings. */
export const RUNNER_SETTINGS = [
  "XDG_CACHE_HOME",
  "TZ",
  "EVOKERNEL_CACHE",
  "EVOKERNEL_PYTHON",
  "EVOKERNEL_ROOT",
  "EVOKERNEL_SANDBOX",
  "EVOKERNEL_SANDBOX_UID",
  "EVOKERNEL_SHARED_DATA",
  // the LLM proposer's; the runner never hands them to a harness child
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_BASE_URL",
  // the Unix socket of the job's egress proxy (src/app/dispatch/egress-proxy.ts), set by the
  // local backend for an LLM job whose runner has no network of its own
  "EVOKERNEL_LLM_PROXY_SOCKET",
] as const;

/** The tests' stand-in harnesses take settings named so (never a secret's name). */
export function isStandInSetting(name: string): boolean {
  return name.startsWith("EVOKERNEL_FAKE_") && !/TOKEN|SECRET|KEY|PASSWORD/i.test(name);
}

type Env = Readonly<Record<string, string | undefined>>;

/** The names given, with their values in `parent`, plus the stand-ins' settings. */
export function pickEnv(parent: Env, names: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of Object.entries(parent)) {
    if (value !== undefined && isStandInSetting(name)) env[name] = value;
  }
  return env;
}

/** The LLM proposer's settings: only a job that runs it gets them. */
export const LLM_SETTINGS = [
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_BASE_URL",
  "EVOKERNEL_LLM_PROXY_SOCKET",
] as const;

/**
 * The environment the local backend gives the runner it starts for a job: the LLM's key only
 * where the job runs the LLM proposer (`llm`, from jobUsesLlm in shared/job.ts); a review,
 * bench or verify job, or a search by the tuner, never holds it.
 */
export function runnerEnv(parent: Env, options: { llm: boolean }): Record<string, string> {
  const names = [...MACHINE_ENV, ...HARNESS_SETTINGS, ...RUNNER_SETTINGS];
  return pickEnv(
    parent,
    options.llm
      ? names
      : names.filter((name) => !(LLM_SETTINGS as readonly string[]).includes(name)),
  );
}
