// What LLM tokens cost, per model, so that a run's spend is known as it goes (and a budget
// in dollars can stop it). USD per million tokens, from Anthropic's pricing page
// (platform.claude.com/docs/en/about-claude/pricing and each model's overview page),
// checked 2026-11. Cache writes are priced at the 5-minute rate (the proposer's
// cache_control has no ttl) unless the reply's usage says the 1-hour cache was written.
//
// An unknown model is refused when the proposer is made (createProposer), not priced at
// zero: a run whose cost cannot be counted could overrun its budget unseen. Add a row here
// to use another model.

export type Price = {
  input: number;
  output: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
};

export const PRICES: Readonly<Record<string, Price>> = {
  // Sonnet 5.5: cache reads were cut from $0.20 to $0.10 on 2026-10-07.
  "claude-sonnet-5-5": { input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.1 },
  "claude-sonnet-5": { input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 },
  "claude-sonnet-4-6": {
    input: 3,
    output: 15,
    cacheWrite5m: 3.75,
    cacheWrite1h: 6,
    cacheRead: 0.3,
  },
  "claude-opus-5-5": { input: 4, output: 20, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.2 },
  "claude-opus-5": { input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5 },
  "claude-fable-5-1": {
    input: 10,
    output: 50,
    cacheWrite5m: 12.5,
    cacheWrite1h: 20,
    cacheRead: 0.25,
  },
  "claude-haiku-4-5": { input: 1, output: 5, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 },
};

/**
 * The price of `model`: its own row, or its family's for a dated snapshot
 * (`claude-haiku-4-5-20251001` is priced as `claude-haiku-4-5`), or null.
 */
export function priceFor(model: string): Price | null {
  return PRICES[model.replace(/-\d{8}$/, "")] ?? null;
}

export type TokenCounts = {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
};

export function costUsd(price: Price, tokens: TokenCounts): number {
  return (
    (tokens.inputTokens * price.input +
      tokens.outputTokens * price.output +
      tokens.cacheReadTokens * price.cacheRead +
      tokens.cacheWrite5mTokens * price.cacheWrite5m +
      tokens.cacheWrite1hTokens * price.cacheWrite1h) /
    1_000_000
  );
}
