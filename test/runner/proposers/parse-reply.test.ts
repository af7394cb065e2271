// Reply parsing: every unusable reply becomes a reason, never an exception.
import { describe, expect, it } from "vitest";
import { parseReply } from "../../../runner/src/proposers/parse-reply.js";

const parent = [
  "#include <evokernel.h>",
  "#define BLOCK 256",
  "__global__ void k(float* y) {",
  "    y[threadIdx.x] = 0.f;",
  "}",
  "",
].join("\n");

const ok = (text: string) => parseReply({ text, stopReason: "end_turn" }, parent);

describe("parseReply", () => {
  it("takes name, thought and the whole kernel from one fenced block", () => {
    const result = ok(
      "**Name:** `Vec4 Loads!`\n**Thought:** Load four floats at a time,\nso fewer transactions.\n\n```cuda\nint x;\n```\n",
    );
    expect(result).toEqual({
      ok: true,
      name: "vec4-loads",
      thought: "Load four floats at a time, so fewer transactions.",
      source: "int x;\n",
      mode: "full",
      edits: 0,
    });
  });

  it("takes the longest of several fences, and a fence of four backticks", () => {
    const result = ok(
      "Name: a\n```\nshort\n```\nThen:\n````cpp\nlonger one\nwith ``` inside\n````\n",
    );
    expect(result).toMatchObject({ ok: true, source: "longer one\nwith ``` inside\n" });
  });

  it("falls back to the prose before the code when there is no Thought label", () => {
    const result = ok("Name: x\nI fused the two passes.\n```cuda\nint y;\n```");
    expect(result).toMatchObject({ ok: true, thought: "I fused the two passes." });
  });

  it("names an unnamed kernel llm-kernel", () => {
    expect(ok("```cuda\nint z;\n```")).toMatchObject({ ok: true, name: "llm-kernel" });
  });

  it("applies SEARCH/REPLACE edits in order, fenced or not", () => {
    const text = [
      "Name: e",
      "Thought: t",
      "```",
      "<<<<<<< SEARCH",
      "#define BLOCK 256",
      "=======",
      "#define BLOCK 512",
      ">>>>>>> REPLACE",
      "```",
      "<<<<<<< SEARCH",
      "    y[threadIdx.x] = 0.f;",
      "=======",
      "    y[threadIdx.x] = 1.f;",
      "    y[threadIdx.x + BLOCK] = 1.f;",
      ">>>>>>> REPLACE",
    ].join("\n");
    const result = ok(text);
    expect(result).toMatchObject({ ok: true, mode: "edits", edits: 2 });
    if (result.ok) {
      expect(result.source).toBe(
        parent
          .replace("BLOCK 256", "BLOCK 512")
          .replace(
            "    y[threadIdx.x] = 0.f;",
            "    y[threadIdx.x] = 1.f;\n    y[threadIdx.x + BLOCK] = 1.f;",
          ),
      );
    }
  });

  it("matches a SEARCH text whose indentation differs, line by line", () => {
    const text =
      "<<<<<<< SEARCH\ny[threadIdx.x] = 0.f;\n=======\n  y[threadIdx.x] = 2.f;\n>>>>>>> REPLACE";
    const result = ok(text);
    expect(result).toMatchObject({ ok: true });
    if (result.ok) expect(result.source).toContain("\n  y[threadIdx.x] = 2.f;\n}");
  });

  it("deletes with an empty REPLACE", () => {
    const result = ok("<<<<<<< SEARCH\n#define BLOCK 256\n=======\n>>>>>>> REPLACE");
    expect(result).toMatchObject({ ok: true });
    if (result.ok) expect(result.source).not.toContain("BLOCK 256");
  });

  it("refuses an edit whose SEARCH text is not in the parent", () => {
    const result = ok("<<<<<<< SEARCH\n#define WARPS 4\n=======\n#define WARPS 8\n>>>>>>> REPLACE");
    expect(result).toEqual({
      ok: false,
      reason: "edit-not-found",
      message:
        'edit 1 of 1: its SEARCH text is not in the parent kernel (it begins "#define WARPS 4")',
    });
  });

  it("refuses an incomplete edit block, and an empty SEARCH", () => {
    expect(ok("<<<<<<< SEARCH\n#define BLOCK 256\n=======\n#define BLOCK 512\n")).toMatchObject({
      ok: false,
      reason: "bad-edit",
    });
    expect(ok("<<<<<<< SEARCH\n=======\nint x;\n>>>>>>> REPLACE")).toMatchObject({
      ok: false,
      reason: "bad-edit",
    });
  });

  it("refuses a truncated reply even if it holds code", () => {
    const result = parseReply({ text: "```cuda\nint x;\n```", stopReason: "max_tokens" }, parent);
    expect(result).toMatchObject({ ok: false, reason: "truncated" });
  });

  it("refuses a refusal, an empty reply and a reply with no code", () => {
    expect(parseReply({ text: "I can't", stopReason: "refusal" }, parent)).toMatchObject({
      reason: "refused",
    });
    expect(ok("  \n ")).toMatchObject({ ok: false, reason: "empty-reply" });
    expect(ok("Name: x\nThought: just an idea")).toMatchObject({ ok: false, reason: "no-code" });
    expect(ok("Name: x\n```cuda\nint x;")).toMatchObject({
      ok: false,
      reason: "no-code",
      message: "the reply opens a code fence that never closes",
    });
    expect(ok("```cuda\n```")).toMatchObject({ ok: false, reason: "no-code" });
  });

  it("never throws, whatever the text", () => {
    const samples = [
      "<<<<<<<",
      "=======\n>>>>>>> REPLACE",
      "```",
      "Name:",
      "Thought:",
      "\u0000\r\n```\r\nx\r\n```",
    ];
    for (const text of samples) {
      for (const stopReason of ["end_turn", null, "max_tokens", "pause_turn"]) {
        const parsed = parseReply({ text, stopReason }, parent);
        // only the closed fence holds code; every other sample fails with a message
        const fenced = text.includes("```\r\nx\r\n```");
        expect(parsed.ok, JSON.stringify(text)).toBe(fenced && stopReason !== "max_tokens");
        if (parsed.ok) expect(parsed.source.trim()).toBe("x");
        else expect(parsed.message.length).toBeGreaterThan(0);
      }
    }
  });
});
