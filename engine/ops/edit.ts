import type { EngramStore } from '../backend.js';
import type { Commitment, EngramDoc, EngramType, Visibility } from '../model/engram-types.js';
import { contentHash } from '../model/content-hash.js';
import { detectPolarity } from '../model/polarity.js';
import { invalid, notFound } from '../errors.js';
import type { OpContext } from './context.js';
import { assertNoSecrets } from '../model/secret-guard.js';
import { isSharedScope } from '../model/scope.js';

// Editing an engram in place. The rules for a statement live here and only here: what svc
// derives from it (content hash, polarity), and what a material change records (engram_version
// goes up, previous_version_ref points at the version it replaced). Learn, pack install and
// bulk seeding build new engrams with the same helpers.

/**
 * The most characters a statement holds. An engram is one assertion; a longer text belongs in a
 * rationale or an episode. (Files written before the cap are read as they are.)
 */
export const MAX_STATEMENT_CHARS = 4000;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a statement cannot be stored, in one line, or null when it can. */
export function statementProblem(statement: string): string | null {
  const s = statement.trim();
  if (s === '') return 'statement: must not be empty';
  if (s.length > MAX_STATEMENT_CHARS)
    return `statement: at most ${MAX_STATEMENT_CHARS} characters (got ${s.length}); keep one assertion per engram and put the detail in its rationale`;
  if (s.includes('\u0000')) return 'statement: must not hold NUL characters (binary data?)';
  if (LONE_SURROGATE.test(s)) return 'statement: is not valid Unicode text (a lone surrogate)';
  return null;
}

/** What svc derives from a statement: its dedup hash and whether it says do or don't. */
export function statementFields(statement: string): Pick<EngramDoc, 'content_hash' | 'polarity'> {
  return { content_hash: contentHash(statement), polarity: detectPolarity(statement) };
}

/** The fields a new engram starts with for its statement. */
export function newStatementFields(statement: string): Pick<EngramDoc, 'statement' | 'content_hash' | 'polarity' | 'engram_version'> {
  return { statement, ...statementFields(statement), engram_version: 1 };
}

/**
 * Replaces an engram's statement. A material change (another normalized text) bumps
 * engram_version and records the version it replaced; a change of case or spacing only keeps
 * the version. Returns whether the statement changed at all.
 */
export function changeStatement(e: EngramDoc, statement: string, now: string): boolean {
  const problem = statementProblem(statement);
  if (problem) throw invalid(problem, [problem]);
  const next = statement.trim();
  if (next === e.statement) return false;
  const derived = statementFields(next);
  if (derived.content_hash !== (e.content_hash ?? contentHash(e.statement))) {
    const version = e.engram_version ?? 1;
    e.engram_version = version + 1;
    e.previous_version_ref = { event_id: `${e.id}@${version}`, changed_at: now };
  }
  e.statement = next;
  Object.assign(e, derived);
  return true;
}

export interface EngramEdit {
  statement?: string;
  type?: EngramType;
  scope?: string;
  tags?: string[];
  visibility?: Visibility;
  commitment?: Commitment;
  summary?: string;
  contraindications?: string[];
  /** null removes it. */
  domain?: string | null;
  /** null removes it. */
  rationale?: string | null;
  status?: 'active' | 'dormant';
}

export interface EditOptions {
  /** Called in the write lock with the engram before and after the edit; throws to refuse it. */
  authorize?(before: EngramDoc, after: EngramDoc): void;
}

/**
 * Edits fields of a live engram under the write lock; a retired one must be learned again. New
 * text that looks like a secret is refused where the backend keeps none, and on a local store
 * when the engram's scope is shared (learn would demote it to `local`; an edit never moves an
 * engram behind the user's back).
 */
export async function editEngram(
  backend: EngramStore,
  id: string,
  edit: EngramEdit,
  ctx: OpContext,
  opts: EditOptions = {},
): Promise<EngramDoc> {
  const newText = { statement: edit.statement, rationale: edit.rationale ?? undefined, tags: edit.tags, domain: edit.domain ?? undefined };
  if (backend.secretPolicy === 'refuse') assertNoSecrets(newText);
  return backend.write(async (tx) => {
    const before = await tx.get(id);
    if (!before) throw notFound(`no engram ${id}`);
    if (before.status === 'retired') throw invalid(`${id} is retired; learn the statement again to bring it back`, ['id: retired']);
    const now = ctx.now().toISOString();
    const next: EngramDoc = structuredClone(before);
    const { statement, ...rest } = edit;
    for (const [k, v] of Object.entries(rest)) {
      if (v === undefined) continue;
      if (v === null) delete (next as Record<string, unknown>)[k];
      else (next as Record<string, unknown>)[k] = v;
    }
    if (statement !== undefined) changeStatement(next, statement, now);
    if (edit.commitment === 'locked' && before.commitment !== 'locked') next.locked_at = now;
    if (isSharedScope(next.scope)) assertNoSecrets(newText);
    opts.authorize?.(before, next);
    await tx.put(next, { action: 'updated', at: now, session: ctx.sessionId ?? undefined });
    return next;
  });
}
