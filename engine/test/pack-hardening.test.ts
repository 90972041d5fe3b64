import { describe, it, expect, beforeEach, afterEach, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { systemContext } from '../ops/context.js';
import { SvcError } from '../errors.js';
import { discoverPacks, exportPack, FilePackKeys, FilePackRegistry, installPack, listPacks, previewPack } from '../ops/packs/packs.js';
import { IntegrityHash } from '../ops/packs/format.js';
import { findControl, scanEngram } from '../ops/packs/scan.js';
import { engramSignature, generateSigningKey, manifestPayload, pemSigner, type PackSigner } from '../ops/packs/signing.js';
import { KEYS_FILE } from '../ops/packs/keys.js';
import { PACK_TOOLS } from '../mcp/pack-tools.js';
import { callTool } from '../mcp/dispatch.js';
import type { ToolContext } from '../mcp/types.js';
import { syncStores } from '../store/git-sync.js';
import { startGitHttpServer, type GitHttpServer } from './support/git-http-server.js';

// What outside testers found in packs, each pinned by a test: links followed out of a pack,
// terminal escape sequences passing the scan, a copy displacing its original through sync, a
// self-declared integrity hash standing in for a signature, and benchmark code in the engine.

let tmp: string;
let source: LocalStore;
let target: LocalStore;
let sourceKeys: FilePackKeys;
let targetKeys: FilePackKeys;
let targetPacks: FilePackRegistry;

beforeEach(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'svc-pack-hardening-'));
  source = await LocalStore.open(join(tmp, 'source'));
  target = await LocalStore.open(join(tmp, 'target'));
  sourceKeys = new FilePackKeys(source.root);
  targetKeys = new FilePackKeys(target.root);
  targetPacks = new FilePackRegistry(target.root);
});

afterEach(() => {
  source.close();
  target.close();
  rmSync(tmp, { recursive: true, force: true });
});

const pub = async (store: LocalStore, statement: string): Promise<string> =>
  (await learn(store, { statement, visibility: 'public' }, systemContext)).engram.id;

const exportFrom = async (store: LocalStore, name: string, keys = new FilePackKeys(store.root)) =>
  exportPack(store, { name, output: join(tmp, 'out', name), creator: 'alice' }, systemContext, await keys.signer());

const install = (dir: string, allowUntrusted = false) =>
  installPack(target, targetPacks, dir, systemContext, { trust: targetKeys, allowUntrusted });

async function refusal(p: Promise<unknown>): Promise<SvcError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SvcError);
  return err as SvcError;
}

/** What a person or an agent would read of an error: message and details. */
const said = (err: SvcError): string => [err.message, ...err.details].join('\n');

/** A hand-made pack (unsigned) with a correct integrity hash. */
function writePack(dir: string, name: string, docs: Array<Record<string, unknown>>): string {
  mkdirSync(join(dir, 'engrams'), { recursive: true });
  for (const d of docs) writeFileSync(join(dir, 'engrams', `${d.id}.yaml`), stringify(d));
  writeFileSync(
    join(dir, 'pack.yaml'),
    stringify({
      format: 'svc-pack/1',
      name,
      version: 1,
      description: '',
      creator: 'test',
      created_at: '2026-01-01T00:00:00Z',
      engram_count: 0,
      integrity: `sha256-${'0'.repeat(64)}`,
    }),
  );
  reseal(dir);
  return dir;
}

/** Recomputes the integrity hash and count after editing a pack, as a tool (or an attacker) would. */
function reseal(dir: string, change: Record<string, unknown> = {}): void {
  const files = readdirSync(join(dir, 'engrams')).sort();
  const hash = new IntegrityHash();
  for (const f of files) hash.add(f, parse(readFileSync(join(dir, 'engrams', f), 'utf8')));
  const manifest = parse(readFileSync(join(dir, 'pack.yaml'), 'utf8'));
  writeFileSync(join(dir, 'pack.yaml'), stringify({ ...manifest, engram_count: files.length, integrity: hash.digest(), ...change }));
}

const doc = (id: string, statement: string) => ({
  id,
  status: 'active',
  type: 'behavioral',
  scope: 'global',
  visibility: 'public',
  statement,
});

// ------------------------------------------------------------------------------- 1. links

describe('links in a pack are never followed', () => {
  const tool = async (store: LocalStore, name: string, args: Record<string, unknown>) => {
    const none = { state: 'unavailable', model: 'bge-small-en-v1.5', reason: 'not needed' } as never;
    const ctx: ToolContext = {
      backend: store,
      local: store,
      now: () => new Date(),
      embedder: { load: async () => none, peek: () => undefined, probe: async () => none },
    };
    return callTool(new Map(PACK_TOOLS.map((t) => [t.name, t])), ctx, name, args);
  };

  it('refuses a pack whose engrams/ is a link to /etc, in one line that quotes nothing outside the pack', async () => {
    const dir = join(tmp, 'evil');
    mkdirSync(dir);
    symlinkSync('/etc', join(dir, 'engrams'));
    writeFileSync(
      join(dir, 'pack.yaml'),
      stringify({ format: 'svc-pack/1', name: 'evil', version: 1, engram_count: 1, integrity: `sha256-${'0'.repeat(64)}` }),
    );
    for (const attempt of [previewPack(target, targetPacks, dir, targetKeys), install(dir, true)]) {
      const err = await refusal(attempt);
      expect(err.message).toBe(
        `${dir} was refused: engrams/ is a symbolic link, and packs never follow links (copy the real files into the pack)`,
      );
      expect(err.details).toEqual([]);
      expect(said(err)).not.toMatch(/\/etc|profile|passwd|hosts/);
    }
    for (const name of ['svc_packs_preview', 'svc_packs_install']) {
      const r = await tool(target, name, { path: dir, ...(name === 'svc_packs_install' ? { allow_untrusted: true } : {}) });
      expect(r.isError).toBe(true);
      expect(r.content[0]!.text).toMatch(/engrams\/ is a symbolic link/);
      expect(r.content[0]!.text).not.toMatch(/\/etc|profile|passwd/);
    }
    expect(await target.stats()).toMatchObject({ engrams: 0, packs: 0 });
  });

  it("refuses a linked engram file (another store's engram), a linked pack.yaml and a linked pack folder", async () => {
    const theirs = await pub(source, 'An engram of another store');
    const dir = writePack(join(tmp, 'borrow'), 'borrow', [doc('ENG-AAAA-2026-0101-001', 'An honest rule')]);
    symlinkSync(join(source.root, 'engrams', `${theirs}.yaml`), join(dir, 'engrams', `${theirs}.yaml`));
    reseal(dir); // the link's target hashes fine: only refusing links stops it
    const err = await refusal(install(dir, true));
    expect(err.message).toBe(
      `${dir} was refused: engrams/${theirs}.yaml is a symbolic link, and packs never follow links (copy the real files into the pack)`,
    );
    expect(said(err)).not.toContain(source.root);
    expect(await target.stats()).toMatchObject({ engrams: 0 });

    const manifestLink = writePack(join(tmp, 'mlink'), 'mlink', [doc('ENG-AAAA-2026-0101-001', 'An honest rule')]);
    const real = join(tmp, 'elsewhere.yaml');
    writeFileSync(real, readFileSync(join(manifestLink, 'pack.yaml')));
    rmSync(join(manifestLink, 'pack.yaml'));
    symlinkSync(real, join(manifestLink, 'pack.yaml'));
    expect((await refusal(previewPack(target, targetPacks, manifestLink, targetKeys))).message).toMatch(/: pack\.yaml is a symbolic link/);

    const folderLink = join(tmp, 'folder-link');
    symlinkSync(join(tmp, 'borrow'), folderLink);
    const whole = await refusal(install(folderLink, true));
    expect(whole.message).toMatch(/was refused: the pack folder itself is a symbolic link/);
    expect(said(whole)).not.toContain(join(tmp, 'borrow'));
  });

  it('export never writes through a linked folder, and discover skips linked packs', async () => {
    await pub(source, 'A shareable rule');
    const realOut = join(tmp, 'real-out');
    mkdirSync(realOut);
    symlinkSync(realOut, join(tmp, 'linked-out'));
    const err = await refusal(exportPack(source, { name: 'x', output: join(tmp, 'linked-out') }, systemContext, null));
    expect(err.message).toMatch(/is a symbolic link, and packs never follow links/);
    expect(readdirSync(realOut)).toEqual([]);

    const shelf = join(tmp, 'shelf');
    mkdirSync(shelf);
    await exportPack(source, { name: 'kept', output: join(tmp, 'kept') }, systemContext, null);
    symlinkSync(join(tmp, 'kept'), join(shelf, 'kept'));
    expect((await discoverPacks(targetPacks, { dirs: [shelf] })).packs).toEqual([]);
  });
});

// ------------------------------------------------------------------ 2. control characters

describe('terminal control characters', () => {
  it('flags escape sequences and other C0/C1 controls, never tab or newline, and shows them escaped', () => {
    const flagged: Array<[string, string]> = [
      ['Clear \u001b[2J the screen', 'terminal escape sequence'],
      ['Looks \u001b[31mred\u001b[0m', 'terminal escape sequence'],
      ['Retitle \u001b]0;pwned\u0007 the window', 'terminal escape sequence'],
      ['C1 CSI \u009b2J', 'terminal escape sequence'],
      ['Bell \u0007 ringing', 'control character'],
      ['Carriage\rreturn', 'control character'],
      ['Backspace\u0008 over', 'control character'],
      ['Next line \u0085 (C1)', 'control character'],
      ['Delete \u007f', 'control character'],
    ];
    for (const [text, rule] of flagged) {
      const found = findControl(text);
      expect(found, JSON.stringify(text)).toEqual([{ rule, sample: expect.any(String) }]);
      expect(found[0]!.sample).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    }
    expect(findControl('\u001b[2J')[0]!.sample).toBe('\\u001B[2J');
    for (const text of ['Tabs\tare fine', 'Newlines\nare fine', 'Plain rule: use pnpm, never npm', 'Ünïcödé and emoji 🚀 are fine'])
      expect(findControl(text), text).toEqual([]);
    const found = scanEngram({ ...doc('ENG-X-2026-0101-001', 'fine'), rationale: 'see \u001b]0;title\u0007' } as never);
    expect(found).toEqual([expect.objectContaining({ kind: 'control', rule: 'terminal escape sequence', field: 'rationale' })]);
  });

  it('preview reports them; install holds the engram back as a candidate', async () => {
    const dir = writePack(join(tmp, 'ansi'), 'ansi', [
      doc('ENG-AAAA-2026-0101-001', 'Run the tests \u001b[2J\u001b[32mALL PASSED\u001b[0m'),
      doc('ENG-AAAA-2026-0101-002', 'Keep the window title \u001b]0;innocent\u0007 as it is'),
      doc('ENG-AAAA-2026-0101-003', 'An ordinary rule'),
    ]);
    const p = await previewPack(target, targetPacks, dir, targetKeys);
    expect(p.findings.map((f) => [f.id, f.kind, f.rule])).toEqual([
      ['ENG-AAAA-2026-0101-001', 'control', 'terminal escape sequence'],
      ['ENG-AAAA-2026-0101-002', 'control', 'terminal escape sequence'],
    ]);
    expect(p.warnings.join('\n')).toMatch(/ENG-AAAA-2026-0101-001 holds terminal control characters .*it installs as a candidate/);
    const r = await install(dir, true);
    expect(r.findings).toHaveLength(2);
    expect(r.candidates.sort()).toEqual([r.id_map['ENG-AAAA-2026-0101-001'], r.id_map['ENG-AAAA-2026-0101-002']].sort());
    expect((await target.get(r.id_map['ENG-AAAA-2026-0101-003']!))!.status).toBe('active');
    expect((await target.get(r.id_map['ENG-AAAA-2026-0101-001']!))!.status).toBe('candidate');
  });
});

// ------------------------------------------------------------- 4. ids, provenance and sync

describe('installed copies never displace their originals', () => {
  let server: GitHttpServer;
  beforeAll(async () => {
    server = await startGitHttpServer();
  });
  afterAll(async () => server?.close());

  it("store B installs A's pack and both sync through one remote: A keeps its own engram, and gets B's copy beside it", async () => {
    const { url, dir: bare } = server.createRepo('shared');
    const original = await pub(source, 'Run the integration tests before every release');
    const originalText = readFileSync(join(source.root, 'engrams', `${original}.yaml`), 'utf8');
    const pack = await exportFrom(source, 'testing');
    source.close();
    expect((await syncStores(source.root, { remote: url })).primary).toMatchObject({ pushed: true });

    // B trusts A's key, installs, then syncs with the same remote.
    await targetKeys.trust(pack.signer!, 'alice', new Date());
    const r = await install(pack.path);
    const copy = r.id_map[original]!;
    expect(copy).not.toBe(original);
    expect(copy.split('-')[1]).toBe(target.idPrefix());
    expect(await target.get(copy)).toMatchObject({
      scope: 'pack:testing',
      pack: 'testing',
      provenance: { origin: 'pack testing by alice', chain: [original] },
    });
    target.close();
    expect((await syncStores(target.root, { remote: url })).primary).toMatchObject({ pushed: true });
    await syncStores(source.root);
    source = await LocalStore.open(source.root);
    target = await LocalStore.open(target.root);

    expect(readFileSync(join(source.root, 'engrams', `${original}.yaml`), 'utf8')).toBe(originalText);
    expect(await source.get(original)).toMatchObject({ scope: 'global' });
    expect((await source.get(original))!.pack ?? null).toBeNull();
    expect(await source.get(copy)).toMatchObject({ scope: 'pack:testing', provenance: { chain: [original] } });
    // The creator key never leaves the machine.
    const tree = execFileSync('git', ['-C', bare, 'ls-tree', '-r', '--name-only', 'main'], { encoding: 'utf8' });
    expect(tree).toContain(`engrams/${original}.yaml`);
    expect(tree).not.toContain(KEYS_FILE);
    expect(readFileSync(join(source.root, '.gitignore'), 'utf8').split('\n')).toContain(KEYS_FILE);

    // B, holding the original now, reinstalls: its copy is updated in place, nothing duplicated.
    const again = await install(pack.path);
    expect(again).toMatchObject({ action: 'updated', created: [], unchanged: [copy], id_map: { [original]: copy } });
  }, 60_000);

  it("maps relations between the pack's own engrams to the ids they get here", async () => {
    const a = await pub(source, 'Prefer small pull requests');
    const b = await pub(source, 'Split pull requests over 400 lines');
    await source.write(async (tx) => {
      const e = (await tx.get(b))!;
      e.relations = { broader: [a] };
      await tx.put(e);
    });
    await targetKeys.trust((await sourceKeys.signer()).publicKey, 'alice', new Date());
    const r = await install((await exportFrom(source, 'prs')).path);
    expect((await target.get(r.id_map[b]!))!.relations?.broader).toEqual([r.id_map[a]]);
  });
});

// ------------------------------------------------------------------------- 5. signatures

describe('signed packs', () => {
  it('the first export makes a creator key kept on this machine only; the exporter trusts its own packs', async () => {
    await pub(source, 'Use feature flags for risky changes');
    expect(existsSync(join(source.root, KEYS_FILE))).toBe(false);
    const r = await exportFrom(source, 'flags');
    expect(existsSync(join(source.root, KEYS_FILE))).toBe(true);
    expect(statSync(join(source.root, KEYS_FILE)).mode & 0o077).toBe(0);
    expect(readFileSync(join(source.root, '.gitignore'), 'utf8').split('\n')).toContain(KEYS_FILE);
    expect(r.signer).toBe(await sourceKeys.ownKey());
    expect((await exportFrom(source, 'flags2')).signer).toBe(r.signer); // the same key every time
    const own = await previewPack(source, new FilePackRegistry(source.root), r.path, sourceKeys);
    expect(own.signature).toEqual({ status: 'trusted', signer: r.signer, signer_label: 'you', problems: [] });
    expect(own.warnings).toEqual([]);
  });

  it('installs a pack signed by an untrusted key only when allowed, and without asking once the key is trusted', async () => {
    const id = await pub(source, 'Pin dependency versions');
    const r = await exportFrom(source, 'deps');
    const p = await previewPack(target, targetPacks, r.path, targetKeys);
    expect(p.signature).toEqual({ status: 'untrusted', signer: r.signer, signer_label: null, problems: [] });
    expect(p.warnings).toContain(
      `the pack is signed by ${r.signer}, a key you do not trust: check it with its creator, then svc packs trust ${r.signer} (or install with --allow-untrusted)`,
    );

    const err = await refusal(install(r.path));
    expect(err.kind).toBe('conflict');
    expect(err.message).toMatch(
      /^pack "deps" at .* is signed by ed25519:\S+…, a key you do not trust; it was not installed: check the key with its creator and run svc packs trust ed25519:\S+, or allow it/,
    );
    expect(await target.stats()).toMatchObject({ engrams: 0, packs: 0 });

    const allowed = await install(r.path, true);
    expect(allowed.signature.status).toBe('untrusted');
    expect(allowed.warnings[0]).toBe(`installed a pack signed by ${r.signer}, a key you do not trust (allowed for this install)`);
    expect(allowed.created).toEqual([allowed.id_map[id]]);

    await targetKeys.trust(r.signer!, 'alice', new Date());
    expect((await targetKeys.trusted()).map((k) => [k.key, k.label])).toEqual([[r.signer, 'alice']]);
    expect((await install(r.path)).signature).toMatchObject({ status: 'trusted', signer_label: 'alice' });
    await targetKeys.untrust(r.signer!);
    expect((await refusal(install(r.path))).message).toMatch(/a key you do not trust/);
    expect((await refusal(sourceKeys.untrust(r.signer!))).message).toMatch(/your own key/);
  });

  it('installs an unsigned pack only when allowed', async () => {
    const dir = writePack(join(tmp, 'plain'), 'plain', [doc('ENG-AAAA-2026-0101-001', 'Unsigned rule')]);
    expect((await previewPack(target, targetPacks, dir, targetKeys)).signature).toMatchObject({ status: 'unsigned', signer: null });
    expect((await refusal(install(dir))).message).toMatch(
      /^pack "plain" at .* is not signed, so nothing says who made it; it was not installed/,
    );
    const r = await install(dir, true);
    expect(r.created).toHaveLength(1);
    expect(r.warnings[0]).toBe('installed an unsigned pack (allowed for this install): nothing says who made it');
  });

  it('refuses, even when untrusted packs are allowed, a pack edited after signing and resealed with a fresh hash', async () => {
    const id = await pub(source, 'Keep functions short');
    await pub(source, 'Name tests after behaviour');
    await targetKeys.trust((await sourceKeys.signer()).publicKey, 'alice', new Date());
    const fresh = async (name: string): Promise<string> => (await exportFrom(source, name)).path;

    // An engram edited, the integrity hash recomputed: the integrity check passes, the signature does not.
    const edited = await fresh('edited');
    const file = join(edited, 'engrams', `${id}.yaml`);
    writeFileSync(file, readFileSync(file, 'utf8').replace('Keep functions short', 'Keep functions long'));
    reseal(edited);
    const p = await previewPack(target, targetPacks, edited, targetKeys);
    expect(p.integrity.ok).toBe(true);
    expect(p.signature.status).toBe('invalid');
    expect(p.signature.problems.join('\n')).toMatch(/the signature in pack\.yaml does not match its content/);
    expect(p.signature.problems.join('\n')).toContain(`engrams/${id}.yaml does not match its signature`);
    expect(p.warnings[0]).toMatch(/^signature check failed, install will refuse this pack/);
    for (const allow of [false, true]) {
      const err = await refusal(install(edited, allow));
      expect(err.message).toMatch(/^pack "edited" at .* failed its signature check and was not installed/);
      expect(err.details.join('\n')).toMatch(/does not match its content/);
    }

    // The manifest alone changed (a new name would let a signed pack pose as another).
    const renamed = await fresh('renamed');
    reseal(renamed, { description: 'Now with a different description' });
    expect((await refusal(install(renamed, true))).message).toMatch(/failed its signature check/);

    // The signature stripped off: it is an unsigned pack, never a trusted one.
    const stripped = await fresh('stripped');
    const m = parse(readFileSync(join(stripped, 'pack.yaml'), 'utf8'));
    delete m.signer;
    delete m.signature;
    writeFileSync(join(stripped, 'pack.yaml'), stringify(m));
    expect((await refusal(install(stripped))).message).toMatch(/is not signed/);

    // Re-signed by someone else: it verifies, under a key nobody trusts.
    const resigned = await fresh('resigned');
    const mallory = pemSigner(generateSigningKey().privatePem);
    resign(resigned, mallory);
    const check = await previewPack(target, targetPacks, resigned, targetKeys);
    expect(check.signature).toMatchObject({ status: 'untrusted', signer: mallory.publicKey });
    expect(await target.stats()).toMatchObject({ engrams: 0, packs: 0 });
  });
});

/** Signs a pack's engrams and manifest with another key, as someone passing it off as theirs would. */
function resign(dir: string, signer: PackSigner): void {
  for (const f of readdirSync(join(dir, 'engrams'))) {
    const path = join(dir, 'engrams', f);
    const value = parse(readFileSync(path, 'utf8'));
    delete value.provenance.signature;
    value.provenance.signature = engramSignature(signer, value);
    writeFileSync(path, stringify(value));
  }
  reseal(dir, { signer: signer.publicKey });
  const manifest = parse(readFileSync(join(dir, 'pack.yaml'), 'utf8'));
  delete manifest.signature;
  writeFileSync(join(dir, 'pack.yaml'), stringify({ ...manifest, signature: signer.sign(manifestPayload(manifest)) }));
}

// ------------------------------------------------------------------------------ 6. layout

describe('pack code layout', () => {
  const root = join(import.meta.dirname, '..', '..');
  const sources = (dir: string): string[] =>
    readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.split('/').includes('test'))
      .map((f) => join(dir, f));

  it('keeps install, export, preview/list/uninstall and discover in their own files, and benchmarks out of the engine', async () => {
    expect(existsSync(join(root, 'engine/ops/packs/bench.ts'))).toBe(false);
    expect(existsSync(join(root, 'scripts/bench/packs.ts'))).toBe(true);
    for (const f of sources('engine')) expect(readFileSync(join(root, f), 'utf8'), f).not.toMatch(/from '[^']*(bench\/|\/bench\.js)/);
    const ops: Record<string, string[]> = {
      'install.ts': ['installPack'],
      'export.ts': ['exportPack'],
      'manage.ts': ['previewPack', 'listPacks', 'uninstallPack'],
      'discover.ts': ['discoverPacks'],
    };
    for (const [file, fns] of Object.entries(ops)) {
      const text = readFileSync(join(root, 'engine/ops/packs', file), 'utf8');
      for (const fn of fns) expect(text, `${file} defines ${fn}`).toMatch(new RegExp(`export async function ${fn}\\(`));
    }
    // ops/packs/packs.ts only gathers them.
    expect(readFileSync(join(root, 'engine/ops/packs/packs.ts'), 'utf8')).not.toMatch(/\bfunction\b/);
    expect((await listPacks(targetPacks)).count).toBe(0);
  });
});
