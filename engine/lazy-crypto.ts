import { createRequire } from 'node:module';

// node:crypto takes about 10 ms to load. The prompt-time hook and recall only read, and never
// need it, so the store's modules load it on first use (ids, content hashes, temp file names).

const require = createRequire(import.meta.url);
let loaded: typeof import('node:crypto') | undefined;

export const nodeCrypto = (): typeof import('node:crypto') => (loaded ??= require('node:crypto') as typeof import('node:crypto'));
