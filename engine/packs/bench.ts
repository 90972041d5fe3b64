import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { systemContext } from '../ops/context.js';
import { contentHash } from '../model/content-hash.js';
import { detectPolarity } from '../model/polarity.js';
import type { EngramDoc } from '../model/engram-schema.js';
import { exportPack, installPack } from '../ops/packs.js';
import { FilePackRegistry } from './registry.js';

// Pack throughput: 1,000 public engrams exported from one temp store and installed into
// another, each timed. Lives apart from ops/packs.ts so the operations never load the local
// store's SQLite themselves.

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
        const doc: EngramDoc = {
          id: await tx.allocateId('ENG', now),
          version: 2,
          status: 'active',
          type: 'procedural',
          scope: 'project:bench',
          visibility: 'public',
          statement,
          domain: `eng.${topic}`,
          tags: [topic, 'bench'],
          polarity: detectPolarity(statement),
          activation: { retrieval_strength: 0.7, storage_strength: 1, frequency: 0, last_accessed: at },
          feedback_signals: { positive: 0, negative: 0, neutral: 0 },
          temporal: { learned_at: at },
          content_hash: contentHash(statement),
          reference_count: 1,
          sources: [{ scope: 'project:bench', session_id: null, stored_at: at }],
          recurrence_count: 0,
          engram_version: 1,
          pinned: false,
        };
        await tx.put(doc);
      }
    });
    const packDir = join(dir, 'pack');
    let t0 = performance.now();
    const exported = await exportPack(source, { name: 'bench', output: packDir }, systemContext);
    const exportMs = performance.now() - t0;
    t0 = performance.now();
    const installed = await installPack(target, new FilePackRegistry(target.root), packDir, systemContext);
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
