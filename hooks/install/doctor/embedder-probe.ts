import { loadEmbedder } from '../../../engine/embed/fastembed-embedder.js';

// Run by `svc doctor` as a child process (node embedder-probe.js <store root>): a crash of the
// model loader (ONNX runtime) must not take doctor down. Prints one JSON line: the state.

const root = process.argv[2] ?? '';
let out: { state: string; model?: string; dimensions?: number; reason?: string };
try {
  const s = await loadEmbedder(root, { download: false, progress: false });
  out =
    s.state === 'ready'
      ? { state: 'ready', model: s.model, dimensions: s.embedder.dimensions }
      : { state: 'unavailable', model: s.model, reason: s.reason };
} catch (e) {
  out = { state: 'error', reason: String((e as Error)?.message ?? e).split('\n')[0] };
}
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
