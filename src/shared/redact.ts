// Secrets out of text that leaves a process: a harness's output tail in the runner, and (through
// src/app/redact.ts, which adds the secrets only the app can list: .env, its key file) what the
// app posts. Two nets: the values of secret-named variables (whatever they look like), and the
// shapes of well-known credentials (GitHub tokens, Anthropic keys, PEM private keys) wherever
// they came from.

type Env = Readonly<Record<string, string | undefined>>;

/** Variable names whose values are secrets. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|DATABASE_URL|AUTH/i;

/** Whether a variable of this name holds a secret. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/** Values shorter than this are not redacted by value (they would match ordinary words). */
export const MIN_SECRET_LENGTH = 8;

/** Secrets by their shape, whatever their value and wherever they came from. */
export const SECRET_SHAPES: readonly RegExp[] = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g,
  /\bsk-ant-[A-Za-z0-9_-]{10,}/g,
  /\bv1\.[0-9a-f]{40}\b/g,
];

export const REDACTED = "[redacted]";

/** The secret values among `env`'s variables, longest first. */
export function secretValues(env: Env = process.env): string[] {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !isSecretName(name)) continue;
    const trimmed = value.trim();
    if (trimmed.length >= MIN_SECRET_LENGTH) values.add(trimmed);
  }
  return [...values].sort((a, b) => b.length - a.length);
}

/** `text` with every secret value and credential shape replaced by [redacted]. */
export function redactSecrets(text: string, secrets: readonly string[] = secretValues()): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join(REDACTED);
  for (const shape of SECRET_SHAPES) out = out.replace(shape, REDACTED);
  return out;
}
