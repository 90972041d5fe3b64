import { sha256Hex } from '../text-hash.js';

// Dedup key: the statement with case, surrounding whitespace, inner runs of whitespace and
// trailing sentence punctuation normalised away, so "Use pnpm." and "use  pnpm" are one.
export function normalizeStatement(statement: string): string {
  return statement
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.!;:,\s]+$/u, '');
}

export function contentHash(statement: string): string {
  return 'sha256:' + sha256Hex(normalizeStatement(statement));
}
