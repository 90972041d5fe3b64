import { createRequire } from 'node:module';

// node:crypto takes 2-10 ms to load, and no command pays it without need: hashes come from
// text-hash.ts, names from unique-hex.ts. What is left loads it on first use: a new store's id
// prefix, a team write's outbox entry.

const require = createRequire(import.meta.url);
let loaded: typeof import('node:crypto') | undefined;

export const nodeCrypto = (): typeof import('node:crypto') => (loaded ??= require('node:crypto') as typeof import('node:crypto'));
