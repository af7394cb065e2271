// The App's registration (GitHub's manifest flow), pure: app.yml's text plus where the app
// runs give the manifest the setup page posts and the address it posts to. app.yml holds
// the name, permissions and events; the comment after each permission and event is its
// reason, shown on the page. The webhook URL, the redirect and the owner come from here,
// never from app.yml: a URL written there would be wrong for every operator but one. The
// App's homepage (`url`, which GitHub requires) is the App's own page on its host, from the
// name it is registered with, unless app.yml names another.
import { isMap, isScalar, isSeq, parseDocument } from "yaml";
import { z } from "zod";

/** Probot's server takes webhooks here unless WEBHOOK_PATH says otherwise. */
export const DEFAULT_WEBHOOK_PATH = "/api/github/webhooks";

const accessSchema = z.enum(["read", "write", "admin"]);

const appYmlSchema = z
  .object({
    name: z.string().min(1).max(34),
    description: z.string().min(1),
    url: z.url().optional(),
    public: z.boolean(),
    default_events: z.array(z.string().regex(/^[a-z_]+$/)).min(1),
    default_permissions: z.record(z.string().regex(/^[a-z_]+$/), accessSchema),
  })
  .strict();

export interface AppDefinition {
  readonly name: string;
  readonly description: string;
  /** The owner's choice of homepage; absent: the App's own page. */
  readonly url?: string;
  readonly public: boolean;
  readonly events: readonly { name: string; why: string }[];
  readonly permissions: readonly { name: string; access: string; why: string }[];
}

/** app.yml's fields and each permission's and event's reason (its trailing comment). */
export function readAppYml(text: string): AppDefinition {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`app.yml: ${doc.errors[0]?.message ?? "invalid"}`);
  const parsed = appYmlSchema.safeParse(doc.toJS());
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`app.yml: ${issue?.path.join(".") ?? ""} ${issue?.message ?? "invalid"}`);
  }
  const reasons = new Map<string, string>();
  const events = doc.get("default_events");
  if (isSeq(events))
    for (const item of events.items)
      if (isScalar(item)) reasons.set(`event:${String(item.value)}`, item.comment?.trim() ?? "");
  const permissions = doc.get("default_permissions");
  if (isMap(permissions))
    for (const pair of permissions.items)
      if (isScalar(pair.key) && isScalar(pair.value))
        reasons.set(`permission:${String(pair.key.value)}`, pair.value.comment?.trim() ?? "");
  const why = (key: string): string => {
    const reason = reasons.get(key);
    if (!reason) throw new Error(`app.yml: ${key} has no reason: write one as a comment after it`);
    return reason;
  };
  const app = parsed.data;
  return {
    name: app.name,
    description: app.description,
    ...(app.url === undefined ? {} : { url: app.url }),
    public: app.public,
    events: app.default_events.map((name) => ({ name, why: why(`event:${name}`) })),
    permissions: Object.entries(app.default_permissions).map(([name, access]) => ({
      name,
      access,
      why: why(`permission:${name}`),
    })),
  };
}

/** The operator's environment, as far as registration reads it. */
export interface SetupEnv {
  /** Register on this organisation instead of the signed-in user's account. */
  readonly GH_ORG?: string | undefined;
  readonly GHE_HOST?: string | undefined;
  readonly GHE_PROTOCOL?: string | undefined;
  /** A webhook proxy channel (smee.io) for a trial on a machine GitHub cannot reach. */
  readonly WEBHOOK_PROXY_URL?: string | undefined;
  readonly WEBHOOK_PATH?: string | undefined;
  /** The app's public address, when the setup page is opened through another one. */
  readonly EVOKERNEL_PUBLIC_URL?: string | undefined;
  /** App names are unique on a GitHub host: a second registration needs its own. */
  readonly EVOKERNEL_APP_NAME?: string | undefined;
}

/** The manifest GitHub documents (no other keys): what the page posts. */
export interface AppManifest {
  name: string;
  url: string;
  description: string;
  public: boolean;
  hook_attributes: { url: string; active: true };
  redirect_url: string;
  default_events: string[];
  default_permissions: Record<string, string>;
}

export interface Registration {
  readonly manifest: AppManifest;
  /** Where the form posts: the user's or the organisation's "new GitHub App" page. */
  readonly createAppUrl: string;
  readonly owner: { kind: "organization"; login: string } | { kind: "user" };
  /** Whether GitHub's deliveries can reach the webhook URL as far as we can tell. */
  readonly webhookReachable: boolean;
}

/**
 * The registration for a page served at `requestBase` (scheme://host of the browser's
 * request). The webhook goes to the proxy channel when there is one, else to this server's
 * public address and Probot's webhook path.
 */
export function buildRegistration(
  app: AppDefinition,
  env: SetupEnv,
  requestBase: string,
): Registration {
  const org = env.GH_ORG?.trim();
  if (org !== undefined && org !== "" && !/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/.test(org))
    throw new Error(`GH_ORG: '${org}' is not an organisation login (letters, digits, hyphens)`);
  const publicBase = trimSlash(env.EVOKERNEL_PUBLIC_URL?.trim() || requestBase);
  const proxy = env.WEBHOOK_PROXY_URL?.trim();
  const path = env.WEBHOOK_PATH?.trim() || DEFAULT_WEBHOOK_PATH;
  const hookUrl = proxy || `${publicBase}${path.startsWith("/") ? path : `/${path}`}`;
  const host = env.GHE_HOST?.trim() || "github.com";
  const protocol = env.GHE_PROTOCOL?.trim() || "https";
  const owner = org ? `/organizations/${org}` : "";
  const name = env.EVOKERNEL_APP_NAME?.trim() || app.name;
  return {
    manifest: {
      name,
      url: app.url ?? appPage(protocol, host, name),
      description: app.description,
      public: app.public,
      hook_attributes: { url: hookUrl, active: true },
      // The browser comes back here with the code Probot's flow turns into credentials.
      redirect_url: `${trimSlash(requestBase)}/probot/setup`,
      default_events: app.events.map((event) => event.name),
      default_permissions: Object.fromEntries(
        app.permissions.map((permission) => [permission.name, permission.access]),
      ),
    },
    createAppUrl: `${protocol}://${host}${owner}/settings/apps/new`,
    owner: org ? { kind: "organization", login: org } : { kind: "user" },
    webhookReachable: !isLocal(hookUrl),
  };
}

/**
 * The App's own page: github.com/apps/<slug>, or /github-apps/<slug> on GitHub Enterprise
 * Server; the slug is the name as GitHub makes it (lower case, other characters to -).
 */
export function appPage(protocol: string, host: string, name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return host === "github.com"
    ? `https://github.com/apps/${slug}`
    : `${protocol}://${host}/github-apps/${slug}`;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

/** localhost, loopback and private addresses: GitHub's deliveries never arrive there. */
function isLocal(url: string): boolean {
  let hostname: string;
  try {
    hostname = new URL(url).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return true;
  }
  return (
    hostname === "localhost" ||
    hostname.endsWith(".localhost") ||
    hostname === "::1" ||
    hostname === "0.0.0.0" ||
    /^127\./.test(hostname) ||
    /^10\./.test(hostname) ||
    /^192\.168\./.test(hostname) ||
    /^172\.(1[6-9]|2\d|3[01])\./.test(hostname)
  );
}
