import { z } from './sdk-deps.js';
import { ANCHOR_RELEVANCES, ENGRAM_STATUSES, ENGRAM_TYPES, VISIBILITIES } from '../model/engram-types.js';
import { checkScope } from '../model/scope.js';
import { FEEDBACK_SIGNALS } from '../ops/feedback.js';
import { MAX_STATEMENT_CHARS } from '../ops/edit.js';

// Argument schemas shared by several tools. Every field says what it is; every rule has a
// message that names it, so a refused call tells the agent exactly what to fix. Every string and
// list is bounded, at the caps of the hub's REST API (hub/openapi/openapi.yaml): the work a call
// makes (tokenizing a query, ranking its terms) must not grow with whatever fits in a message.

// A search query (REST: recall's query); a task, a rationale, a summary line (REST: inject's
// task, an engram's rationale). Defined with the CLI's, in one place.
import { QUERY_MAX, TASK_MAX } from '../search/query-limits.js';
export { QUERY_MAX, TASK_MAX };
/** Text handed in to extract from (svc_ingest's content). */
export const CONTENT_MAX = 100_000;

const maxChars = (max: number) => ({ error: `must be at most ${max} characters` });

export const text = (description: string, max = TASK_MAX) =>
  z.string().trim().min(1, { error: 'must not be empty' }).max(max, maxChars(max)).describe(description);
export const optionalText = (description: string, max = TASK_MAX) => text(description, max).optional();

export const engramId = (description = 'Engram id, e.g. ENG-KQ7M-2026-0101-001.') =>
  z
    .string()
    .trim()
    .max(200, maxChars(200))
    .regex(/^(ENG|ABS|META)-[A-Za-z0-9-]+$/, { error: 'must be an engram id starting ENG-, ABS- or META- (e.g. ENG-KQ7M-2026-0101-001)' })
    .describe(description);

export const scope = (
  description = 'Scope, `kind:path` or a bare kind: global, local, project:<name>, user:<name>, group:<path>, org:<org>.',
) =>
  z
    .string()
    .trim()
    .max(200, maxChars(200))
    .superRefine((value, ctx) => {
      const bad = checkScope(value);
      if (bad) ctx.addIssue({ code: 'custom', message: bad.replace(/^scope: /, '') });
    })
    .describe(description);

export const domain = (description = 'Topic, a dotted path such as lang.typescript.') =>
  z
    .string()
    .trim()
    .max(200, maxChars(200))
    .regex(/^\S+$/, { error: 'must be a dotted path without whitespace (e.g. lang.typescript)' })
    .describe(description);

export const tags = (description = 'Tags, e.g. ["testing", "ci"], at most 50.') =>
  z
    .array(z.string().trim().min(1, { error: 'must not be empty' }).max(100, maxChars(100)))
    .max(50, { error: 'must hold at most 50 tags' })
    .describe(description);

export const limit = (fallback: number, max: number, what = 'results') =>
  z
    .int({ error: 'must be a whole number' })
    .min(1, { error: 'must be at least 1' })
    .max(max, { error: `must be at most ${max}` })
    .default(fallback)
    .describe(`Maximum number of ${what} (default ${fallback}, at most ${max}).`);

export const fast = () => z.boolean().default(false).describe('BM25 only: skip the embedding model (faster, no semantic matches).');

export const session = () =>
  z
    .string()
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(200, maxChars(200))
    .describe('Session id from svc_session_start; the call is recorded as part of that session.');

export const engramType = () => z.enum(ENGRAM_TYPES).describe(`Kind of knowledge: ${ENGRAM_TYPES.join(', ')} (default behavioral).`);
export const engramStatus = () => z.enum(ENGRAM_STATUSES).describe(`Lifecycle state: ${ENGRAM_STATUSES.join(', ')}.`);
export const visibility = () =>
  z.enum(VISIBILITIES).describe('Who may see it: private (default; never exported in packs), public or template.');
export const signal = () =>
  z.enum(FEEDBACK_SIGNALS).describe('positive: it helped (strengthens future recall); negative: it misled (weakens it); neutral.');

export const isoDate = (description: string) =>
  z
    .string()
    .trim()
    .max(100, maxChars(100))
    .refine((v) => !Number.isNaN(Date.parse(v)), { error: 'must be a date (YYYY-MM-DD) or an ISO 8601 timestamp' })
    .describe(description);

const knowledgeAnchor = z.strictObject({
  path: text('File path or URL the engram is anchored to.', 2000),
  relevance: z.enum(ANCHOR_RELEVANCES).optional().describe('primary, supporting (default) or example.'),
  snippet: z.string().max(200, { error: 'must be at most 200 characters' }).optional().describe('Excerpt, at most 200 characters.'),
});

const dualCoding = z
  .strictObject({
    example: z.string().min(1, { error: 'must not be empty' }).max(TASK_MAX, maxChars(TASK_MAX)).optional().describe('A concrete example.'),
    analogy: z.string().min(1, { error: 'must not be empty' }).max(TASK_MAX, maxChars(TASK_MAX)).optional().describe('An analogy.'),
  })
  .refine((v) => v.example !== undefined || v.analogy !== undefined, { error: 'needs example or analogy (or both)' });

/** The fields of one learning: svc_learn, svc_learn_batch items, svc_session_end learnings. */
export const learnFields = {
  statement: z
    .string()
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(MAX_STATEMENT_CHARS, { error: `at most ${MAX_STATEMENT_CHARS} characters: one assertion per engram, the detail in its rationale` })
    .describe(
      `The learned statement: one short, self-contained rule or fact (at most ${MAX_STATEMENT_CHARS} characters), e.g. "Use pnpm, not npm, in this repo".`,
    ),
  type: engramType().optional(),
  scope: scope(
    'Where it applies. Without it: the project scope (.svc.yaml), else global. Secrets aimed at a shared scope are moved to "local".',
  ).optional(),
  domain: domain().optional(),
  tags: tags().optional(),
  rationale: z
    .string()
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(TASK_MAX, maxChars(TASK_MAX))
    .optional()
    .describe('Why it holds (searched too).'),
  source: z
    .string()
    .trim()
    .min(1, { error: 'must not be empty' })
    .max(1000, maxChars(1000))
    .optional()
    .describe('Where it came from, e.g. "code review of PR 42".'),
  supersedes: z
    .array(engramId())
    .max(20, { error: 'must name at most 20 engrams' })
    .optional()
    .describe('Ids of engrams this one replaces (a correction); they give way to it in injection and are not flagged as contradictions.'),
  visibility: visibility().optional(),
  abstract: z
    .string()
    .trim()
    .max(200, maxChars(200))
    .regex(/^ABS-[A-Za-z0-9-]+$/, { error: 'must be an abstraction id starting ABS-' })
    .optional()
    .describe('Id of the ABS- abstraction this engram instantiates.'),
  derived_from: engramId('Id of the parent engram.').optional(),
  knowledge_anchors: z
    .array(knowledgeAnchor)
    .max(50, { error: 'must hold at most 50 anchors' })
    .optional()
    .describe('Files or URLs the engram is about: [{"path", "relevance", "snippet"}].'),
  dual_coding: dualCoding.optional().describe('An example and/or an analogy that make the statement concrete.'),
};

export const learnItem = z.strictObject(learnFields);
export type LearnArgs = z.output<typeof learnItem>;
