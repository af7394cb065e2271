// Which read-only folders the sandbox binds (sandbox.ts, boundOnce): a folder already shown
// read-only through a recursive bind of one above it is not bound again (each bind costs
// every sandbox's start a mount and a remount of each mount below it), except below a
// writable folder, which must be bound read-only again; /sys is bound alone, so what is under
// it is not covered.
import { describe, expect, it } from "vitest";
import { boundOnce } from "../../../runner/src/sandbox/sandbox.js";

describe("boundOnce", () => {
  it("drops a read-only folder inside another read-only folder", () => {
    const ro = [
      "/usr",
      "/usr/bin",
      "/usr/lib/python3.12",
      "/usr/local/cuda-13.0",
      "/lib",
      "/opt/venv",
    ];
    expect(boundOnce(ro, new Set())).toEqual(["/usr", "/lib", "/opt/venv"]);
  });

  it("keeps a read-only folder inside a writable one, and what is under /sys", () => {
    const ro = ["/tmp/run/tasks", "/tmp", "/sys", "/sys/class/x", "/work/kernels"];
    const rw = new Set(["/tmp/run", "/work/cache"]);
    expect(boundOnce([...ro, "/tmp/run"], rw)).toEqual([
      "/tmp/run/tasks",
      "/tmp",
      "/sys",
      "/sys/class/x",
      "/work/kernels",
    ]);
  });

  it("does not take a name's prefix for its folder", () => {
    expect(boundOnce(["/usr", "/usrlocal", "/work/a", "/work/ab"], new Set())).toEqual([
      "/usr",
      "/usrlocal",
      "/work/a",
      "/work/ab",
    ]);
  });
});
