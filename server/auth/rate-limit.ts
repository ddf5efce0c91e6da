// Sign-in brute-force limit: failures counted per client address and per (address, email) in a
// sliding window. The address is the socket's peer, never a forwarding header a client can spoof,
// and the key holds no path, so path spellings of the same route share one budget.
export interface RateLimiter {
  /** Seconds to wait, or 0 when an attempt is allowed now. */
  retryAfter(address: string, email: string, now?: number): number;
  fail(address: string, email: string, now?: number): void;
  succeed(address: string, email: string): void;
}

export function createSignInLimiter(options: { windowMs: number; perAccount: number; perAddress: number }): RateLimiter {
  const failures = new Map<string, number[]>();
  const recent = (key: string, now: number) => {
    const kept = (failures.get(key) ?? []).filter((t) => now - t < options.windowMs);
    if (kept.length) failures.set(key, kept);
    else failures.delete(key);
    return kept;
  };
  const keys = (address: string, email: string) => [`a:${address}`, `e:${address}:${email.trim().toLowerCase()}`];
  return {
    retryAfter(address, email, now = Date.now()) {
      const [byAddress, byAccount] = keys(address, email).map((k) => recent(k, now));
      const over = (list: number[], limit: number) => (list.length >= limit ? list[list.length - limit]! + options.windowMs - now : 0);
      const waitMs = Math.max(over(byAddress!, options.perAddress), over(byAccount!, options.perAccount));
      return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0;
    },
    fail(address, email, now = Date.now()) {
      for (const k of keys(address, email)) failures.set(k, [...recent(k, now), now]);
    },
    succeed(address, email) {
      failures.delete(keys(address, email)[1]!);
    },
  };
}
