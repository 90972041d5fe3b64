import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { LocalStore } from '../store/local-store.js';
import { MultiStore } from '../store/multi-store.js';
import { addStore, listStores, removeStore, DISCOVER_NEEDS_HUB } from '../store/store-admin.js';
import { addToRegistry, hasRegisteredStores, readRegistry } from '../store/store-registry.js';
import { learn } from '../ops/learn.js';
import { recall } from '../ops/recall.js';
import { inject } from '../ops/inject.js';
import { feedback } from '../ops/feedback.js';
import { forget } from '../ops/forget.js';
import { history } from '../ops/history.js';
import { systemContext } from '../ops/context.js';
import { parseId } from '../model/ids.js';

let base: string;
let primaryRoot: string;
let webRoot: string;
let teamRoot: string;

const files = (root: string): string[] =>
  readdirSync(join(root, 'engrams'))
    .filter((f) => f.endsWith('.yaml'))
    .sort();
const prefixOf = (root: string): string => /^id_prefix:\s*(\S+)/m.exec(readFileSync(join(root, 'local.yaml'), 'utf8'))![1]!;

/** Snapshot of every engram file of a store: name -> mtime and content. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of files(root)) out[f] = `${statSync(join(root, 'engrams', f)).mtimeMs}:${readFileSync(join(root, 'engrams', f), 'utf8')}`;
  return out;
}

beforeEach(async () => {
  base = mkdtempSync(join(tmpdir(), 'svc-multi-'));
  primaryRoot = join(base, 'primary');
  webRoot = join(base, 'web');
  teamRoot = join(base, 'team');
  // The primary store, and a team store that already holds engrams (registered read-only).
  (await LocalStore.open(primaryRoot)).close();
  const team = await LocalStore.open(teamRoot);
  await learn(team, { statement: 'Team rule: every deploy needs a changelog entry', scope: 'group:platform' }, systemContext);
  await learn(team, { statement: 'Team rule: rollback scripts live in ops/rollback', scope: 'group:platform' }, systemContext);
  team.close();
  await addStore(primaryRoot, { path: webRoot, scope: 'project:web' });
  await addStore(primaryRoot, { path: teamRoot, scope: 'group:platform', shared: true, readonly: true });
});

afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

describe('registry', () => {
  it("lives in the primary store's machine-local local.yaml (gitignored), next to the id prefix", async () => {
    const text = readFileSync(join(primaryRoot, 'local.yaml'), 'utf8');
    expect(text).toMatch(/^id_prefix: [A-Z][A-Z0-9]+$/m);
    expect(text).toMatch(/^# This machine's copy of the store\./m); // the comment survives the edit
    const data = parse(text);
    expect(data.stores).toEqual([
      expect.objectContaining({ path: webRoot, scope: 'project:web', shared: false, readonly: false }),
      expect.objectContaining({ path: teamRoot, scope: 'group:platform', shared: true, readonly: true }),
    ]);
    expect(readFileSync(join(primaryRoot, '.gitignore'), 'utf8')).toMatch(/^local\.yaml$/m);
    expect(hasRegisteredStores(primaryRoot)).toBe(true);
    // The primary store keeps its own id prefix; the added one got its own.
    expect(prefixOf(webRoot)).not.toBe(prefixOf(primaryRoot));
    const primary = await LocalStore.open(primaryRoot);
    expect(primary.idPrefix()).toBe(prefixOf(primaryRoot));
    primary.close();
  });

  it('adding the same path twice is a no-op, reported, even with another scope', async () => {
    const again = await addStore(primaryRoot, { path: webRoot, scope: 'project:web' });
    expect(again.outcome.action).toBe('unchanged');
    expect(again.text).toMatch(/already registered for scope project:web/);
    const other = await addStore(primaryRoot, { path: join(webRoot, '.', '..', 'web'), scope: 'project:other' });
    expect(other.outcome.action).toBe('unchanged');
    expect(other.json).toMatchObject({ action: 'unchanged', store: { scope: 'project:web' }, requested: { scope: 'project:other' } });
    expect(other.text).toMatch(/keyed by its path, so scope project:other was not added/);
    expect(await readRegistry(primaryRoot)).toHaveLength(2);
  });

  it('refuses a scope another store serves, the primary itself, and a folder that is not a store', async () => {
    await expect(addStore(primaryRoot, { path: join(base, 'web2'), scope: 'project:web' })).rejects.toThrow(
      /already served by the store at/,
    );
    expect(existsSync(join(base, 'web2'))).toBe(false); // nothing created for a refused add
    await expect(addStore(primaryRoot, { path: primaryRoot, scope: 'project:x' })).rejects.toThrow(/primary store itself/);
    const junk = join(base, 'junk');
    mkdirSync(junk);
    writeFileSync(join(junk, 'notes.txt'), 'hello');
    await expect(addStore(primaryRoot, { path: junk, scope: 'project:junk' })).rejects.toThrow(/neither empty nor an svc store/);
    await expect(addStore(primaryRoot, { path: join(base, 'nope'), scope: 'project:nope', readonly: true })).rejects.toThrow(
      /must be an existing store/,
    );
    await expect(addToRegistry(primaryRoot, { path: join(base, 'x'), scope: 'bad scope' })).rejects.toThrow(/whitespace/);
  });

  it('lists every store with its scope, path and engram count; remove unregisters and leaves the files', async () => {
    const rows = await listStores(primaryRoot);
    expect(rows.map((r) => [r.role, r.scope, r.path, r.engrams, r.readonly])).toEqual([
      ['primary', '*', primaryRoot, 0, false],
      ['added', 'project:web', webRoot, 0, false],
      ['added', 'group:platform', teamRoot, 2, true],
    ]);
    expect(DISCOVER_NEEDS_HUB).toMatch(/needs a hub \(svc init-remote/);
    expect(await removeStore(primaryRoot, webRoot)).toMatchObject({ scope: 'project:web' });
    expect(await removeStore(primaryRoot, webRoot)).toBeNull();
    expect(existsSync(join(webRoot, 'engrams'))).toBe(true);
    expect((await listStores(primaryRoot)).map((r) => r.scope)).toEqual(['*', 'group:platform']);
  });

  it('a registered store whose folder is gone is skipped with a warning, and writes to its scope fail', async () => {
    rmSync(webRoot, { recursive: true, force: true });
    const multi = await MultiStore.open(primaryRoot);
    try {
      expect(multi.warnings.join('\n')).toMatch(/project:web .* is unavailable/);
      await expect(learn(multi, { statement: 'Web rule', scope: 'project:web' }, systemContext)).rejects.toThrow(/unavailable/);
      expect(existsSync(webRoot)).toBe(false);
      const rows = await listStores(primaryRoot);
      expect(rows.find((r) => r.scope === 'project:web')).toMatchObject({ available: false, engrams: null });
    } finally {
      multi.close();
    }
  });
});

describe('a multi-store', () => {
  let multi: MultiStore;
  beforeEach(async () => {
    multi = await MultiStore.open(primaryRoot);
  });
  afterEach(() => multi.close());

  it("writes an engram learned with an added store's scope there, with that store's id prefix; others go to the primary", async () => {
    const web = await learn(
      multi,
      { statement: 'Web app: use the design tokens, never raw hex colours', scope: 'project:web' },
      systemContext,
    );
    const glob = await learn(multi, { statement: 'Prefer small pull requests', scope: 'global' }, systemContext);
    const other = await learn(multi, { statement: 'API project: version every endpoint', scope: 'project:api' }, systemContext);
    expect(parseId(web.engram.id)?.prefix).toBe(prefixOf(webRoot));
    expect(parseId(glob.engram.id)?.prefix).toBe(prefixOf(primaryRoot));
    expect(parseId(other.engram.id)?.prefix).toBe(prefixOf(primaryRoot));
    expect(files(webRoot)).toEqual([`${web.engram.id}.yaml`]);
    expect(files(primaryRoot)).toEqual([`${glob.engram.id}.yaml`, `${other.engram.id}.yaml`].sort());
    expect(parse(readFileSync(join(webRoot, 'engrams', `${web.engram.id}.yaml`), 'utf8'))).toMatchObject({
      id: web.engram.id,
      scope: 'project:web',
    });
    // Its history is kept by the store that holds it, and found through the composite.
    expect((await history(multi, web.engram.id)).map((e) => e.action)).toEqual(['created']);
    // Learning it again deduplicates in place.
    const again = await learn(
      multi,
      { statement: 'Web app: use the design tokens, never raw hex colours', scope: 'project:web' },
      systemContext,
    );
    expect(again).toMatchObject({ action: 'deduplicated', engram: { id: web.engram.id, reference_count: 2 } });
    expect(files(webRoot)).toHaveLength(1);
  });

  it('links supersedes across stores with the real id of the new engram', async () => {
    const old = await learn(multi, { statement: 'Web colours come from the old palette file', scope: 'global' }, systemContext);
    const next = await learn(
      multi,
      { statement: 'Web colours come from the design tokens package', scope: 'project:web', supersedes: [old.engram.id] },
      systemContext,
    );
    expect(next.engram.id).not.toMatch(/PENDING/);
    const oldNow = parse(readFileSync(join(primaryRoot, 'engrams', `${old.engram.id}.yaml`), 'utf8'));
    expect(oldNow.relations.superseded_by).toEqual([next.engram.id]);
    const newNow = parse(readFileSync(join(webRoot, 'engrams', `${next.engram.id}.yaml`), 'utf8'));
    expect(newNow.relations.supersedes).toEqual([old.engram.id]);
  });

  it('recall, list and inject see every store; search hits are merged by score, lists by learned_at', async () => {
    await learn(
      multi,
      { statement: 'Every deploy of the web app runs the smoke tests', scope: 'project:web' },
      { now: () => new Date('2026-01-02T00:00:00Z') },
    );
    await learn(
      multi,
      { statement: 'A deploy on Friday needs a second reviewer', scope: 'global' },
      { now: () => new Date('2026-01-03T00:00:00Z') },
    );
    const found = await recall(multi, 'deploy', { fast: true });
    const statements = found.hits.map((h) => h.engram.statement);
    expect(statements).toEqual(
      expect.arrayContaining([
        'Every deploy of the web app runs the smoke tests',
        'A deploy on Friday needs a second reviewer',
        'Team rule: every deploy needs a changelog entry',
      ]),
    );
    const listed = await multi.list({});
    expect(listed).toHaveLength(4);
    const at = listed.map((e) => e.temporal!.learned_at);
    expect([...at].sort().reverse()).toEqual(at);
    expect((await multi.list({ scope: 'group:platform' })).map((e) => e.scope)).toEqual(['group:platform', 'group:platform']);
    expect(await multi.list({ limit: 2 })).toHaveLength(2);
    const injected = await inject(multi, 'deploy the web app', { fast: true });
    expect(injected.text).toMatch(/smoke tests/);
    expect(injected.text).toMatch(/changelog entry/);
    expect((await multi.stats()).engrams).toBe(4);
  });

  it('never writes a read-only store: a learn into its scope and an update of its engrams fail clearly', async () => {
    const before = snapshot(teamRoot);
    await expect(learn(multi, { statement: 'Team rule: squash merges only', scope: 'group:platform' }, systemContext)).rejects.toThrow(
      /scope group:platform belongs to the read-only store at .*team: svc never writes there/,
    );
    const [teamEngram] = await multi.list({ scope: 'group:platform', limit: 1 });
    await expect(feedback(multi, [{ id: teamEngram!.id, signal: 'positive' }], systemContext)).rejects.toThrow(
      new RegExp(`engram ${teamEngram!.id} lives in the read-only store`),
    );
    await expect(forget(multi, { target: teamEngram!.id }, systemContext)).rejects.toThrow(/read-only store/);
    expect(snapshot(teamRoot)).toEqual(before);
    // Nothing half-written elsewhere either.
    expect(files(primaryRoot)).toEqual([]);
    expect(files(webRoot)).toEqual([]);
  });

  it('updates an engram in the store that holds it (feedback and forget on an added store)', async () => {
    const web = await learn(multi, { statement: 'Web app: lint before commit', scope: 'project:web' }, systemContext);
    await feedback(multi, [{ id: web.engram.id, signal: 'positive' }], systemContext);
    await forget(multi, { target: web.engram.id, reason: 'obsolete' }, systemContext);
    const onDisk = parse(readFileSync(join(webRoot, 'engrams', `${web.engram.id}.yaml`), 'utf8'));
    expect(onDisk).toMatchObject({ status: 'retired', feedback_signals: { positive: 1 } });
    expect(files(primaryRoot)).toEqual([]);
  });

  it('a learn whose side effects would touch a read-only engram (recurrence, supersedes back-link) leaves it as it is', async () => {
    const before = snapshot(teamRoot);
    const [teamEngram] = await multi.list({ scope: 'group:platform', limit: 1 });
    const r = await learn(multi, { statement: teamEngram!.statement, scope: 'global' }, systemContext);
    expect(r).toMatchObject({ action: 'created', recurrences: [teamEngram!.id] });
    const s = await learn(
      multi,
      { statement: 'My own rule replacing the team one', scope: 'project:web', supersedes: [teamEngram!.id] },
      systemContext,
    );
    expect(s.engram.relations?.supersedes).toEqual([teamEngram!.id]);
    expect(snapshot(teamRoot)).toEqual(before);
    expect(files(primaryRoot)).toEqual([`${r.engram.id}.yaml`]);
    expect(multi.warnings.join('\n')).toMatch(/left .* in the read-only store .* unchanged \(recurrence_count not updated\)/);
  });

  it('span "writable" leaves read-only stores out; "primary" opens the primary only', async () => {
    const writable = await MultiStore.open(primaryRoot, 'fast', 'writable');
    const only = await MultiStore.open(primaryRoot, 'fast', 'primary');
    try {
      expect(writable.members().map((m) => m.entry?.scope ?? '*')).toEqual(['*', 'project:web']);
      expect(only.members()).toHaveLength(1);
    } finally {
      writable.close();
      only.close();
    }
  });
});

describe('MCP tools svc_stores_add, svc_stores_list, svc_sync, svc_sync_status', () => {
  it('add a store to the running server, list stores, report sync status and rebuild the index', async () => {
    const { storesAddTool, storesListTool, syncTool, syncStatusTool } = await import('../mcp/store-tools.js');
    const { invokeTool } = await import('../mcp/dispatch.js');
    const multi = await MultiStore.open(primaryRoot);
    try {
      const ctx = {
        backend: multi,
        local: multi,
        now: () => new Date('2026-05-01T00:00:00Z'),
        embedder: { load: async () => ({ state: 'unavailable' }), peek: () => undefined, probe: async () => ({ state: 'unavailable' }) },
      } as never;
      const docs = join(base, 'docs');
      const added = (await invokeTool(storesAddTool, ctx, { path: docs, scope: 'project:docs' })) as Record<string, unknown>;
      expect(added).toMatchObject({ action: 'added', active_now: true, store: { scope: 'project:docs', readonly: false, shared: false } });
      const r = await learn(multi, { statement: 'Docs use sentence case headings', scope: 'project:docs' }, systemContext);
      expect(files(docs)).toEqual([`${r.engram.id}.yaml`]);
      expect(await invokeTool(storesAddTool, ctx, { path: docs, scope: 'project:other' })).toMatchObject({ action: 'unchanged' });
      const listed = (await invokeTool(storesListTool, ctx, {})) as { stores: Array<{ scope: string; engrams: number }> };
      expect(listed.stores.map((s) => [s.scope, s.engrams])).toEqual([
        ['*', 0],
        ['project:web', 0],
        ['group:platform', 2],
        ['project:docs', 1],
      ]);
      expect(await invokeTool(syncStatusTool, ctx, {})).toMatchObject({ remote: null, ahead: 0, behind: 0, outbox: 0 });
      expect(await invokeTool(syncTool, ctx, { full: true })).toMatchObject({ rebuilt: true, engrams: 3 });
      await expect(invokeTool(syncTool, ctx, {})).rejects.toThrow(/no remote is set/);
      await expect(invokeTool(storesListTool, { ...(ctx as object), local: undefined } as never, {})).rejects.toThrow(
        /works on a local store; this server has none/,
      );
    } finally {
      multi.close();
    }
  });
});
