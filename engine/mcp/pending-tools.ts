import { z } from 'zod/v4';
import * as f from './fields.js';
import { defineTool, type AnyToolDef } from './types.js';

// Tools whose engine part does not exist yet. Each is registered with its final input schema
// (from the flags of the matching command in spec/cli.md), so clients see the real contract;
// a call is validated, then answers "<tool> is not available yet in this version". A tool gets a
// handler here (or moves to its own module) when its engine operation lands.

const path = (description: string) => f.text(description);
const optionalText = (description: string) => z.string().trim().min(1, { error: 'must not be empty' }).optional().describe(description);

// ------------------------------------------------------------------------------------- packs

const packsList = defineTool({
  name: 'svc_packs_list',
  title: 'List packs',
  description: 'Installed packs (named bundles of engrams with a manifest and an integrity hash): name, version, engram count, install date.',
  input: z.strictObject({}),
  destructive: false,
  readOnly: true,
});

const packsPreview = defineTool({
  name: 'svc_packs_preview',
  title: 'Preview pack',
  description: 'Inspect a pack folder without installing it: its manifest, its engrams, the integrity check, the security-scan results and warnings.',
  input: z.strictObject({ path: path('Folder of the pack (holding its manifest).') }),
  destructive: false,
  readOnly: true,
});

const packsInstall = defineTool({
  name: 'svc_packs_install',
  title: 'Install pack',
  description:
    'Install a pack from a folder: verifies its integrity hash, runs a security scan and reports conflicts with existing engrams (the pack still installs). Its engrams get scope pack:<name>.',
  input: z.strictObject({ path: path('Folder of the pack (holding its manifest).') }),
  destructive: false,
  readOnly: false,
});

const packsUninstall = defineTool({
  name: 'svc_packs_uninstall',
  title: 'Uninstall pack',
  description: 'Remove an installed pack and its engrams from the store.',
  input: z.strictObject({ name: f.text('Name of the installed pack (see svc_packs_list).') }),
  destructive: true,
  readOnly: false,
});

const packsExport = defineTool({
  name: 'svc_packs_export',
  title: 'Export pack',
  description:
    'Bundle matching engrams into a pack folder (default ~/svc-packs/<name>) with a manifest and an integrity hash. Engrams holding secrets and private-visibility engrams are left out and reported.',
  input: z.strictObject({
    name: f.text('Name of the new pack.'),
    domain: f.domain('Only engrams of this domain and its sub-domains.').optional(),
    scope: f.scope('Only engrams of this scope.').optional(),
    tags: f.tags('Only engrams carrying one of these tags.').optional(),
    type: f.engramType().optional(),
    description: optionalText('What the pack is for, written to the manifest.'),
    creator: optionalText('Who made it, written to the manifest.'),
    output: optionalText('Folder to write the pack into (default ~/svc-packs/<name>).'),
  }),
  destructive: false,
  readOnly: false,
});

const packsDiscover = defineTool({
  name: 'svc_packs_discover',
  title: 'Discover packs',
  description: 'Packs offered by the configured remote stores that are not installed here, optionally matching a query.',
  input: z.strictObject({
    query: optionalText('Words to match against pack names and descriptions.'),
    limit: f.limit(20, 200, 'packs'),
  }),
  destructive: false,
  readOnly: true,
});

// ------------------------------------------------------------------------- stores and scopes

const storesAdd = defineTool({
  name: 'svc_stores_add',
  title: 'Add store',
  description:
    'Register an additional local engram store, bound to a scope. A store is keyed by its path: adding a second scope to the same path changes nothing.',
  input: z.strictObject({
    path: path('Folder of the store.'),
    scope: f.scope('Scope the store serves, e.g. group:platform.'),
    shared: z.boolean().default(false).describe('The store is shared with others (e.g. a team repository).'),
    readonly: z.boolean().default(false).describe('Never write to this store.'),
  }),
  destructive: false,
  readOnly: false,
});

const storesList = defineTool({
  name: 'svc_stores_list',
  title: 'List stores',
  description: 'The stores this engine reads and writes: scope, path (or remote address), engram count, shared and read-only flags.',
  input: z.strictObject({}),
  destructive: false,
  readOnly: true,
});

const scopesDiscover = defineTool({
  name: 'svc_scopes_discover',
  title: 'Discover scopes',
  description: 'Ask the configured remote stores which scopes this user is authorized for; with register: true, add the unregistered shared-family scopes.',
  input: z.strictObject({ register: z.boolean().default(false).describe('Register the discovered shared scopes that are not registered yet.') }),
  destructive: false,
  readOnly: false,
});

const suggestScope = defineTool({
  name: 'svc_suggest_scope',
  title: 'Suggest scope',
  description:
    'Which scope a statement would be routed to when learned without one: the best-matching scope with a confidence and the alternatives; global when no match is confident.',
  input: z.strictObject({
    statement: f.text('The statement about to be learned.'),
    domain: f.domain().optional(),
    limit: f.limit(3, 20, 'alternatives'),
  }),
  destructive: false,
  readOnly: true,
});

const rescope = defineTool({
  name: 'svc_rescope',
  title: 'Rescope',
  description: 'Move engrams to another scope (e.g. from global to project:<name>). Moving to a shared scope makes them visible to others.',
  input: z.strictObject({
    ids: z.array(f.engramId()).min(1, { error: 'must name at least one engram' }).max(500, { error: 'must name at most 500 engrams' }).describe('The engrams to move.'),
    scope: f.scope('The scope to move them to.'),
    reason: optionalText('Why, kept in each engram\'s history.'),
  }),
  destructive: true,
  readOnly: false,
});

// -------------------------------------------------------------------------------------- sync

const sync = defineTool({
  name: 'svc_sync',
  title: 'Sync',
  description:
    'Git-based sync of the store with its remote: pull then push. With remote, set the remote address first (first time). full: true drops and rebuilds the search index from the YAML files. Engrams of scope local never leave the machine.',
  input: z.strictObject({
    remote: optionalText('Git remote address to set (first sync only).'),
    full: z.boolean().default(false).describe('Rebuild the derived index from the YAML files.'),
  }),
  destructive: true,
  readOnly: false,
});

const syncStatus = defineTool({
  name: 'svc_sync_status',
  title: 'Sync status',
  description: 'Where the store stands against its remote: remote address, last sync, commits ahead and behind, uncommitted engrams, outbox size.',
  input: z.strictObject({}),
  destructive: false,
  readOnly: true,
});

const outbox = defineTool({
  name: 'svc_outbox',
  title: 'Outbox',
  description: 'Writes to remote team scopes that are queued after a timeout or failure, oldest first; with retry: true, try to deliver them now.',
  input: z.strictObject({
    retry: z.boolean().default(false).describe('Try to deliver the queued writes now.'),
    limit: f.limit(50, 1000, 'queued writes'),
  }),
  destructive: false,
  readOnly: false,
});

// -------------------------------------------------------------------- tensions, ingest, import

const tensions = defineTool({
  name: 'svc_tensions',
  title: 'Tensions',
  description:
    'Contradictions between engrams. action list (default) shows persisted tension records (unresolved, or all with status: all); ' +
    'scan runs an LLM contradiction scan (needs a hosted LLM key, or llm_base_url with llm_api_key); confirm marks a real conflict; ' +
    'dismiss marks a false positive (the pair is not flagged again); resolve keeps the winner engram and retires the other.',
  input: z
    .strictObject({
      action: z.enum(['list', 'scan', 'confirm', 'dismiss', 'resolve']).default('list').describe('list (default), scan, confirm, dismiss or resolve.'),
      tension_id: z
        .string()
        .trim()
        .regex(/^T-\d{4}-\d{4}-\d{3,}$/, { error: 'must be a tension id like T-2026-0101-001' })
        .optional()
        .describe('The tension record, for confirm, dismiss and resolve.'),
      winner: f.engramId('For resolve: the engram to keep; the other is retired.').optional(),
      status: z.enum(['unresolved', 'all']).default('unresolved').describe('For list: unresolved (default) or all (including dismissed and resolved).'),
      scope: f.scope('Narrow the scan to this scope.').optional(),
      domain: f.domain('Narrow the scan to this domain.').optional(),
      min_confidence: z.number({ error: 'must be a number' }).min(0, { error: 'must be at least 0' }).max(1, { error: 'must be at most 1' }).default(0.7).describe('Judge confidence threshold (default 0.7).'),
      max_pairs: z.int({ error: 'must be a whole number' }).min(1, { error: 'must be at least 1' }).max(1000, { error: 'must be at most 1000' }).default(50).describe('Candidate pairs judged, highest overlap first (default 50).'),
      batch_size: z.int({ error: 'must be a whole number' }).min(1, { error: 'must be at least 1' }).max(50, { error: 'must be at most 50' }).default(5).describe('Pairs per LLM call; 1 = sequential (default 5).'),
      persist: z.boolean().default(true).describe('false: dry run, nothing written and the suppress list ignored.'),
      temporal_discount: z.boolean().optional().describe('Discount confidence by days apart (default from config, off).'),
      llm_base_url: z.url({ error: 'must be a URL' }).optional().describe('Base address of an OpenAI-compatible LLM endpoint.'),
      llm_api_key: optionalText('API key for llm_base_url.'),
      model: optionalText('LLM model name for the scan.'),
    })
    .superRefine((v, issue) => {
      if (['confirm', 'dismiss', 'resolve'].includes(v.action) && v.tension_id === undefined) {
        issue.addIssue({ code: 'custom', path: ['tension_id'], message: `is required for action "${v.action}"` });
      }
      if (v.action === 'resolve' && v.winner === undefined) issue.addIssue({ code: 'custom', path: ['winner'], message: 'is required for action "resolve"' });
      if (v.llm_base_url !== undefined && v.llm_api_key === undefined) issue.addIssue({ code: 'custom', path: ['llm_api_key'], message: 'is required with llm_base_url' });
    }),
  destructive: false,
  readOnly: false,
});

const tensionsPurge = defineTool({
  name: 'svc_tensions_purge',
  title: 'Purge tensions',
  description: 'Delete closed tension records (dismissed, resolved, or both), optionally only those older than some days. Dismissed pairs are flagged again by later scans.',
  input: z.strictObject({
    status: z.enum(['dismissed', 'resolved', 'closed']).default('closed').describe('Which records: dismissed, resolved, or closed (both; default).'),
    older_than_days: z.int({ error: 'must be a whole number' }).min(0, { error: 'must be at least 0' }).optional().describe('Only records closed more than this many days ago.'),
  }),
  destructive: true,
  readOnly: false,
});

const ingest = defineTool({
  name: 'svc_ingest',
  title: 'Ingest',
  description:
    'Extract learnable statements from text by pattern (no LLM): rules, conventions, decisions. Saves them directly, or with extract_only: true only returns the candidates.',
  input: z.strictObject({
    content: f.text('The text to extract from (not a file path).'),
    source: optionalText('Where the text came from, recorded on each engram.'),
    scope: f.scope('Scope of the extracted engrams.').optional(),
    domain: f.domain('Domain of the extracted engrams.').optional(),
    extract_only: z.boolean().default(false).describe('Return the candidates without saving them.'),
  }),
  destructive: false,
  readOnly: false,
});

const importTool = defineTool({
  name: 'svc_import',
  title: 'Import',
  description:
    'Migrate memories from another system through the same path as learn (content-hash dedup and secret guard apply). Reports imported, skipped, conflict and error counts; dry_run: true writes nothing.',
  input: z.strictObject({
    from: f.text('Source format: generic (JSON, JSONL or CSV, with an optional mapping), or a supported system\'s SQLite database or JSON export.'),
    path: path('The input file.'),
    dry_run: z.boolean().default(false).describe('Report what would be imported without writing.'),
    scope: f.scope('Scope of the imported engrams.').optional(),
    mapping: optionalText('For generic: a JSON file with "fields" (source field to engram field) and "defaults".'),
    store: optionalText('Store folder to import into (default: this server\'s store).'),
  }),
  destructive: true,
  readOnly: false,
});

export const PACK_TOOLS: AnyToolDef[] = [packsList, packsPreview, packsInstall, packsUninstall, packsExport, packsDiscover];
export const STORE_TOOLS: AnyToolDef[] = [storesAdd, storesList, scopesDiscover, suggestScope, rescope];
export const SYNC_TOOLS: AnyToolDef[] = [sync, syncStatus, outbox];
export const TENSION_TOOLS: AnyToolDef[] = [tensions, tensionsPurge];
export const INGEST_TOOLS: AnyToolDef[] = [ingest, importTool];
