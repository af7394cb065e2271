// A harness run that ends badly says what failed: the stage, the exception or the signal, and
// its output's tail, capped and with the runner's secrets taken out (issue 32: every review on
// the H200 said only "the harness failed (exit 4)").
import { describe, expect, it } from "vitest";
import {
  causeIn,
  failureOf,
  LOG_TAIL_CHARS,
  logTail,
  signalName,
  type HarnessOutcome,
} from "../../../runner/src/harness/outcome.js";
import { REDACTED, redactSecrets, secretValues } from "../../../src/shared/redact.js";

const TRACEBACK = [
  "Traceback (most recent call last):",
  '  File "/h/evokernel_harness/commands/__init__.py", line 50, in run',
  "    record = COMMANDS[args.command](args)",
  "PermissionError: [Errno 13] Permission denied: '/tmp/evokernel-job-x/head'",
].join("\n");

function ended(over: Partial<HarnessOutcome>): HarnessOutcome {
  return {
    exitCode: 0,
    signal: null,
    timedOut: false,
    memKilled: false,
    seconds: 1,
    log: "",
    ...over,
  };
}

describe("failureOf", () => {
  it("an exit: the stage, the exit code and the exception on the first line, the tail below", () => {
    const failure = failureOf(ended({ exitCode: 4, log: TRACEBACK }), 60_000, "static check");
    expect(failure?.status).toBe("error");
    expect(failure?.message).toBe(
      "static check: the harness failed (exit 4): PermissionError: [Errno 13] Permission denied: '/tmp/evokernel-job-x/head'",
    );
    expect(failure?.log).toContain("Traceback (most recent call last):");
  });

  it("an exit without a traceback: its last line; with no output, says so", () => {
    const said = failureOf(
      ended({ exitCode: 97, log: "loading\nevokernel sandbox: cannot bind /x (ro)\n" }),
      1,
      "verification",
    );
    expect(said?.message).toBe(
      "verification: the harness failed (exit 97): evokernel sandbox: cannot bind /x (ro)",
    );
    const quiet = failureOf(ended({ exitCode: 1, log: "" }), 1, "timing");
    expect(quiet?.message).toBe("timing: the harness failed (exit 1): it printed nothing");
    const other = failureOf(ended({ exitCode: 1, log: "something odd\n" }), 1, "timing");
    expect(other?.message).toBe(
      "timing: the harness failed (exit 1): its last output: something odd",
    );
  });

  it("a signal, a timeout, memory, a vanished process: each named, with the stage", () => {
    expect(failureOf(ended({ exitCode: null, signal: "9" }), 1, "build")?.message).toBe(
      "build: the harness was killed by SIGKILL (signal 9, often the machine's out-of-memory killer)",
    );
    expect(
      failureOf(ended({ exitCode: null, signal: "SIGSEGV" }), 1, "verification")?.message,
    ).toBe("verification: the harness was killed by SIGSEGV (signal 11)");
    expect(
      failureOf(ended({ timedOut: true, log: TRACEBACK }), 600_000, "timing")?.message,
    ).toMatch(/^timing: timed out after 600 s: PermissionError/);
    expect(failureOf(ended({ memKilled: true }), 1, "verification")?.message).toBe(
      "verification: killed: over the memory limit",
    );
    expect(failureOf(ended({ exitCode: null, signal: "SIGXFSZ" }), 1, "build")?.message).toBe(
      "build: the harness was killed by SIGXFSZ (signal 25, a file past the sandbox's file-size limit, EVOKERNEL_SANDBOX_FSIZE)",
    );
    expect(failureOf(ended({ exitCode: null }), 1, "verification")?.status).toBe("crash");
    expect(failureOf(ended({ exitCode: 0 }), 1, "verification")).toBeNull();
  });

  it("the sandbox's file-size and process-count limits: exit 3, reason resources, the limit named", () => {
    for (const line of [
      "FileSizeLimitError: a write went past the file-size limit of 1048576 bytes (1 MiB) (EVOKERNEL_SANDBOX_FSIZE; …)",
      "ProcessLimitError: a new process or thread was refused (…): the process-count limit of 512 (EVOKERNEL_SANDBOX_NPROC; …)",
    ]) {
      const failure = failureOf(ended({ exitCode: 3, log: `${line}\n` }), 1, "verification");
      expect(failure).toMatchObject({ status: "error", reason: "resources" });
      expect(failure?.message).toBe(`verification: ${line.slice(line.indexOf(":") + 2)}`);
    }
  });

  it("keeps the tail, capped, whatever the output's size", () => {
    const long = `${"x".repeat(100_000)}\n${TRACEBACK}`;
    const failure = failureOf(ended({ exitCode: 4, log: long }), 1, "static check");
    expect(failure?.log.length).toBeLessThanOrEqual(LOG_TAIL_CHARS);
    expect(failure?.log).toContain("PermissionError");
    expect(
      logTail(Array.from({ length: 500 }, (_, i) => `line ${i}`).join("\n")).split("\n"),
    ).toHaveLength(40);
  });

  it("finds the exception a traceback ends with, not a line above it", () => {
    expect(causeIn(`${TRACEBACK}\n`)).toMatch(/^PermissionError/);
    expect(
      causeIn("torch.OutOfMemoryError: CUDA out of memory\nthe harness ran out of GPU memory"),
    ).toBe("torch.OutOfMemoryError: CUDA out of memory");
    expect(causeIn("all fine")).toBeNull();
    expect(signalName("64")).toMatch(/SIG|signal 64/);
  });
});

describe("redactSecrets", () => {
  it("takes out the values of secret-named variables and credential shapes", () => {
    const env = { GITHUB_TOKEN: "value-of-the-token", PATH: "/usr/bin:/bin", SHORT_KEY: "abc" };
    const secrets = secretValues(env);
    expect(secrets).toEqual(["value-of-the-token"]);
    const text = [
      "token value-of-the-token here",
      "path /usr/bin:/bin stays",
      "abc stays (too short to be told from a word)",
      "ghs_0123456789abcdefghijABCDEFGHIJ",
      "sk-ant-api03-abcdefghijklmnop",
      "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
    ].join("\n");
    const out = redactSecrets(text, secrets);
    expect(out).not.toContain("value-of-the-token");
    expect(out).not.toContain("ghs_0123");
    expect(out).not.toContain("sk-ant-api03");
    expect(out).not.toContain("MIIE");
    expect(out).toContain("/usr/bin:/bin stays");
    expect(out).toContain("abc stays");
    expect(out.split(REDACTED)).toHaveLength(5);
  });
});
