// A cron line in UTC as GitHub's `schedule:` trigger reads it, parsed by croner: five fields
// (minute hour day-of-month month day-of-week) of numbers, `*`, ranges, steps and lists,
// month and weekday names (`JAN`, `MON-FRI`), weekday 7 as Sunday, the nicknames `@yearly`,
// `@monthly`, `@weekly`, `@daily`, `@hourly`; when both day fields are restricted a day
// matching either runs (cron's own rule, croner's default). What GitHub's dialect does not
// have is refused here, though croner reads it: a seconds field, `L`, `W`, `#` and `?`.
// Pure: the scheduler asks it which minute was last due.
import { Cron as Croner } from "croner";

export interface Cron {
  /** The line as written (a nickname or five fields). */
  readonly line: string;
  readonly croner: Croner;
}

export type CronParse = { ok: true; cron: Cron } | { ok: false; error: string };

const NICKNAMES = new Set(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly"]);
const FIELD_NAMES = ["minute", "hour", "day of month", "month", "day of week"];

export function parseCron(line: string): CronParse {
  const text = line.trim();
  if (text.startsWith("@")) {
    if (!NICKNAMES.has(text.toLowerCase()))
      return { ok: false, error: `\`${text}\` is not one of ${[...NICKNAMES].join(", ")}` };
  } else {
    const fields = text.split(/\s+/);
    if (fields.length !== 5) return { ok: false, error: `${fields.length} fields, not 5` };
    for (const [index, field] of fields.entries()) {
      // Month and weekday names are three letters; any other letter or mark is croner's own.
      const extension = /[A-Za-z#?]/.exec(field.replace(/[A-Za-z]{3}/g, ""));
      if (extension)
        return {
          ok: false,
          error: `${FIELD_NAMES[index] ?? "field"}: \`${extension[0]}\` is not in GitHub's cron (numbers, names, *, -, /, ,)`,
        };
    }
  }
  try {
    return {
      ok: true,
      cron: { line: text, croner: new Croner(text, { timezone: "UTC", paused: true }) },
    };
  } catch (error) {
    const message = (error as Error).message.replace(/^CronPattern: /, "");
    return { ok: false, error: message };
  }
}

const MINUTE = 60_000;

/** Whether the cron runs in the UTC minute that holds `at`. */
export function cronMatches(cron: Cron, at: Date): boolean {
  return cron.croner.match(new Date(Math.floor(at.getTime() / MINUTE) * MINUTE));
}

/**
 * The latest minute at or before `now` when the cron ran, looking back at most
 * `lookbackMs`; undefined when none falls in that span. A restarted app finds the window it
 * missed this way, and no window older than the look-back (a week-long outage does not run
 * a stale night's job).
 */
export function latestRun(cron: Cron, now: Date, lookbackMs: number): Date | undefined {
  // previousRuns looks strictly before its reference: one second into this minute.
  const reference = new Date(Math.floor(now.getTime() / MINUTE) * MINUTE + 1_000);
  const [last] = cron.croner.previousRuns(1, reference);
  if (last === undefined || last.getTime() < now.getTime() - lookbackMs) return undefined;
  return last;
}
