// Reading the harness's records: parsed against the contract's schemas
// (src/shared/contract/records.ts), never cast; what does not parse is a HarnessError.
import { z } from "zod";
import { HarnessError } from "../errors.js";

/** Parses harness output against a schema; anything else is a HarnessError with the issues. */
export function parseRecord<T extends z.ZodType>(
  schema: T,
  data: unknown,
  what: string,
): z.infer<T> {
  const parsed = schema.safeParse(data);
  if (parsed.success) return parsed.data;
  throw new HarnessError(
    `the harness wrote a ${what} record we cannot read:\n${z.prettifyError(parsed.error)}`,
    {
      issues: parsed.error.issues,
    },
  );
}

/** Parses the text of a record file (JSON first, then the schema). */
export function parseRecordText<T extends z.ZodType>(
  schema: T,
  text: string,
  what: string,
): z.infer<T> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new HarnessError(`the harness wrote a ${what} record that is not JSON`, { cause: error });
  }
  return parseRecord(schema, data, what);
}
