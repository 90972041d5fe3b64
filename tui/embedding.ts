import type { EmbedderState } from '../engine/embed/embedder.js';
import type { LocalBackend } from '../engine/store/local-backend.js';
import type { Output } from '../engine/cli/cli-kit.js';
import { oneLine } from '../engine/text.js';

// The dense leg for a command. Loading the model costs real time, so `--fast` never touches
// it, and learn only uses a model already on disk (the download belongs to the first hybrid
// recall). When vectors cannot run, a terminal gets one line saying so, once per failed download.

export async function embedderFor(
  store: LocalBackend,
  out: Output,
  opts: { fast: boolean; download: boolean; warn: boolean },
): Promise<EmbedderState | undefined> {
  if (opts.fast) return undefined;
  const { downloadFailure, modelPresent, selectedModel } = await import('../engine/embed/model-layout.js');
  const { loadEmbedder } = await import('../engine/embed/fastembed-embedder.js');
  if (!opts.download && !modelPresent(store.root, selectedModel())) return undefined;
  const state = await loadEmbedder(store.root, { download: opts.download, progress: process.stderr.isTTY === true });
  // One short line, and not again while a failed download waits for its next try (hourly):
  // JSON output (legs.vector_reason) and svc doctor carry the whole story.
  if (state.state === 'unavailable' && state.retryAt === undefined && opts.warn && process.stderr.isTTY) {
    const failed = downloadFailure(store.root, state.model); // written by the attempt that just failed
    out.warn(
      failed
        ? `BM25 only: the embedding model did not download (${oneLine(failed.error, 80)}); next try in an hour, or now with svc models pull`
        : `vector search unavailable, BM25 only: ${oneLine(state.reason, 160)}`,
    );
  }
  return state;
}
