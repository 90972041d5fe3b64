import { z } from './sdk-deps.js';
import { resolve } from 'node:path';
import * as f from './fields.js';
import { defineTool, type AnyToolDef } from './types.js';
import { opContext } from './tool-helpers.js';
import { ingest } from '../ops/ingest/ingest.js';
import { IMPORT_SOURCES, importFile, importIntoStore } from '../ops/import/import.js';

// svc_ingest and svc_import over engine/ops/ingest.ts and engine/ops/import.ts.

export const ingestTool = defineTool({
  name: 'svc_ingest',
  title: 'Ingest',
  description:
    'Extract learnable statements from text by pattern (no LLM): rules, conventions, decisions. Saves them directly, or with extract_only: true only returns the candidates.',
  input: z.strictObject({
    content: f.text('The text to extract from (not a file path).', f.CONTENT_MAX),
    source: f.optionalText('Where the text came from, recorded on each engram.'),
    scope: f.scope('Scope of the extracted engrams.').optional(),
    domain: f.domain('Domain of the extracted engrams.').optional(),
    extract_only: z.boolean().default(false).describe('Return the candidates without saving them.'),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { content, source, scope, domain, extract_only }) {
    return ingest(
      ctx.backend,
      { content, source, scope: scope ?? ctx.project?.scope, domain: domain ?? ctx.project?.domain, extract_only },
      opContext(ctx),
    );
  },
});

export const importTool = defineTool({
  name: 'svc_import',
  title: 'Import',
  description:
    'Migrate memories from another system through the same path as learn (content-hash dedup and secret guard apply). Reports imported, skipped, conflict and error counts; dry_run: true writes nothing.',
  input: z.strictObject({
    from: f.text(
      `Source format: ${IMPORT_SOURCES.join(', ')}. generic is JSON, JSONL or CSV, with an optional mapping; mem0-json is a mem0 memory export; mem0-sqlite is mem0's SQLite history database.`,
    ),
    path: f.text('The input file.'),
    dry_run: z.boolean().default(false).describe('Report what would be imported without writing.'),
    scope: f.scope('Scope of the imported engrams.').optional(),
    mapping: f.optionalText('For generic: a JSON file with "fields" (engram field to source column or dotted path) and "defaults".'),
    store: f.optionalText("Store folder to import into (default: this server's store)."),
  }),
  machineLocal: 'reads an export file on the machine it runs on',
  destructive: true,
  readOnly: false,
  async handler(ctx, { from, path, dry_run, scope, mapping, store }) {
    const opts = { from, path, dryRun: dry_run, scope, mapping, project: { scope: ctx.project?.scope, domain: ctx.project?.domain } };
    const sameStore = store === undefined || (ctx.local !== undefined && resolve(store) === resolve(ctx.local.root));
    if (sameStore) return importFile(ctx.backend, opts, opContext(ctx));
    const { report, warnings } = await importIntoStore(resolve(store), opts, opContext(ctx));
    return { ...report, store: resolve(store), ...(warnings.length ? { warnings } : {}) };
  },
});

export const INGEST_TOOLS: AnyToolDef[] = [ingestTool, importTool];
