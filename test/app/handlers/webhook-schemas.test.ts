// Every webhook field the handlers read, read as GitHub's schema types it: each zod schema
// in src/app/handlers/payloads.ts (as JSON Schema) against the webhook schemas of GitHub's
// API description (@octokit/openapi, x-webhooks) for each event and action the app is
// subscribed to. A field we require must be one GitHub promises (required at its level, in
// every variant), one we read as non-null must never be null there, and its type must be
// GitHub's. A payload parsed with a field GitHub may leave out would be dropped as
// unreadable: the requested_action.identifier that the Apply handler once required.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import {
  checkRunEventSchema,
  checkSuiteEventSchema,
  issueCommentEventSchema,
  pullRequestEventSchema,
  workflowRunEventSchema,
} from "../../../src/app/handlers/payloads.js";
import { PULL_REQUEST_ACTIONS } from "../../../src/app/handlers/pull-request.js";

type Json = Record<string, unknown>;

const require = createRequire(import.meta.url);
const doc = JSON.parse(
  readFileSync(require.resolve("@octokit/openapi/generated/api.github.com.json"), "utf8"),
) as Json;

/**
 * Fields GitHub's schema leaves optional that the app requires, and why that is right.
 * `installation`: the schemas serve repository and organisation webhooks too; an App's
 * deliveries always carry it, and without it there is no installation to act as.
 */
const REQUIRED_BY_DESIGN = new Set(["installation"]);

function resolve(node: unknown): Json {
  let current = node as Json;
  for (let depth = 0; depth < 20 && typeof current?.$ref === "string"; depth++)
    current = current.$ref
      .slice(2)
      .split("/")
      .reduce<Json>((value, key) => value[key] as Json, doc);
  return current;
}

/** GitHub's schema's variants (allOf merged; anyOf/oneOf each a variant). */
function variants(node: unknown): Json[] {
  const schema = resolve(node);
  const alternatives = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (alternatives !== undefined) return alternatives.flatMap(variants);
  const parts = (schema.allOf as unknown[] | undefined)?.map(resolve) ?? [];
  if (parts.length === 0) return [schema];
  return [
    parts.reduce<Json>(
      (merged, part) => ({
        ...merged,
        ...part,
        properties: { ...(merged.properties as Json), ...(part.properties as Json) },
        required: [
          ...((merged.required as string[] | undefined) ?? []),
          ...((part.required as string[] | undefined) ?? []),
        ],
      }),
      {},
    ),
  ];
}

function typesOf(schema: Json): Set<string> {
  const types = new Set<string>();
  const add = (type: unknown) => {
    for (const name of [type].flat())
      if (typeof name === "string") types.add(name === "integer" ? "number" : name);
  };
  add(schema.type);
  if (schema.nullable === true) types.add("null");
  if (Array.isArray(schema.enum))
    for (const value of schema.enum) types.add(value === null ? "null" : typeof value);
  for (const list of ["anyOf", "oneOf"])
    for (const part of (schema[list] as Json[] | undefined) ?? [])
      for (const type of typesOf(part)) types.add(type);
  if (types.size === 0 && schema.properties !== undefined) types.add("object");
  return types;
}

/** Where `ours` (zod as JSON Schema) asks more of a payload than GitHub's `theirs` promises. */
function compare(ours: Json, theirs: unknown, path: string, faults: string[]): void {
  const options = variants(theirs);
  const ourTypes = typesOf(ours);
  const theirTypes = new Set(options.flatMap((option) => [...typesOf(option)]));
  if (theirTypes.has("null") && !ourTypes.has("null")) faults.push(`${path}: GitHub may send null`);
  const shared = [...ourTypes].filter((type) => type !== "null" && theirTypes.has(type));
  if (theirTypes.size > 0 && ourTypes.size > 0 && shared.length === 0)
    faults.push(
      `${path}: ours is ${[...ourTypes].join("|")}, GitHub's ${[...theirTypes].join("|")}`,
    );
  // A nullable object of ours is anyOf [object, null]: its object variant is read too.
  const ourVariants = ((ours.anyOf ?? ours.oneOf) as Json[] | undefined) ?? [ours];
  for (const variant of ourVariants) compareProperties(variant, options, path, faults);
}

function compareProperties(ours: Json, options: Json[], path: string, faults: string[]): void {
  const properties = (ours.properties as Record<string, Json> | undefined) ?? {};
  const required = new Set((ours.required as string[] | undefined) ?? []);
  for (const [key, schema] of Object.entries(properties)) {
    const where = `${path}.${key}`;
    const inOptions = options.filter(
      (option) => key in ((option.properties as Json | undefined) ?? {}),
    );
    if (inOptions.length === 0) {
      if (required.has(key)) faults.push(`${where}: not in GitHub's schema`);
      continue;
    }
    const promised = options.every((option) =>
      ((option.required as string[] | undefined) ?? []).includes(key),
    );
    if (required.has(key) && !promised && !REQUIRED_BY_DESIGN.has(key))
      faults.push(`${where}: required here, optional in GitHub's schema`);
    for (const option of inOptions)
      compare(schema, (option.properties as Json)[key], where, faults);
  }
}

const EVENTS: [string, z.ZodType, string[]][] = [
  [
    "pull_request",
    pullRequestEventSchema,
    PULL_REQUEST_ACTIONS.map((action) => `pull-request-${action.replace(/_/g, "-")}`),
  ],
  ["issue_comment", issueCommentEventSchema, ["issue-comment-created"]],
  ["workflow_run", workflowRunEventSchema, ["workflow-run-completed"]],
  ["check_run", checkRunEventSchema, ["check-run-rerequested", "check-run-requested-action"]],
  ["check_suite", checkSuiteEventSchema, ["check-suite-rerequested"]],
];

describe.each(EVENTS)("the %s payload schema", (_event, schema, webhooks) => {
  it.each(webhooks)("asks no more than GitHub's %s webhook promises", (webhook) => {
    const entry = (doc["x-webhooks"] as Json)[webhook] as Json | undefined;
    expect(entry, `${webhook} in the description`).toBeDefined();
    const body = (((entry?.post as Json).requestBody as Json).content as Json)[
      "application/json"
    ] as Json;
    const faults: string[] = [];
    compare(z.toJSONSchema(schema, { io: "input" }), body.schema, "payload", faults);
    expect(faults).toEqual([]);
  });
});
