import { homedir } from 'node:os';
import type { EngramStore, SearchIndex } from '../../backend.js';
import type { EmbedderState } from '../../embed/embedder.js';
import { contentHash } from '../../model/content-hash.js';
import { detectPolarity } from '../../model/polarity.js';
import { invalid } from '../../errors.js';
import { recall } from '../recall.js';
import { contentTokens, jaccard } from '../../search/text-overlap.js';
import { round, shellQuote } from '../../text.js';
import type { AuditSource, HostMemory } from '../host-memory.js';
import { missingReferences, ProjectFiles } from '../project-references.js';
import { conflictReason, sharesKeyWord, snapshotReason } from './heuristics.js';

// audit: a content-layer health check of an agent host's working memory (the notes a host keeps
// for itself, e.g. Claude Code's CLAUDE.md files and auto memory). Each entry is classified:
//
//   duplicate  already stored: same content hash as a live engram, embedding cosine above 0.9,
//              or content-word overlap of 0.75 or more            -> delete it from memory
//   conflict   contradicts a stored engram: opposite polarity on the same subject ("always X" vs
//              "never X"), a swapped preference ("use A, not B" vs "use B"), or the same rule
//              with one choice swapped ("indent with tabs" vs "indent with spaces")
//                                                                  -> settle it (supersede or forget)
//   orphan     names a file, path or code symbol that does not exist in the project
//                                                                  -> fix the reference or delete it
//   snapshot   a point-in-time fact: dates, versions, "currently", "as of", status updates
//                                                                  -> delete it (or capture it as an episode)
//   durable    a lasting rule or fact not stored yet               -> svc learn "..."
//
// The first matching class wins, in that order. Everything is local and deterministic: no LLM.

export const AUDIT_CLASSES = ['conflict', 'duplicate', 'snapshot', 'orphan', 'durable'] as const;
export type AuditClass = (typeof AUDIT_CLASSES)[number];

export const DEFAULT_AUDIT_LIMIT = 5;

export const DUPLICATE_COSINE = 0.9;
export const DUPLICATE_OVERLAP = 0.75;
/** Below this overlap (and without a close vector) an engram is about something else. */
const SUBJECT_OVERLAP = 0.3;
const SUBJECT_COSINE = 0.75;

export interface RelatedEngram {
  id: string;
  statement: string;
  score: number;
  cosine?: number;
  overlap: number;
}

export interface AuditFinding {
  text: string;
  file?: string;
  line?: number;
  id?: string;
  class: AuditClass;
  /** Why it got its class, in words. */
  reason: string;
  /** The next step, short: learn, delete from memory, supersede, fix or delete. */
  action: 'learn' | 'delete from memory' | 'supersede or delete' | 'fix or delete';
  /** The next step as a sentence. */
  suggestion: string;
  /** A command that carries the step out, when there is one. */
  command?: string;
  /** The engram it duplicates or contradicts. */
  engram?: { id: string; statement: string };
  /** For orphans: the references that do not exist. */
  missing?: string[];
  /** Engrams recall found for the entry (up to --limit). */
  related: RelatedEngram[];
}

export interface AuditResult {
  source: AuditSource;
  project_root: string;
  files: string[];
  looked_in: string[];
  entries: number;
  counts: Record<AuditClass, number>;
  findings: AuditFinding[];
  search: 'hybrid' | 'bm25';
  warnings: string[];
}

// ------------------------------------------------------------------------------ audit

export interface AuditOptions {
  /** Engrams recalled per entry (default 5). */
  limit?: number;
  fast?: boolean;
  embedder?: EmbedderState;
  /** For ~ paths (default os.homedir()). */
  home?: string;
  now?: Date;
}

export async function audit(backend: EngramStore & SearchIndex, memory: HostMemory, opts: AuditOptions = {}): Promise<AuditResult> {
  const limit = opts.limit ?? DEFAULT_AUDIT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw invalid(`--limit must be a positive whole number (got ${limit})`);
  const project = new ProjectFiles(memory.project_root, new Set(memory.files));
  const home = opts.home ?? homedir();
  const counts = Object.fromEntries(AUDIT_CLASSES.map((c) => [c, 0])) as Record<AuditClass, number>;
  const findings: AuditFinding[] = [];
  let hybrid = false;

  for (const entry of memory.entries) {
    const text = entry.text;
    const tokens = contentTokens(text);
    const result = await recall(backend, text, { limit, fast: opts.fast, embedder: opts.embedder, now: opts.now });
    if (result.legs.vector === 'ran') hybrid = true;
    const related: RelatedEngram[] = result.hits
      .filter((h) => h.engram.status !== 'retired')
      .map((h) => ({
        id: h.engram.id,
        statement: h.engram.statement,
        score: h.score,
        ...(h.vector ? { cosine: h.vector.cosine } : {}),
        overlap: round(jaccard(tokens, contentTokens(h.engram.statement)), 3),
      }));
    const docs = new Map(result.hits.map((h) => [h.engram.id, h.engram]));
    const base = {
      text,
      ...(entry.file ? { file: entry.file } : {}),
      ...(entry.line ? { line: entry.line } : {}),
      ...(entry.id ? { id: entry.id } : {}),
      related,
    };
    const quoted = shellQuote(text);
    let finding: AuditFinding;

    // The same statement is a duplicate; then a contradiction wins over a near-identical wording
    // ("use A, not B" and "use B, not A" share every word).
    const exact = (await backend.findByHash(contentHash(text))).find((e) => e.status !== 'retired');
    const clash = exact
      ? undefined
      : related
          .filter((r) => r.overlap >= SUBJECT_OVERLAP || (r.cosine ?? 0) >= SUBJECT_COSINE || sharesKeyWord(text, r.statement))
          .map((r) => ({ r, why: conflictReason(text, docs.get(r.id)!) }))
          .find((c) => c.why !== null);
    const near = exact || clash ? undefined : related.find((r) => (r.cosine ?? 0) > DUPLICATE_COSINE || r.overlap >= DUPLICATE_OVERLAP);
    const twin = exact ? { id: exact.id, statement: exact.statement } : near ? { id: near.id, statement: near.statement } : undefined;

    if (twin) {
      const how = exact
        ? 'the same statement'
        : near!.cosine !== undefined && near!.cosine > DUPLICATE_COSINE
          ? `embedding cosine ${near!.cosine}`
          : `word overlap ${near!.overlap}`;
      finding = {
        ...base,
        class: 'duplicate',
        reason: `already stored as ${twin.id} (${how})`,
        action: 'delete from memory',
        suggestion: `delete this entry from the host's memory: svc already injects ${twin.id}`,
        engram: twin,
      };
    } else if (clash) {
      const id = clash.r.id;
      finding = {
        ...base,
        class: 'conflict',
        reason: `contradicts ${id}: ${clash.why}`,
        action: 'supersede or delete',
        suggestion: `decide which holds. If this entry does: svc learn ${quoted} --supersedes ${id}, then svc forget ${id}. If ${id} does: delete this entry from memory`,
        command: `svc learn ${quoted} --supersedes ${id}`,
        engram: { id, statement: clash.r.statement },
      };
    } else {
      const missing = missingReferences(entry, project, home);
      const snap = snapshotReason(text);
      if (missing.length) {
        finding = {
          ...base,
          class: 'orphan',
          reason: `names ${missing.map((m) => `"${m}"`).join(', ')}, not found in ${memory.project_root}`,
          action: 'fix or delete',
          suggestion: `fix the reference if it moved, else delete this entry from memory`,
          missing,
        };
      } else if (snap) {
        finding = {
          ...base,
          class: 'snapshot',
          reason: `a point-in-time fact: ${snap}`,
          action: 'delete from memory',
          suggestion: `delete this entry from memory: it will go stale. To keep it as history: svc capture ${quoted}`,
          command: `svc capture ${quoted}`,
        };
      } else {
        const close = related.find((r) => r.overlap >= SUBJECT_OVERLAP || (r.cosine ?? 0) >= SUBJECT_COSINE);
        finding = {
          ...base,
          class: 'durable',
          reason: `a lasting ${detectPolarity(text) ? 'rule' : 'fact'} not in svc yet${close ? ` (related: ${close.id})` : ''}`,
          action: 'learn',
          suggestion: `learn it, then delete it from the host's memory: svc injects it from now on`,
          command: `svc learn ${quoted}`,
        };
      }
    }
    counts[finding.class] += 1;
    findings.push(finding);
  }

  return {
    source: memory.source,
    project_root: memory.project_root,
    files: memory.files,
    looked_in: memory.looked_in,
    entries: memory.entries.length,
    counts,
    findings,
    search: hybrid ? 'hybrid' : 'bm25',
    warnings: memory.warnings,
  };
}
