import type Router from '@koa/router';
import type { Middleware, ParameterizedContext } from 'koa';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { HubState } from '../contracts.js';
import type { EngramType } from '../../engine/model/engram-types.js';
import { SvcError } from '../../engine/errors.js';
import { exportPack, installPack, listPacks, NO_TRUSTED_KEYS, uninstallPack } from '../../engine/ops/packs/packs.js';
import { peekManifest } from '../../engine/ops/packs/format.js';
import { openOrgBackend } from '../org-backend/pg-backend.js';
import { PgPackRegistry } from './pack-registry.js';
import { validBody } from '../openapi/spec.js';
import { badRequest, HubProblem } from '../http/problem.js';
import { fetchOutbound, RefusedUrl, UpstreamFailed, type OutboundPolicy } from '../net/outbound.js';
import { opContext, queryText, requireAdmin, requireReadable, type Ctx } from '../http/route-kit.js';

// Packs on the hub: the engine's pack operations, with the registry in the organization's
// tables. A pack travels as its files: export answers them as JSON ({path, content}), install
// takes them as a multipart upload where each part's field name is the file's path in the pack
// (pack.yaml, engrams/<id>.yaml), or fetches that JSON from a URL. Installing and uninstalling
// need the admin role.
//
// The hub keeps no pack keys: it exports unsigned packs and trusts no signer, so it installs a
// pack only when the admin says `allow_untrusted=true` (query parameter, or the JSON field
// beside `url`); a pack whose signature fails is refused always (409).

const MAX_FILES = 20_000;
/** A whole upload, every file together (what a pack by URL may be, too). */
const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
const PACK_PATH = /^(pack\.yaml|engrams\/[A-Za-z0-9._-]+\.yaml)$/;

/** Writes one file of a pack into the folder it is installed from; its name must be a pack path. */
function writePackFile(into: string, name: string, data: Buffer): void {
  if (!PACK_PATH.test(name))
    throw badRequest(`"${name}" is not a pack file: files are named pack.yaml or engrams/<id>.yaml`, [`${name}: not a pack file`]);
  mkdirSync(dirname(join(into, name)), { recursive: true });
  writeFileSync(join(into, name), data);
}

/**
 * Reads a multipart upload into a folder. It settles whatever the client does: a client that
 * goes away (or a server timeout that cuts it) rejects it, so nothing waits on a body that will
 * never come. Returns the number of files and a digest of what was sent (for Idempotency-Key).
 */
async function readUpload(ctx: ParameterizedContext<HubState>, into: string): Promise<{ files: number; digest: string }> {
  if (!ctx.is('multipart/form-data'))
    throw new HubProblem(
      415,
      'unsupported-media-type',
      'Unsupported media type',
      'upload the pack as multipart/form-data, one part per file named by its path (pack.yaml, engrams/<id>.yaml), or send {"url": ...} as application/json',
    );
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > MAX_UPLOAD_BYTES) throw tooLarge();
  const { default: Busboy } = await import('busboy');
  const req = ctx.req;
  // A client that left while the request was still authenticated: its 'aborted' and 'close' have
  // fired already and will not again, so nothing below would ever settle.
  if (req.destroyed || req.socket?.destroyed)
    throw badRequest('the client closed the connection before the whole upload arrived', ['body: incomplete']);
  return new Promise<{ files: number; digest: string }>((resolve, reject) => {
    let files = 0;
    let size = 0;
    let failed: Error | undefined;
    let settled = false;
    const parts: Array<{ name: string; sha: string }> = [];
    const done = (err: Error | undefined, value?: { files: number; digest: string }) => {
      if (settled) return;
      settled = true;
      req.off('aborted', gone).off('close', closed).off('error', gone);
      if (err) reject(err);
      else resolve(value!);
    };
    const gone = () => {
      req.unpipe(bb);
      done(badRequest('the client closed the connection before the whole upload arrived', ['body: incomplete']));
    };
    const closed = () => {
      if (!req.complete) gone();
    };
    const stopReading = (e: Error) => {
      failed ??= e;
      // Past the cap nothing more is parsed; the rest of the body is read and dropped, and the
      // connection closed after the answer.
      req.unpipe(bb);
      req.resume();
      ctx.set('Connection', 'close');
      done(e);
    };
    const fail = (e: Error) => (failed ??= e);
    const count = (n: number) => {
      size += n;
      if (size > MAX_UPLOAD_BYTES) stopReading(tooLarge());
    };
    const bb = Busboy({ headers: req.headers, limits: { files: MAX_FILES, fileSize: MAX_UPLOAD_BYTES, fieldSize: MAX_UPLOAD_BYTES } });
    const take = (name: string, data: Buffer) => {
      try {
        writePackFile(into, name, data);
        parts.push({ name, sha: createHash('sha256').update(data).digest('hex') });
        files++;
      } catch (err) {
        fail(err as Error);
      }
    };
    bb.on('file', (name, stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => {
        count(c.length);
        if (!settled) chunks.push(c);
      });
      stream.on('limit', () => stopReading(tooLarge()));
      stream.on('end', () => !settled && take(name, Buffer.concat(chunks)));
    });
    bb.on('field', (name, value) => {
      count(Buffer.byteLength(value));
      if (!settled) take(name, Buffer.from(value));
    });
    bb.on('filesLimit', () => fail(new HubProblem(413, 'payload-too-large', 'Payload too large', `a pack has at most ${MAX_FILES} files`)));
    bb.on('error', (e: Error) => done(badRequest(`the upload is not valid multipart: ${e.message}`)));
    bb.on('close', () => {
      if (failed) return done(failed);
      const digest = createHash('sha256')
        .update(
          parts
            .map((p) => `${p.name}\0${p.sha}`)
            .sort()
            .join('\n'),
        )
        .digest('hex');
      done(undefined, { files, digest });
    });
    req.once('aborted', gone).once('close', closed).once('error', gone);
    req.pipe(bb);
  });
}

const tooLarge = () => new HubProblem(413, 'payload-too-large', 'Payload too large', `a pack upload is at most ${MAX_UPLOAD_BYTES} bytes`);

/** The multipart uploads read before their route runs (packUpload), by request. */
const uploads = new WeakMap<object, { dir: string; files: number }>();

/**
 * Reads a pack upload (multipart POST /api/v1/packs) before anything else uses the request: its
 * Idempotency-Key claim opens the write's transaction, and a transaction must not wait on a
 * client's body. The admin role is checked before a byte is read; the upload's temporary folder
 * is removed however the request ends.
 */
export function packUpload(): Middleware<HubState> {
  return async (ctx, next) => {
    if (
      ctx.method !== 'POST' ||
      ctx.path !== '/api/v1/packs' ||
      ctx.is('multipart/form-data') !== 'multipart/form-data' ||
      !ctx.state.principal
    )
      return next();
    requireAdmin(ctx.state.principal);
    allowUntrustedQuery(ctx);
    const dir = mkdtempSync(join(tmpdir(), 'svc-hub-pack-'));
    try {
      const { files, digest } = await readUpload(ctx, dir);
      uploads.set(ctx, { dir, files });
      ctx.request.bodyDigest = digest;
      await next();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

/** Engine messages name the temporary folder; callers know it as "the uploaded pack". */
function hidePath<T>(dir: string, run: () => Promise<T>): Promise<T> {
  return run().catch((err: unknown) => {
    if (err instanceof SvcError)
      throw new SvcError(
        err.kind,
        err.message.split(dir).join('the uploaded pack'),
        err.details.map((d) => d.split(dir).join('the uploaded pack')),
      );
    throw err;
  });
}

/**
 * Fetches a pack published at a URL: the JSON `POST /packs/export` answers ({files: [{path,
 * content}]}), as any static host serves it. The URL goes through the outbound policy.
 */
async function readFromUrl(url: string, into: string, policy: OutboundPolicy): Promise<number> {
  let fetched;
  try {
    fetched = await fetchOutbound(url, policy);
  } catch (err) {
    if (err instanceof RefusedUrl) throw badRequest(`url: ${err.message}`, [`url: ${err.message}`]);
    if (err instanceof UpstreamFailed) throw new HubProblem(502, 'upstream-failed', 'The pack URL failed', err.message);
    throw err;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(fetched.body.toString('utf8'));
  } catch {
    throw new HubProblem(
      502,
      'upstream-failed',
      'The pack URL failed',
      'the URL did not answer with JSON: publish the files POST /packs/export answers',
    );
  }
  const files = (doc as { files?: unknown }).files;
  if (!Array.isArray(files) || files.some((f) => typeof f?.path !== 'string' || typeof f?.content !== 'string')) {
    throw new HubProblem(
      502,
      'upstream-failed',
      'The pack URL failed',
      'the JSON at the URL has no files: [{path, content}] (what POST /packs/export answers)',
    );
  }
  if (files.length > MAX_FILES)
    throw new HubProblem(413, 'payload-too-large', 'Payload too large', `a pack has at most ${MAX_FILES} files`);
  for (const f of files as Array<{ path: string; content: string }>) writePackFile(into, f.path, Buffer.from(f.content));
  return files.length;
}

/** `?allow_untrusted=true|false` (absent: false). */
function allowUntrustedQuery(ctx: Pick<ParameterizedContext, 'query'>): boolean {
  const v = queryText(ctx, 'allow_untrusted');
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  throw badRequest(`allow_untrusted must be true or false (got "${v}")`, ['allow_untrusted: must be true or false']);
}

export function registerPackRoutes(router: Router<HubState>, deps: { outbound: OutboundPolicy }): void {
  router.get('/packs', async (ctx: Ctx) => {
    const r = await listPacks(new PgPackRegistry(ctx.state.db, ctx.state.principal.org, ctx.state.policy));
    ctx.body = { items: r.packs, next_cursor: null };
  });

  router.post('/packs', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    requireAdmin(p);
    let allowUntrusted = allowUntrustedQuery(ctx);
    const uploaded = uploads.get(ctx);
    const dir = uploaded?.dir ?? mkdtempSync(join(tmpdir(), 'svc-hub-pack-'));
    try {
      let files: number;
      if (uploaded) files = uploaded.files;
      else if (ctx.is('application/json')) {
        const body = await validBody<{ url: string; allow_untrusted?: boolean }>('InstallPackFromUrl', ctx.request.body);
        allowUntrusted ||= body.allow_untrusted === true;
        files = await readFromUrl(body.url, dir, deps.outbound);
      } else {
        files = (await readUpload(ctx, dir)).files;
      }
      if (files === 0) throw badRequest('the upload holds no files: send pack.yaml and engrams/<id>.yaml parts');
      const name = (await peekManifest(dir))?.name;
      // The admin's view plus the pack's own scope, so its engrams are seen as they are written.
      const backend = openOrgBackend(ctx.state.db, p.org, typeof name === 'string' ? ctx.state.policy.forPack(name) : ctx.state.policy);
      const r = await hidePath(dir, () =>
        installPack(backend, new PgPackRegistry(ctx.state.db, p.org, ctx.state.policy), dir, opContext(), {
          trust: NO_TRUSTED_KEYS,
          allowUntrusted,
        }),
      );
      ctx.state.auditResource = `pack:${r.name}`;
      // The audit says when an admin let in a pack nobody vouches for.
      ctx.state.auditDetails = {
        version: r.version,
        created: r.created.length,
        updated: r.updated.length,
        signature: r.signature.status,
        signer: r.signature.signer,
      };
      ctx.status = r.action === 'installed' ? 201 : 200;
      const { path: _path, ...rest } = r;
      ctx.body = rest;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  router.delete('/packs/:name', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    requireAdmin(p);
    const name = ctx.params.name!;
    const backend = openOrgBackend(ctx.state.db, p.org, ctx.state.policy.forPack(name));
    ctx.state.auditResource = `pack:${name}`;
    ctx.body = await uninstallPack(backend, new PgPackRegistry(ctx.state.db, p.org, ctx.state.policy), name, opContext());
  });

  router.post('/packs/export', async (ctx: Ctx) => {
    const body = await validBody<{
      name: string;
      scope?: string;
      domain?: string;
      tags?: string[];
      type?: EngramType;
      description?: string;
      creator?: string;
    }>('ExportPack', ctx.request.body);
    if (body.scope) requireReadable(ctx.state.principal, body.scope);
    const dir = join(mkdtempSync(join(tmpdir(), 'svc-hub-export-')), body.name);
    try {
      const r = await hidePath(dir, () =>
        exportPack(ctx.state.backend, { ...body, creator: body.creator ?? ctx.state.principal.userName, output: dir }, opContext(), null),
      );
      const files = [{ path: 'pack.yaml', content: readFileSync(join(dir, 'pack.yaml'), 'utf8') }];
      for (const f of readdirSync(join(dir, 'engrams')).sort())
        files.push({ path: `engrams/${f}`, content: readFileSync(join(dir, 'engrams', f), 'utf8') });
      ctx.state.auditResource = `pack:${r.name}`;
      const { path: _path, ...rest } = r;
      ctx.body = { ...rest, files };
    } finally {
      rmSync(dirname(dir), { recursive: true, force: true });
    }
  });
}
