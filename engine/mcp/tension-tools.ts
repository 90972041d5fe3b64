import { z } from './sdk-deps.js';
import * as f from './fields.js';
import { ToolFailure } from './dispatch.js';
import { opContext } from './tool-helpers.js';
import { defineTool, type AnyToolDef, type ToolContext } from './types.js';
import {
  confirmTension,
  dismissTension,
  listTensions,
  purgeTensions,
  resolveTension,
  scanTensions,
  tensionConfig,
  withCurrentStatus,
} from '../ops/tensions/tensions.js';
import { LocalTensionStore, type TensionStore } from '../store/tension-records.js';
import { llmJudge } from '../ops/tensions/judge.js';
import { chatClientFor, resolveLlmSettings } from '../llm/settings.js';

// svc_tensions and svc_tensions_purge over engine/ops/tensions.ts. Records live in
// the local store's tensions/ folder; a backend without one (the hub, for now) says so.

function tensionStore(ctx: ToolContext): TensionStore {
  if (!ctx.local) throw new ToolFailure('tension records need a local store; this server has none');
  return new LocalTensionStore(ctx.backend, ctx.local.root);
}

export const tensionsTool = defineTool({
  name: 'svc_tensions',
  title: 'Tensions',
  description:
    'Contradictions between engrams. action list (default) shows persisted tension records (unresolved, or all with status: all); ' +
    'scan runs an LLM contradiction scan (needs a hosted LLM key, or llm_base_url with llm_api_key); confirm marks a real conflict; ' +
    'dismiss marks a false positive (the pair is not flagged again); resolve keeps the winner engram and retires the other.',
  input: z
    .strictObject({
      action: z
        .enum(['list', 'scan', 'confirm', 'dismiss', 'resolve'])
        .default('list')
        .describe('list (default), scan, confirm, dismiss or resolve.'),
      tension_id: z
        .string()
        .trim()
        .regex(/^T-\d{4}-\d{4}-\d{3,}$/, { error: 'must be a tension id like T-2026-0101-001' })
        .optional()
        .describe('The tension record, for confirm, dismiss and resolve.'),
      winner: f.engramId('For resolve: the engram to keep; the other is retired.').optional(),
      status: z
        .enum(['unresolved', 'all'])
        .default('unresolved')
        .describe('For list: unresolved (default) or all (including dismissed and resolved).'),
      scope: f.scope('Narrow the scan to this scope.').optional(),
      domain: f.domain('Narrow the scan to this domain.').optional(),
      min_confidence: z
        .number({ error: 'must be a number' })
        .min(0, { error: 'must be at least 0' })
        .max(1, { error: 'must be at most 1' })
        .default(0.7)
        .describe('Judge confidence threshold (default 0.7).'),
      max_pairs: z
        .int({ error: 'must be a whole number' })
        .min(1, { error: 'must be at least 1' })
        .max(1000, { error: 'must be at most 1000' })
        .default(50)
        .describe('Candidate pairs judged, highest overlap first (default 50).'),
      batch_size: z
        .int({ error: 'must be a whole number' })
        .min(1, { error: 'must be at least 1' })
        .max(50, { error: 'must be at most 50' })
        .default(5)
        .describe('Pairs per LLM call; 1 = sequential (default 5).'),
      persist: z.boolean().default(true).describe('false: dry run, nothing written and the suppress list ignored.'),
      temporal_discount: z.boolean().optional().describe('Discount confidence by days apart (default from config, off).'),
      llm_base_url: z.url({ error: 'must be a URL' }).optional().describe('Base address of an OpenAI-compatible LLM endpoint.'),
      llm_api_key: f.optionalText('API key for llm_base_url.'),
      model: f.optionalText('LLM model name for the scan.'),
    })
    .superRefine((v, issue) => {
      if (['confirm', 'dismiss', 'resolve'].includes(v.action) && v.tension_id === undefined) {
        issue.addIssue({ code: 'custom', path: ['tension_id'], message: `is required for action "${v.action}"` });
      }
      if (v.action === 'resolve' && v.winner === undefined)
        issue.addIssue({ code: 'custom', path: ['winner'], message: 'is required for action "resolve"' });
      if (v.llm_base_url !== undefined && v.llm_api_key === undefined)
        issue.addIssue({ code: 'custom', path: ['llm_api_key'], message: 'is required with llm_base_url' });
    }),
  machineLocal: 'keeps tension records in a local store',
  destructive: false,
  readOnly: false,
  async handler(ctx, args) {
    const store = tensionStore(ctx);
    const op = opContext(ctx);
    switch (args.action) {
      case 'list': {
        const { records, warnings } = await listTensions(store, args.status);
        const tensions = await Promise.all(records.map((r) => withCurrentStatus(ctx.backend, r)));
        return { status: args.status, count: tensions.length, tensions, ...(warnings.length ? { warnings } : {}) };
      }
      case 'scan': {
        const settings = resolveLlmSettings(
          { baseUrl: args.llm_base_url, apiKey: args.llm_api_key, model: args.model },
          process.env,
          'svc_tensions scan',
        );
        const config = await tensionConfig(ctx.local!.root);
        const result = await scanTensions(
          store,
          {
            judge: llmJudge(chatClientFor(settings)),
            scope: args.scope,
            domain: args.domain,
            minConfidence: args.min_confidence,
            maxPairs: args.max_pairs,
            batchSize: args.batch_size,
            persist: args.persist,
            temporalDiscount: args.temporal_discount ?? config.temporal_discount,
            halfLifeDays: config.half_life_days,
          },
          op,
        );
        return config.warning ? { ...result, warnings: [config.warning] } : result;
      }
      case 'confirm': {
        const r = await confirmTension(store, args.tension_id!, op);
        return { action: 'confirmed', changed: r.changed, tension: r.record };
      }
      case 'dismiss': {
        const r = await dismissTension(store, args.tension_id!, op);
        return { action: 'dismissed', changed: r.changed, tension: r.record };
      }
      case 'resolve': {
        const r = await resolveTension(store, args.tension_id!, args.winner!, op);
        return {
          action: 'resolved',
          changed: r.changed,
          winner: r.winner,
          loser: r.loser,
          loser_action: r.loser_action,
          tension: r.record,
        };
      }
    }
  },
});

export const tensionsPurgeTool = defineTool({
  name: 'svc_tensions_purge',
  title: 'Purge tensions',
  description:
    'Delete closed tension records (dismissed, resolved, or both), optionally only those older than some days. Dismissed pairs are flagged again by later scans.',
  input: z.strictObject({
    status: z
      .enum(['dismissed', 'resolved', 'closed'])
      .default('closed')
      .describe('Which records: dismissed, resolved, or closed (both; default).'),
    older_than_days: z
      .int({ error: 'must be a whole number' })
      .min(0, { error: 'must be at least 0' })
      .optional()
      .describe('Only records closed more than this many days ago.'),
  }),
  machineLocal: 'keeps tension records in a local store',
  destructive: true,
  readOnly: false,
  async handler(ctx, { status, older_than_days }) {
    const r = await purgeTensions(tensionStore(ctx), { status, olderThanDays: older_than_days }, opContext(ctx));
    return { status, purged: r.purged.length, ids: r.purged };
  },
});

export const TENSION_TOOLS: AnyToolDef[] = [tensionsTool, tensionsPurgeTool];
