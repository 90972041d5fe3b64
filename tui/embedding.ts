import type { EmbedderState } from '../engine/embed/embedder.js';
import type { LocalStore } from '../engine/store/local-store.js';
import type { Output } from '../engine/cli/cli-kit.js';

// The dense leg for a command. Loading the model costs real time, so `--fast` never touches
// it, and learn only uses a model already on disk (the download belongs to the first hybrid
// recall). When vectors cannot run, a terminal gets one line saying so.

export async function embedderFor(
  store: LocalStore,
  out: Output,
  opts: { fast: boolean; download: boolean; warn: boolean },
): Promise<EmbedderState | undefined> {
  if (opts.fast) return undefined;
  const { loadEmbedder, modelPresent, selectedModel } = await import('../engine/embed/fastembed-embedder.js');
  if (!opts.download && !modelPresent(store.root, selectedModel())) return undefined;
  const state = await loadEmbedder(store.root, { download: opts.download, progress: process.stderr.isTTY === true });
  if (state.state === 'unavailable' && opts.warn && process.stderr.isTTY) {
    out.warn(`vector search unavailable, BM25 only: ${state.reason}`);
  }
  return state;
}
