import { describe, expect, it } from "vitest";
import { HarnessError } from "../../../runner/src/errors.js";
import { parseRecord, parseRecordText } from "../../../runner/src/harness/records.js";
import {
  benchRecordSchema,
  buildRecordSchema,
  deviceRecordSchema,
  staticRecordSchema,
  taskInfoSchema,
  verifyRecordSchema,
} from "../../../src/shared/contract/records.js";
import {
  benchRecord,
  buildRecord,
  deviceRecord,
  rejectedVerifyRecord,
  staticRecord,
  taskInfo,
  verifyRecord,
} from "../../helpers/records.js";

describe("good records parse", () => {
  it.each([
    ["task", taskInfoSchema, taskInfo()],
    ["static", staticRecordSchema, staticRecord()],
    ["build", buildRecordSchema, buildRecord()],
    ["verify (passed)", verifyRecordSchema, verifyRecord()],
    ["verify (rejected)", verifyRecordSchema, rejectedVerifyRecord()],
    ["bench", benchRecordSchema, benchRecord()],
    ["device", deviceRecordSchema, deviceRecord()],
  ] as const)("%s", (_name, schema, record) => {
    expect(parseRecord(schema, JSON.parse(JSON.stringify(record)), "test")).toMatchObject(record);
  });

  it("ignores fields a newer harness adds", () => {
    const parsed = parseRecord(verifyRecordSchema, { ...verifyRecord(), trials: 2 }, "verify");
    expect(parsed).not.toHaveProperty("trials");
  });

  it("reads a static finding without severity as a rejection", () => {
    const finding = {
      code: "torch-fallback",
      hack: 12,
      line: 3,
      text: "try:",
      message: "try/except",
    };
    const data = { ...staticRecord({ ok: false }), findings: [finding] };
    const parsed = parseRecord(staticRecordSchema, data, "static");
    expect(parsed.findings[0]?.severity).toBe("reject");
  });
});

describe("bad records become HarnessError with the issues", () => {
  it.each([
    ["wrong schema version", verifyRecordSchema, { ...verifyRecord(), schema: 2 }],
    ["wrong kind", verifyRecordSchema, { ...verifyRecord(), kind: "bench" }],
    ["unknown status", verifyRecordSchema, { ...verifyRecord(), status: "probably-fine" }],
    ["ok without passed", verifyRecordSchema, { ...verifyRecord(), status: "rejected" }],
    ["passed without ok", verifyRecordSchema, { ...verifyRecord(), ok: false }],
    ["missing device", verifyRecordSchema, { ...verifyRecord(), device: undefined }],
    ["negative time", benchRecordSchema, benchRecord({ seconds: -1 })],
    ["string as number", buildRecordSchema, { ...buildRecord(), seconds: "1.2" }],
    ["unknown build format", buildRecordSchema, { ...buildRecord(), format: "cuda" }],
    ["not an object", deviceRecordSchema, [1, 2, 3]],
  ] as const)("%s", (_name, schema, data) => {
    let caught: unknown;
    try {
      parseRecord(schema, data, "test");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(HarnessError);
    expect((caught as HarnessError).issues.length).toBeGreaterThan(0);
  });

  it("says when the text is not JSON", () => {
    expect(() => parseRecordText(verifyRecordSchema, '{"schema": 1,', "verify")).toThrow(
      /not JSON/,
    );
  });
});
