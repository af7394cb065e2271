// The nightly schedule's rules, pure: the cron matcher (UTC), the latest due window within
// the grace period (what a restarted instance catches up), and the ref that claims it.
import { describe, expect, it } from "vitest";
import { cronMatches, latestRun, parseCron, type Cron } from "../../src/shared/cron.js";
import { windowRef } from "../../src/app/nightly-scheduler.js";
import { parseConfig } from "../../src/shared/config.js";

function cron(line: string): Cron {
  const parsed = parseCron(line);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.cron;
}

function errorOf(line: string): string | undefined {
  const parsed = parseCron(line);
  return parsed.ok ? undefined : parsed.error;
}

const at = (iso: string) => new Date(iso);
const HOUR = 3_600_000;

describe("cron", () => {
  it("matches minutes, hours, ranges, steps and lists in UTC", () => {
    expect(cronMatches(cron("0 3 * * *"), at("2026-11-23T03:00:00Z"))).toBe(true);
    expect(cronMatches(cron("0 3 * * *"), at("2026-11-23T03:01:00Z"))).toBe(false);
    expect(cronMatches(cron("*/15 * * * *"), at("2026-11-23T10:45:30Z"))).toBe(true);
    expect(cronMatches(cron("*/15 * * * *"), at("2026-11-23T10:46:00Z"))).toBe(false);
    expect(cronMatches(cron("30 1-5/2 * * *"), at("2026-11-23T03:30:00Z"))).toBe(true);
    expect(cronMatches(cron("30 1-5/2 * * *"), at("2026-11-23T04:30:00Z"))).toBe(false);
    expect(cronMatches(cron("0 0 1,15 * *"), at("2026-11-15T00:00:00Z"))).toBe(true);
    expect(cronMatches(cron("0 0 * 12 *"), at("2026-11-15T00:00:00Z"))).toBe(false);
  });

  it("reads weekday 0 and 7 as Sunday, and either day field when both are set", () => {
    // 2026-11-22 is a Sunday, 2026-11-23 a Monday.
    expect(cronMatches(cron("0 3 * * 7"), at("2026-11-22T03:00:00Z"))).toBe(true);
    expect(cronMatches(cron("0 3 * * 0"), at("2026-11-22T03:00:00Z"))).toBe(true);
    expect(cronMatches(cron("0 3 * * 1-5"), at("2026-11-22T03:00:00Z"))).toBe(false);
    expect(cronMatches(cron("0 3 1 * 1"), at("2026-11-23T03:00:00Z"))).toBe(true);
    expect(cronMatches(cron("0 3 1 * 1"), at("2026-11-24T03:00:00Z"))).toBe(false);
  });

  it("reads names and nicknames as GitHub's schedule does", () => {
    // 2026-11-23 is a Monday; 2026-11-22 a Sunday.
    expect(cronMatches(cron("0 3 * * MON-FRI"), at("2026-11-23T03:00:00Z"))).toBe(true);
    expect(cronMatches(cron("0 3 * * MON-FRI"), at("2026-11-22T03:00:00Z"))).toBe(false);
    expect(cronMatches(cron("0 3 1 JAN *"), at("2027-01-01T03:00:00Z"))).toBe(true);
    expect(cronMatches(cron("0 3 1 JAN *"), at("2026-12-01T03:00:00Z"))).toBe(false);
    expect(cronMatches(cron("@daily"), at("2026-11-23T00:00:00Z"))).toBe(true);
    expect(cronMatches(cron("@daily"), at("2026-11-23T03:00:00Z"))).toBe(false);
    expect(latestRun(cron("@hourly"), at("2026-11-23T05:17:00Z"), HOUR)).toEqual(
      at("2026-11-23T05:00:00Z"),
    );
  });

  it("refuses what it cannot read, or GitHub would not, saying which field", () => {
    expect(parseCron("0 3 * *")).toEqual({ ok: false, error: "4 fields, not 5" });
    // croner reads a seconds field and L, W, #, ?: GitHub's five-field cron does not.
    expect(parseCron("0 0 3 * * *")).toEqual({ ok: false, error: "6 fields, not 5" });
    expect(errorOf("0 3 L * *")).toMatch(/^day of month: `L` is not in GitHub's cron/);
    expect(errorOf("0 3 * * 1#2")).toMatch(/^day of week: `#`/);
    expect(errorOf("0 3 ? * *")).toMatch(/^day of month: `\?`/);
    expect(errorOf("@reboot")).toMatch(/is not one of @yearly/);
    expect(errorOf("61 3 * * *")).toMatch(/minute: 61/);
    expect(errorOf("0 3 * * 8")).toMatch(/dayOfWeek: 8/);
    expect(parseCron("*/0 * * * *")).toMatchObject({ ok: false });
  });
});

describe("the due window", () => {
  const nightly = cron("0 3 * * *");

  it("is the latest run at or before now", () => {
    expect(latestRun(nightly, at("2026-11-23T03:00:42Z"), 6 * HOUR)).toEqual(
      at("2026-11-23T03:00:00Z"),
    );
  });

  it("is caught up by an instance that restarts within the grace period", () => {
    expect(latestRun(nightly, at("2026-11-23T08:59:00Z"), 6 * HOUR)).toEqual(
      at("2026-11-23T03:00:00Z"),
    );
  });

  it("is skipped after the grace period: a long outage does not run a stale night", () => {
    expect(latestRun(nightly, at("2026-11-23T09:01:00Z"), 6 * HOUR)).toBeUndefined();
    expect(latestRun(nightly, at("2026-11-23T02:59:00Z"), 6 * HOUR)).toBeUndefined();
  });

  it("is claimed by a ref named for its minute", () => {
    expect(windowRef(at("2026-11-23T03:00:00Z"))).toBe("evokernel/nightly/2026-11-23T03-00Z");
  });
});

describe("the config's schedule", () => {
  it("is read by the scheduler's own parser, so a bad line fails on the PR, not at night", () => {
    expect(parseConfig({ nightly: { schedule: "0 25 * * *" } })).toEqual({
      ok: false,
      errors: [
        '`nightly.schedule`: not a cron line (Invalid value for hour: 25); write five cron fields in UTC, e.g. `schedule: "0 3 * * *"`',
      ],
    });
    const ok = parseConfig({ nightly: {} });
    expect(ok.ok && ok.config.nightly).toEqual({
      schedule: "0 3 * * *",
      tasks: "all",
      threshold: 3,
    });
  });
});
