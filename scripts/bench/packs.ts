import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '../../engine/store/local-store.js';
import { systemContext } from '../../engine/ops/context.js';
import { buildEngram } from '../../engine/ops/learn.js';
import { exportPack, FilePackKeys, FilePackRegistry, installPack } from '../../engine/ops/packs/packs.js';

// Pack throughput: 1,000 public engrams exported (signed) from one temp store and installed
// (signatures verified) into another that trusts the exporter's key, each timed. Benchmark
// code lives under scripts/bench/, never in the engine's production modules.

const TOPICS = ['testing', 'builds', 'logging', 'errors', 'deploys', 'reviews', 'naming', 'caching', 'queries', 'security'];
const VERBS = ['Prefer', 'Always keep', 'Never skip', 'Document', 'Review', 'Measure'];

export async function benchPacks(dir: string, count = 1000): Promise<{ export_1000_ms: number; install_1000_ms: number }> {
  mkdirSync(dir, { recursive: true });
  const source = await LocalStore.open(join(dir, 'source-store'));
  const target = await LocalStore.open(join(dir, 'target-store'));
  try {
    const now = new Date();
    const at = now.toISOString();
    await source.write(async (tx) => {
      for (let i = 0; i < count; i++) {
        const topic = TOPICS[i % TOPICS.length]!;
        const statement = `${VERBS[i % VERBS.length]} the ${topic} checklist item ${i} for service module ${Math.floor(i / 10)}`;
        const source = { scope: 'project:bench', session_id: null, stored_at: at };
        const draft = buildEngram(
          { statement, type: 'procedural', scope: 'project:bench', visibility: 'public', domain: `eng.${topic}`, tags: [topic, 'bench'] },
          at,
          source,
        );
        const doc = { ...draft, id: await tx.allocateId('ENG', now, 'project:bench') };
        await tx.put(doc);
      }
    });
    const packDir = join(dir, 'pack');
    const signer = await new FilePackKeys(source.root).signer();
    const trust = new FilePackKeys(target.root);
    await trust.trust(signer.publicKey, 'bench source', now);
    let t0 = performance.now();
    const exported = await exportPack(source, { name: 'bench', output: packDir }, systemContext, signer);
    const exportMs = performance.now() - t0;
    t0 = performance.now();
    const installed = await installPack(target, new FilePackRegistry(target.root), packDir, systemContext, { trust });
    const installMs = performance.now() - t0;
    if (exported.engram_count !== count || installed.created.length !== count) {
      throw new Error(`bench: exported ${exported.engram_count} and installed ${installed.created.length} of ${count} engrams`);
    }
    return { export_1000_ms: Math.round(exportMs), install_1000_ms: Math.round(installMs) };
  } finally {
    source.close();
    target.close();
  }
}
