import { SvcError } from '../../engine/errors.js';
import { makeOutput, openStore, parseArgs } from '../../engine/cli/cli-kit.js';
import { embedderFor } from '../embedding.js';

const HELP = `
  Usage
    svc sync --full

  --full drops the derived index and rebuilds it from the YAML files, then embeds every
  engram when the model is available. (Git pull and push between machines arrive later.)`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { full: { type: 'boolean', default: false } });
  const out = makeOutput(cli.flags);
  if (!cli.flags.full || cli.input.length > 0) {
    throw new SvcError('invalid', 'git sync (pull and push) is not available yet in this version; svc sync --full rebuilds the index');
  }
  const store = await openStore(cli.flags, 'fast', out);
  try {
    try {
      await store.rebuild();
    } catch (err) {
      out.warn(`the index rebuild failed: ${(err as Error).message}`);
      throw new SvcError('storage', `index rebuild failed; the YAML files are untouched: ${(err as Error).message}`);
    }
    for (const w of store.warnings.splice(0)) out.warn(w);
    const stats = await store.stats();
    const dense = await embedderFor(store, out, { fast: cli.flags.fast, download: true, warn: true });
    const embedded = dense?.state === 'ready' ? await store.embedPending(dense.embedder) : 0;
    const vector = dense?.state === 'ready' ? `embedded ${embedded} engrams` : `vectors unavailable: ${dense?.reason ?? 'skipped (--fast)'}`;
    out.result({ rebuilt: true, engrams: stats.engrams, episodes: stats.episodes, quarantined: store.quarantined().length, embedded, vector }, () =>
      `Rebuilt the index: ${stats.engrams} engrams, ${stats.episodes} episodes; ${vector}`,
    );
    return 0;
  } finally {
    store.close();
  }
}
