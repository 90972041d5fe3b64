import { rerankerFolder } from '../../rerank/reranker.js';
import { writeTinyReranker } from '../../rerank/tiny-reranker.js';

// Makes reranking visible to a front-end test: BM25 ranks FULL first for QUERY (it holds every
// query word), and an installed cross-encoder that prefers the weaker match puts PARTIAL first.

export const RERANK_QUERY = 'deploy staging servers';
export const FULL = 'Deploy staging servers with the blue green script';
export const PARTIAL = 'Deploy docs on Mondays';
export const RERANKER = 'ms-marco-minilm-l6';

/** Installs the inverted tiny cross-encoder as RERANKER in `root`'s models/ folder. */
export function installInvertedReranker(root: string): void {
  writeTinyReranker(rerankerFolder(root, RERANKER), {
    words: ['deploy', 'staging', 'servers', 'blue', 'green', 'script', 'docs', 'mondays'],
    invert: true,
  });
}
