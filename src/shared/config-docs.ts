// What `.github/evokernel.yml` accepts, written out of its zod schema and never by hand: the
// JSON Schema (schema/evokernel-config.schema.json, for editors) and the README's option
// table. scripts/write-config-docs.mjs writes both; a test fails when either is stale.
import { z } from "zod";
import { configSchema } from "./config.js";

export const CONFIG_SCHEMA_ID =
  "https://raw.githubusercontent.com/evokernel/evokernel/main/schema/evokernel-config.schema.json";

export const TABLE_START = "<!-- config-table:start -->";
export const TABLE_END = "<!-- config-table:end -->";

type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  const?: string | number | boolean;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  default?: unknown;
  description?: string;
  pattern?: string;
  minimum?: number;
};

/** The JSON Schema of the file as a user writes it (defaults may be left out). */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: "input" });
  return {
    ...schema,
    $id: CONFIG_SCHEMA_ID,
    title: "evokernel configuration (.github/evokernel.yml)",
  };
}

/** One markdown row per option, nested options as `budget.minutes`. */
export function renderConfigTable(): string {
  const root = configJsonSchema() as JsonSchema;
  const rows = rowsOf(root, "");
  return [
    "| option | value | default | |",
    "|---|---|---|---|",
    ...rows.map((row) => `| \`${row.key}\` | ${row.type} | ${row.default} | ${row.description} |`),
  ].join("\n");
}

type Row = { key: string; type: string; default: string; description: string };

function rowsOf(schema: JsonSchema, prefix: string): Row[] {
  const rows: Row[] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const key = prefix === "" ? name : `${prefix}.${name}`;
    const nested = objectOf(property);
    rows.push({
      key,
      type: nested === null ? typeOf(property) : "mapping",
      default: defaultOf(property, nested),
      description: (property.description ?? "").replace(/\|/g, "\\|"),
    });
    if (nested !== null) rows.push(...rowsOf(nested, key));
    // a list of mappings (`thresholds`): each item's keys, as `key[].name`
    const items = property.type === "array" ? objectOf(property.items ?? {}) : null;
    if (items !== null) rows.push(...rowsOf(items, `${key}[]`));
  }
  return rows;
}

function objectOf(schema: JsonSchema): JsonSchema | null {
  if (schema.properties !== undefined) return schema;
  return schema.anyOf?.find((option) => option.properties !== undefined) ?? null;
}

function typeOf(schema: JsonSchema): string {
  if (schema.enum !== undefined)
    return schema.enum.map((value) => `\`${String(value)}\``).join(" \\| ");
  if (schema.const !== undefined) return `\`${String(schema.const)}\``;
  if (schema.anyOf !== undefined) return schema.anyOf.map(typeOf).join(" or ");
  if (schema.type === "array") {
    const items = schema.items ?? {};
    return objectOf(items) === null ? `list of ${plural(typeOf(items))}` : "list of mappings";
  }
  if (schema.type === "integer") return "whole number";
  if (schema.type === "string" && schema.pattern !== undefined) return "cron (5 fields)";
  return typeof schema.type === "string" ? schema.type : "value";
}

function plural(type: string): string {
  return type === "string" ? "strings" : type;
}

function defaultOf(schema: JsonSchema, nested: JsonSchema | null): string {
  if (schema.default === undefined) return nested === null ? "—" : "";
  if (nested !== null && typeof schema.default === "object") return "";
  const value =
    typeof schema.default === "string" ? schema.default : JSON.stringify(schema.default);
  return `\`${value}\``;
}

/** The README with its marked block holding `table`; the README unchanged when unmarked. */
export function replaceConfigBlock(readme: string, table: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start === -1 || end === -1 || end < start) return readme;
  return `${readme.slice(0, start + TABLE_START.length)}\n${table}\n${readme.slice(end)}`;
}
