import { describe, expect, it } from 'vitest';
import { contentTokens, overlapOf, words } from '../search/text-overlap.js';
import { contentWords } from '../ops/packs/duplicates.js';
import { contentWords as probeWords } from '../rerank/probes.js';

// One copy of the word rules: a pack's contradiction check, the tension scan and the reranker's
// probes split and fold words the same way (the pack check once stemmed "status" to "statu").
describe('word rules', () => {
  it('splits words once: NFKC folding, lowercase, letters and digits', () => {
    expect(words('Ｄeploy v2 — the API!')).toEqual(['deploy', 'v2', 'the', 'api']);
    expect(probeWords('Never deploy the API server on Fridays, never!')).toEqual(['never', 'deploy', 'api', 'server', 'fridays']);
  });

  it('folds plurals the same way for packs and tensions, and leaves "status" whole', () => {
    const statement = 'Never skip the status pages and the analysis of builds';
    expect([...contentTokens(statement)]).toEqual(['never', 'skip', 'status', 'page', 'analysis', 'build']);
    // The pack check drops polarity words and nothing else.
    expect([...contentWords(statement)]).toEqual(['skip', 'status', 'page', 'analysis', 'build']);
  });

  it('gives Jaccard overlap and the shared count from one function', () => {
    expect(overlapOf(new Set(['a', 'b']), new Set(['b', 'c']))).toEqual({ shared: 1, jaccard: 1 / 3 });
    expect(overlapOf(new Set(), new Set(['a']))).toEqual({ shared: 0, jaccard: 0 });
  });
});
