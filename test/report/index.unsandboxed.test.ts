// An operator who turns the sandbox off (EVOKERNEL_SANDBOX=off) is told so by every report,
// not only by the artifact: the comment and the check run's summary say the PR's code ran
// without it.
import { describe, expect, it } from "vitest";
import { renderCheckRun } from "../../src/report/check-run.js";
import { renderComment } from "../../src/report/comment.js";
import { benchReview } from "../helpers/review-examples.js";

describe("a job that ran without the sandbox", () => {
  const review = benchReview();
  const off = { ...review, device: { ...review.device, sandbox: "off" as const } };

  it("says so in the comment and the check run", () => {
    expect(renderComment(off)).toContain("without evokernel's sandbox");
    expect(renderCheckRun(off, off.threshold).summary).toContain("without evokernel's sandbox");
  });

  it("says nothing of it when the sandbox was on, or the runner predates it", () => {
    for (const sandbox of ["namespaces" as const, undefined]) {
      const on = { ...review, device: { ...review.device, sandbox } };
      expect(renderComment(on)).not.toContain("sandbox");
      expect(renderCheckRun(on, on.threshold).summary).not.toContain("sandbox");
    }
  });
});
