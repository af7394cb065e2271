// A five-field cron line (minute hour day-of-month month day-of-week) in UTC, as GitHub's
// `schedule:` trigger reads it: numbers, `*`, ranges `a-b`, steps `*/n` and `a-b/n`, lists
// `a,b`; weekday 0 and 7 are Sunday; when both day fields are restricted, a day matching
// either runs (cron's own rule). Pure: the scheduler asks it which minute was last due.

export interface Cron {
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly days: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  readonly weekdays: ReadonlySet<number>;
  /** Day-of-month and day-of-week were both restricted: either one matching is enough. */
  readonly eitherDay: boolean;
}

const FIELDS = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12 },
  { name: "day of week", min: 0, max: 7 },
] as const;

export type CronParse = { ok: true; cron: Cron } | { ok: false; error: string };

export function parseCron(line: string): CronParse {
  const parts = line.trim().split(/\s+/);
  if (parts.length !== 5) return { ok: false, error: `${parts.length} fields, not 5` };
  const sets: Set<number>[] = [];
  for (const [index, field] of FIELDS.entries()) {
    const set = parseField(parts[index] ?? "", field.min, field.max);
    if (typeof set === "string") return { ok: false, error: `${field.name}: ${set}` };
    sets.push(set);
  }
  const [minutes, hours, days, months, weekdays] = sets as [
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
  ];
  if (weekdays.has(7)) weekdays.add(0);
  return {
    ok: true,
    cron: {
      minutes,
      hours,
      days,
      months,
      weekdays,
      eitherDay: parts[2] !== "*" && parts[4] !== "*",
    },
  };
}

function parseField(text: string, min: number, max: number): Set<number> | string {
  const values = new Set<number>();
  for (const item of text.split(",")) {
    const match = /^(\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(item);
    if (!match) return `\`${item}\` is not a number, range, step or *`;
    const step = match[4] === undefined ? 1 : Number(match[4]);
    const star = match[1] === "*";
    const from = star ? min : Number(match[2]);
    // `5/15` means from 5 to the end in steps of 15, as in Vixie cron.
    const to = star ? max : match[3] !== undefined ? Number(match[3]) : match[4] ? max : from;
    if (step < 1) return `step ${step} must be at least 1`;
    if (from < min || to > max || from > to) return `\`${item}\` is outside ${min}-${max}`;
    for (let value = from; value <= to; value += step) values.add(value);
  }
  return values;
}

/** Whether the cron runs in the UTC minute that holds `at`. */
export function cronMatches(cron: Cron, at: Date): boolean {
  if (!cron.minutes.has(at.getUTCMinutes()) || !cron.hours.has(at.getUTCHours())) return false;
  if (!cron.months.has(at.getUTCMonth() + 1)) return false;
  const day = cron.days.has(at.getUTCDate());
  const weekday = cron.weekdays.has(at.getUTCDay());
  return cron.eitherDay ? day || weekday : day && weekday;
}

const MINUTE = 60_000;

/**
 * The latest minute at or before `now` when the cron ran, looking back at most
 * `lookbackMs`; undefined when none falls in that span. A restarted app finds the window it
 * missed this way, and no window older than the look-back (a week-long outage does not run
 * a stale night's job).
 */
export function latestRun(cron: Cron, now: Date, lookbackMs: number): Date | undefined {
  const last = Math.floor(now.getTime() / MINUTE) * MINUTE;
  for (let at = last; at >= now.getTime() - lookbackMs; at -= MINUTE) {
    const date = new Date(at);
    if (cronMatches(cron, date)) return date;
  }
  return undefined;
}
