import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { learn } from '../../engine/ops/learn.js';
import { forget } from '../../engine/ops/forget.js';
import { systemContext } from '../../engine/ops/context.js';
import { syntheticEngrams } from '../../scripts/support/synthetic-engrams.js';
import { createOrg } from '../data/organizations.js';
import { openOrgBackend } from '../org-backend/pg-backend.js';
import { enablePostingsCache, postingsCacheOf } from '../data/postings-cache.js';
import type { Org } from '../contracts.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// The postings a process holds stay within their bound: the least recently used organization
// goes first, one too large is never held, and answers are the same either way.

describe.each(DATABASES)('the postings cache (%s)', (kind) => {
  let t: TestDatabase;
  const orgs: Record<string, Org> = {};

  beforeAll(async () => {
    t = await freshDatabase(kind);
    const sizes = { ann: 10, bob: 10, cid: 10, big: 30 };
    for (const [slug, size] of Object.entries(sizes)) {
      const org = (orgs[slug] = await createOrg(t.db, `cache-${slug}`));
      const backend = openOrgBackend(t.db, org, null);
      for (const input of syntheticEngrams(size, slug.length + size)) await learn(backend, input, systemContext);
    }
  }, 120_000);
  afterAll(async () => t?.close());

  const search = (slug: string, q = 'deploy tests review') => openOrgBackend(t.db, orgs[slug]!, null).searchText(q, 10);
  const ids = async (slug: string, q?: string) => (await search(slug, q)).map((h) => `${h.engram.id} ${h.score.toFixed(9)}`);

  it('drops the least recently used organization first and never holds one over the bound', async () => {
    enablePostingsCache(t.db, 0);
    const expected = Object.fromEntries(await Promise.all(Object.keys(orgs).map(async (s) => [s, await ids(s)] as const)));
    enablePostingsCache(t.db, 25);
    const cache = postingsCacheOf(t.db)!;
    expect(await ids('ann')).toEqual(expected.ann);
    expect(await ids('bob')).toEqual(expected.bob);
    expect(cache.held()).toEqual([orgs.ann!.schema, orgs.bob!.schema]);
    expect(await ids('ann')).toEqual(expected.ann);
    expect(await ids('cid')).toEqual(expected.cid);
    expect(cache.held()).toEqual([orgs.ann!.schema, orgs.cid!.schema]);
    expect(await ids('big')).toEqual(expected.big);
    expect(cache.held()).toEqual([orgs.ann!.schema, orgs.cid!.schema]);
  });

  it('catches up with writes made after it loaded, retirements included', async () => {
    enablePostingsCache(t.db, 1000);
    const backend = openOrgBackend(t.db, orgs.ann!, null);
    expect(await search('ann', 'zebra crossing')).toEqual([]);
    const made = await learn(backend, { statement: 'Paint the zebra crossing before the school opens' }, systemContext);
    expect((await search('ann', 'zebra crossing')).map((h) => h.engram.id)).toEqual([made.engram.id]);
    await forget(backend, { target: made.engram.id }, systemContext);
    expect(await search('ann', 'zebra crossing')).toEqual([]);
    enablePostingsCache(t.db, 0);
    const fromDatabase = await ids('ann');
    enablePostingsCache(t.db, 1000);
    expect(await ids('ann')).toEqual(fromDatabase);
  });

  it('parses an answer once, keeps it frozen, and answers a changed engram as it now stands', async () => {
    enablePostingsCache(t.db, 1000);
    const backend = openOrgBackend(t.db, orgs.bob!, null);
    const made = await learn(backend, { statement: 'Wax the toboggan runners before the race' }, systemContext);
    const first = (await search('bob', 'toboggan runners'))[0]!.engram;
    expect(first.id).toBe(made.engram.id);
    expect((await search('bob', 'toboggan runners'))[0]!.engram).toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first.activation) && Object.isFrozen(first.tags)).toBe(true);
    await backend.write(async (tx) => tx.put({ ...(await tx.get(made.engram.id))!, tags: ['winter'] }));
    const changed = (await search('bob', 'toboggan runners'))[0]!.engram;
    expect(changed).not.toBe(first);
    expect(changed.tags).toEqual(['winter']);
    expect(first.tags).toEqual([]);
  });
});
