#!/usr/bin/env node
// npm run screenshots: renders each docs/examples/pr-*.md as GitHub shows a comment (marked
// with GFM, GitHub's fonts, table and code styles, <details> collapsed as GitHub leaves
// them; the optimizing comment also opened, as -open.png) in headless Chromium, and writes
// docs/examples/<name>.png beside it. Mermaid charts
// stay code blocks: GitHub draws them with a script this offline page does not load.
// Needs Chromium (Debian: apt-get install -y chromium; else CHROMIUM=/path/to/chrome).
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { marked } from "marked";
import { chromium } from "playwright-core";

const root = fileURLToPath(new URL("..", import.meta.url));
const folder = join(root, "docs", "examples");

// The parts of GitHub's comment style a reader's eye depends on (primer, light theme).
const CSS = `
body { margin: 0; background: #fff; }
.comment { width: 780px; margin: 16px; border: 1px solid #d1d9e0; border-radius: 6px; }
.header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px;
  font: 14px -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #59636e; }
.markdown-body { padding: 16px; font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans",
  Helvetica, Arial, sans-serif, "Noto Color Emoji"; color: #1f2328; word-wrap: break-word; }
.markdown-body h1, .markdown-body h2, .markdown-body h3, .markdown-body h4 {
  margin: 24px 0 16px; font-weight: 600; line-height: 1.25; }
.markdown-body h1 { font-size: 2em; border-bottom: 1px solid #d1d9e0b3; padding-bottom: .3em; }
.markdown-body h2 { font-size: 1.5em; border-bottom: 1px solid #d1d9e0b3; padding-bottom: .3em; }
.markdown-body h3 { font-size: 1.25em; } .markdown-body h4 { font-size: 1em; }
.markdown-body > :first-child { margin-top: 0 !important; }
.markdown-body p, .markdown-body table, .markdown-body pre, .markdown-body details,
.markdown-body ul { margin: 0 0 16px; }
.markdown-body table { display: block; width: max-content; max-width: 100%; overflow: auto;
  border-spacing: 0; border-collapse: collapse; font-variant: tabular-nums; }
.markdown-body th, .markdown-body td { padding: 6px 13px; border: 1px solid #d1d9e0; }
.markdown-body th { font-weight: 600; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body code { padding: .2em .4em; font-size: 85%; background: #818b981f; border-radius: 6px;
  font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace; }
.markdown-body pre { padding: 16px; overflow: auto; font-size: 85%; line-height: 1.45;
  background: #f6f8fa; border-radius: 6px; }
.markdown-body pre code { padding: 0; background: transparent; font-size: 100%; }
.markdown-body sub { font-size: 75%; color: #59636e; }
.markdown-body summary { cursor: pointer; }
`;

const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const browser = await chromium.launch({
  executablePath,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 820, height: 600 } });
  const names = (await readdir(folder)).filter((name) => /^pr-.*\.md$/.test(name)).sort();
  // Each comment as GitHub first shows it, and the optimizing one opened (chart, diff).
  const shots = names.flatMap((name) =>
    name === "pr-comment-optimize.md"
      ? [
          [name, false],
          [name, true],
        ]
      : [[name, false]],
  );
  for (const [name, open] of shots) {
    const markdown = await readFile(join(folder, name), "utf8");
    const html = marked.parse(markdown, { gfm: true, async: false });
    const body = open ? html.replaceAll("<details>", "<details open>") : html;
    const who = name.includes("check-run") ? "evokernel check run" : "evokernel bot commented";
    await page.setContent(
      `<!doctype html><meta charset="utf-8"><style>${CSS}</style>` +
        `<div class="comment"><div class="header"><b>${who}</b></div>` +
        `<div class="markdown-body">${body}</div></div>`,
    );
    const box = await page.locator(".comment").boundingBox();
    const out = join(folder, name.replace(/\.md$/, open ? "-open.png" : ".png"));
    await page.screenshot({
      path: out,
      clip: { x: 0, y: 0, width: 820, height: Math.ceil((box?.height ?? 600) + 32) },
      fullPage: true,
    });
    console.log(`wrote ${out}`);
  }
} finally {
  await browser.close();
}
