import { z } from './sdk-deps.js';
import { defineTool, type AnyToolDef } from './types.js';

// The health tools: svc_status (counts, storage, search readiness, quarantined files) and
// svc_doctor (each part of the engine checked, with the fix for anything not ok), as the
// `svc status` and engine part of `svc doctor` report them.

export const statusTool = defineTool({
  name: 'svc_status',
  title: 'Status',
  description:
    'Store health at a glance, as `svc status` reports it: engram counts by status, episode, session and pack counts, injection events, ' +
    'the storage root and id prefix, whether search is hybrid or BM25 only (and why), and quarantined files.',
  input: z.strictObject({}),
  destructive: false,
  readOnly: true,
  async handler(ctx) {
    const stats = await ctx.backend.stats();
    const dense = await ctx.embedder.probe();
    const counts = dense.state === 'ready' ? ctx.local?.vectorStats(dense.model) : undefined;
    const vector =
      dense.state === 'ready'
        ? { state: 'ready', model: dense.model, ...(counts ?? {}) }
        : {
            state: 'unavailable',
            model: dense.model,
            reason: dense.reason,
            ...(ctx.local ? { vectors: ctx.local.vectorStats(dense.model).vectors } : {}),
          };
    return {
      ...(ctx.local ? { storage_root: ctx.local.root, id_prefix: ctx.local.idPrefix() } : {}),
      ...stats,
      search: { bm25: 'ready', vector },
      ...(ctx.local ? { quarantined: ctx.local.quarantined() } : {}),
    };
  },
});

type CheckStatus = 'ok' | 'warn' | 'fail' | 'off';
interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
}

export const doctorTool = defineTool({
  name: 'svc_doctor',
  title: 'Doctor',
  description:
    'Diagnose the engine: storage and index, the embedding model, hybrid search (BM25 + vectors), the reranker and remote-store auth. ' +
    'Each check is ok, warn, fail or off, with the fix for anything not ok. (Wiring of hosts and editors is `svc doctor` on the command line.)',
  input: z.strictObject({}),
  destructive: false,
  readOnly: true,
  async handler(ctx) {
    const checks: Check[] = [];
    const run = async (name: string, fn: () => Promise<Omit<Check, 'name'>>): Promise<void> => {
      try {
        checks.push({ name, ...(await fn()) });
      } catch (error) {
        checks.push({ name, status: 'fail', detail: error instanceof Error ? error.message.split('\n')[0]! : String(error) });
      }
    };

    await run('storage', async () => {
      const stats = await ctx.backend.stats();
      await ctx.backend.searchText('svc doctor probe', 1);
      const quarantined = ctx.local?.quarantined() ?? [];
      const where = ctx.local ? ` at ${ctx.local.root}` : '';
      if (quarantined.length) {
        return {
          status: 'warn',
          detail: `${stats.engrams} engrams${where}; ${quarantined.length} unreadable file(s) quarantined`,
          fix: `repair or remove the files in ${ctx.local!.root}/quarantine (svc status lists them with reasons)`,
        };
      }
      return { status: 'ok', detail: `${stats.engrams} engrams${where}; index readable` };
    });

    const dense = await ctx.embedder.probe();
    await run('embedder', async () => {
      if (dense.state === 'ready') return { status: 'ok', detail: `${dense.model} loaded (${dense.embedder.dimensions} dimensions)` };
      if (/SVC_EMBED=off/.test(dense.reason)) return { status: 'off', detail: dense.reason, fix: 'unset SVC_EMBED to enable vectors' };
      return {
        status: 'warn',
        detail: dense.reason,
        fix: 'run svc recall once with network access (downloads the model), or place the model folder in <store>/models by hand',
      };
    });

    await run('hybrid_search', async () => {
      if (dense.state !== 'ready')
        return {
          status: 'warn',
          detail: 'BM25 only: the vector leg cannot run without the embedding model',
          fix: 'see the embedder check',
        };
      const vector = await dense.embedder.embedQuery('svc doctor probe');
      await ctx.backend.searchVector(vector, 1, dense.model);
      const counts = ctx.local?.vectorStats(dense.model);
      return {
        status: 'ok',
        detail: `BM25 + ${dense.model} fused by reciprocal rank fusion${counts ? ` (${counts.vectors} vectors, ${counts.pending} waiting to be embedded)` : ''}`,
      };
    });

    await run('reranker', async () => {
      const wanted = process.env.SVC_RERANKER?.trim();
      if (wanted) {
        return {
          status: 'warn',
          detail: `SVC_RERANKER=${wanted} is set, but rerankers are not available in this version: results use reciprocal rank fusion only`,
          fix: 'unset SVC_RERANKER',
        };
      }
      return { status: 'off', detail: 'not configured (reciprocal rank fusion only)' };
    });

    await run('remote_store', async () => {
      if (!ctx.remote) return { status: 'off', detail: 'no remote configured (local store only)' };
      const { checkRemote } = await import('../remote/remote-check.js');
      return checkRemote(ctx.local?.root, ctx.remote);
    });

    const worst = checks.some((c) => c.status === 'fail') ? 'fail' : checks.some((c) => c.status === 'warn') ? 'warn' : 'ok';
    return { ok: worst !== 'fail', summary: worst, checks };
  },
});

export const HEALTH_TOOLS: AnyToolDef[] = [statusTool, doctorTool];
