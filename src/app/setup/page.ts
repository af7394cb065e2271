// The setup page `npm start` serves before the App exists, pure: what will be created (the
// owner, private or public, the webhook URL, each permission and event with its reason) and
// the form that posts the manifest to GitHub. Replaces Probot's stock page, which names
// Probot and says nothing of what the button creates.
import type { AppDefinition, Registration } from "./manifest.js";

export function renderSetupPage(
  app: AppDefinition,
  registration: Registration,
  state: string,
): string {
  const { manifest, owner } = registration;
  const where =
    owner.kind === "organization"
      ? `on the organisation <b>${html(owner.login)}</b>`
      : `on <b>your personal account</b> (the one signed in to GitHub). To register it on an organisation, restart with <code>GH_ORG=your-org</code>: a private App can be installed only on the account that owns it`;
  const visibility = manifest.public
    ? "<b>Public</b>: any account can install it."
    : `<b>Private</b>: only ${owner.kind === "organization" ? html(owner.login) : "your account"} can install it, on the repositories you choose.`;
  const webhookNote = registration.webhookReachable
    ? ""
    : `<p class="flash flash-warn">GitHub cannot reach <code>${html(manifest.hook_attributes.url)}</code>: no webhook would arrive. For a trial on this machine, create a channel at <a href="https://smee.io/new">smee.io/new</a> and restart with <code>WEBHOOK_PROXY_URL=https://smee.io/…</code> (this server then receives through it). On a server, open this page through its public address, or set <code>EVOKERNEL_PUBLIC_URL=https://your-host</code>.</p>`;
  const permissions = app.permissions
    .map(
      (permission) =>
        `<tr><td><code>${html(permission.name)}</code></td><td>${html(permission.access)}</td><td>${html(permission.why)}</td></tr>`,
    )
    .join("\n");
  const events = app.events
    .map((event) => `<tr><td><code>${html(event.name)}</code></td><td>${html(event.why)}</td></tr>`)
    .join("\n");
  const action = `${registration.createAppUrl}?state=${encodeURIComponent(state)}`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Register ${html(manifest.name)}</title>
<link rel="stylesheet" href="/probot/static/primer.css">
</head>
<body class="bg-gray-light">
<main class="container-md p-4">
<h1>Register the ${html(manifest.name)} GitHub App</h1>
<p>${html(app.description)}</p>
<h2 class="h3 mt-4">What the button creates</h2>
<ul class="ml-4">
<li>A GitHub App named <b>${html(manifest.name)}</b> ${where}.</li>
<li>${visibility}</li>
<li>Webhooks go to <code>${html(manifest.hook_attributes.url)}</code>, signed with a secret GitHub generates.</li>
</ul>
${webhookNote}
<h3 class="h4 mt-3">Permissions (repository)</h3>
<table class="mt-2"><thead><tr><th>permission</th><th>access</th><th>why</th></tr></thead>
<tbody>
${permissions}
</tbody></table>
<h3 class="h4 mt-3">Webhook events</h3>
<table class="mt-2"><thead><tr><th>event</th><th>why</th></tr></thead>
<tbody>
${events}
</tbody></table>
<h2 class="h3 mt-4">Then</h2>
<p>GitHub shows the App for you to confirm, then sends you back here; this server writes
<code>APP_ID</code>, the private key and the webhook secret to <code>.env</code> (keep it
private), takes you to the App's install page and starts the App with them in this
page's place (later starts read <code>.env</code>). The remaining steps are in
<code>docs/INSTALL.md</code>.</p>
<form action="${html(action)}" method="post" class="mt-3">
<input type="hidden" name="manifest" id="manifest" value="${html(JSON.stringify(manifest))}">
<button type="submit" class="btn btn-primary">Register ${html(manifest.name)} on GitHub</button>
</form>
</main>
</body>
</html>
`;
}

export function renderMessagePage(title: string, message: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8"><title>${html(title)}</title>
<link rel="stylesheet" href="/probot/static/primer.css"></head>
<body class="bg-gray-light"><main class="container-md p-4"><h1>${html(title)}</h1>
<p>${html(message)}</p></main></body></html>
`;
}

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text or an attribute value in our own HTML. */
function html(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char] ?? char);
}
