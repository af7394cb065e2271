// `npm start` without credentials serves Probot's setup page, which registers the App from
// app.yml (the manifest flow): how a new user gets started. Needs the build (CI runs
// `npm run build` before the tests; here it is built once when missing).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const port = 41_000 + Math.floor(Math.random() * 9_000);
let serverPid: number | undefined;

beforeAll(async () => {
  if (!existsSync(`${root}dist/src/app/main.js`))
    await execa("npm", ["run", "build"], { cwd: root });
});

afterAll(() => {
  // npm starts node as its child: stop the whole process group this test started.
  if (serverPid !== undefined) {
    try {
      process.kill(-serverPid, "SIGTERM");
    } catch {
      // already gone
    }
  }
});

it("npm start without APP_ID or a key serves the setup page built from app.yml", async () => {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    PORT: String(port),
    HOST: "127.0.0.1",
  };
  const server = execa("npm", ["start"], {
    cwd: root,
    env,
    extendEnv: false,
    detached: true,
    reject: false,
  });
  serverPid = server.pid;
  let html = "";
  for (let attempt = 0; attempt < 100 && html === ""; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    html = await fetch(`http://127.0.0.1:${port}/probot`).then(
      (response) => (response.ok ? response.text() : ""),
      () => "",
    );
  }
  expect(html).toContain("Welcome to evokernel");
  expect(html).toContain("https://github.com/settings/apps/new");
  // The manifest the button posts is app.yml's: the events and least permissions it asks for.
  expect(html).toContain('"checks":"write"');
  expect(html).toContain('"workflow_run"');
});
