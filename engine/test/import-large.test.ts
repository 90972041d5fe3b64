import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { importFile } from '../ops/import/import.js';
import { systemContext } from '../ops/context.js';

// The performance side of import.test.ts, in the `slow` project (vitest.config.ts): 2,000 rows
// written durably take tens of seconds on a loaded machine.

let dir: string;
let root: string;
let store: LocalStore;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-import-'));
  root = join(dir, 'store');
  store = await LocalStore.open(root);
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('batches', () => {
  it('a large file imports quickly, in one transaction per 500 rows', async () => {
    const lines = Array.from({ length: 2000 }, (_, i) =>
      JSON.stringify({ statement: `Check ${i}: validate input ${i} at the boundary`, tags: ['bulk'] }),
    );
    const file = join(dir, 'bulk.jsonl');
    writeFileSync(file, lines.join('\n'));
    const r = await importFile(store, { from: 'generic', path: file }, systemContext);
    expect(r).toMatchObject({ total: 2000, imported: 2000 });
    expect(readdirSync(join(root, 'engrams')).filter((f) => f.endsWith('.yaml'))).toHaveLength(2000);
  });
});
