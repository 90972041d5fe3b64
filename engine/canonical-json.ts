// Canonical JSON: one text for one value, whatever the order its keys were built in. What is
// hashed or signed goes through it: a pack's integrity hash and signature (ops/packs/), the hub's
// audit chain and checkpoints, and the request digest of an idempotent replay.

/** JSON with object keys sorted and `undefined` dropped: the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}
