// The dedup key: the same kernel up to comments and blank space is the same candidate;
// anything that changes what compiles is not.
import { describe, expect, it } from "vitest";
import { fingerprint, normalizeSource } from "../../../runner/src/evolve/fingerprint.js";

const kernel = `#include "evokernel.h"
// a row softmax
__global__ void softmax(const float* x, float* y, int n) {
  /* one block
     a row */
  unsigned int i = threadIdx.x;   // lane
  y[i] = x[i] * 2.0f;
}
`;

describe("fingerprint", () => {
  it("ignores comments and blank space in C/CUDA", () => {
    const reformatted = `#include "evokernel.h"
__global__   void softmax(const float *x,float *y,int n)
{
    unsigned int i = threadIdx.x;
    y[i] = x[i]*2.0f;   /* doubled */
}`;
    expect(fingerprint(reformatted, {}, "c")).toBe(fingerprint(kernel, {}, "c"));
  });

  it("keeps word boundaries, string literals and every token", () => {
    expect(normalizeSource("unsigned  int\n x", "c")).toBe("unsigned int x");
    expect(normalizeSource('const char* s = "a // b"; // c', "c")).toBe('const char*s="a // b";');
    expect(fingerprint(kernel.replace("2.0f", "3.0f"), {}, "c")).not.toBe(
      fingerprint(kernel, {}, "c"),
    );
  });

  it("tells apart the same source under different defines", () => {
    const a = fingerprint(kernel, { BLOCK: "128" }, "c");
    expect(a).not.toBe(fingerprint(kernel, { BLOCK: "256" }, "c"));
    expect(a).not.toBe(fingerprint(kernel, {}, "c"));
    expect(fingerprint(kernel, { A: "1", B: "2" }, "c")).toBe(
      fingerprint(kernel, { B: "2", A: "1" }, "c"),
    );
  });

  it("keeps Python's indentation, drops its comments and blank lines", () => {
    const a = "def forward(x):\n    # scale\n    y = x * 2  # twice\n\n    return y\n";
    const b = "def forward(x):\n    y = x * 2\n    return y";
    const c = "def forward(x):\n    y = x * 2\nreturn y";
    expect(fingerprint(a, {}, "python")).toBe(fingerprint(b, {}, "python"));
    expect(fingerprint(a, {}, "python")).not.toBe(fingerprint(c, {}, "python"));
    expect(normalizeSource("s = '# not a comment'  # one", "python")).toBe("s = '# not a comment'");
  });
});
