import type { EngramStore, SearchIndex } from '../../backend.js';
import type { EngramDoc } from '../../model/engram-types.js';
import { invalid } from '../../errors.js';
import type { OpContext } from '../context.js';
import { learnBatch, type BatchItem } from '../import/batch-learn.js';
import { extractCandidates, type IngestCandidate } from './extract.js';

// Ingest: learns the statements a text holds. The extraction itself (pattern-based, no LLM: what
// counts as a rule, a decision, a procedure, in documents and in chats) is in ingest-extract.ts;
// this file gives each candidate its domain and learns them all in one write transaction.

export interface IngestInput {
  content: string;
  /** Where the text came from (recorded on every engram, with the section). */
  source?: string;
  scope?: string;
  /** Domain of every engram; a statement under a heading gets `<domain>.<section>`. */
  domain?: string;
  extract_only?: boolean;
}

export interface IngestItemResult extends IngestCandidate {
  /** created, duplicate (already known: reference count bumped), conflict or error. */
  action?: 'created' | 'duplicate' | 'conflict' | 'error';
  id?: string;
  scope?: string;
  domain?: string;
  reason?: string;
  warnings?: string[];
}

export interface IngestResult {
  format: 'document' | 'chat';
  extract_only: boolean;
  count: number;
  created: number;
  duplicate: number;
  conflict: number;
  error: number;
  candidates: IngestItemResult[];
  warnings: string[];
}

/** The domain of a candidate: the given domain, refined by its section. */
function domainOf(base: string | undefined, section: string | undefined): string | undefined {
  const parts = [base, section].filter((p): p is string => !!p);
  return parts.length ? parts.join('.') : undefined;
}

/** The candidates of `input.content` with their domains, as `svc ingest --extract-only` shows them; saves nothing. */
export function extractForIngest(input: IngestInput): IngestResult {
  const content = input.content.trim();
  if (content === '') throw invalid('the content is empty: pass the text to extract from');
  if (input.domain !== undefined && /\s/.test(input.domain))
    throw invalid(`--domain must be a dotted path without whitespace (got "${input.domain}")`);
  const { format, candidates } = extractCandidates(content);
  return {
    format,
    extract_only: input.extract_only === true,
    count: candidates.length,
    created: 0,
    duplicate: 0,
    conflict: 0,
    error: 0,
    candidates: candidates.map((c) => ({
      ...c,
      ...(domainOf(input.domain, c.section) ? { domain: domainOf(input.domain, c.section) } : {}),
    })),
    warnings: [],
  };
}

/**
 * Extracts candidates from `input.content` and (unless extract_only) learns them, all in one
 * write transaction, through learn(): same-scope duplicates bump the reference count as a second
 * `svc learn` would; a statement retired at the scope, or stored there with another type, is a
 * conflict and is left alone.
 */
export async function ingest(backend: EngramStore & SearchIndex, input: IngestInput, ctx: OpContext): Promise<IngestResult> {
  const result = extractForIngest(input);
  if (input.extract_only || result.count === 0) return result;

  const source = input.source ?? 'ingest';
  const items: BatchItem[] = result.candidates.map((c) => ({
    input: {
      statement: c.statement,
      type: c.type,
      scope: input.scope,
      domain: c.domain,
      tags: ['ingest', c.kind],
      source: c.context ? `${source} § ${c.context}` : c.speaker ? `${source} (${c.speaker})` : source,
    },
    polarity: c.polarity,
    details: { via: 'ingest', kind: c.kind, line: c.line },
  }));
  const outcomes = await learnBatch(backend, items, ctx, { onDuplicate: 'reference' });
  outcomes.forEach((o, i) => {
    const r = result.candidates[i]!;
    let e: EngramDoc | undefined;
    switch (o.action) {
      case 'created':
        e = o.engram;
        r.action = 'created';
        result.created += 1;
        break;
      case 'duplicate':
        e = o.existing;
        r.action = 'duplicate';
        r.reason = `already known as ${o.existing.id}; reference count now ${o.existing.reference_count ?? 1}`;
        result.duplicate += 1;
        break;
      case 'conflict':
        e = o.existing;
        r.action = 'conflict';
        r.reason = o.reason;
        result.conflict += 1;
        break;
      case 'error':
        r.action = 'error';
        r.reason = o.reason;
        result.error += 1;
        break;
    }
    if (e) {
      r.id = e.id;
      r.scope = e.scope;
    }
    if (o.action !== 'error' && o.warnings.length) {
      r.warnings = o.warnings;
      result.warnings.push(...o.warnings.map((w) => `line ${r.line}: ${w}`));
    }
  });
  return result;
}
