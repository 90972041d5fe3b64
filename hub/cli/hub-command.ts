import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { invalid, SvcError } from '../../engine/errors.js';
import { makeOutput, parseArgs, type Output } from '../../engine/cli/cli-kit.js';
import { resolveStoreRoot } from '../../engine/store/store-root.js';
import type { Database } from '../contracts.js';

// `svc hub`: run the team server, and administer it from the machine it runs on.
//   svc hub [--port N] [--host H] [--data DIR]          start (PGlite in DIR, or DATABASE_URL)
//   svc hub org create <slug> --admin <name> [--json]   an organization and its admin's API key
//   svc hub org list
//   svc hub audit verify --org <slug>                   walk the audit chain; exit 1 on a break
//   svc hub migrate                                     apply pending migrations and exit
// Every subcommand opens the same database: DATABASE_URL when set, else PGlite in --data.

const HELP = `
  Usage
    svc hub [--port 8080] [--host 127.0.0.1] [--data <dir>]
    svc hub org create <slug> --admin <name>
    svc hub org list
    svc hub audit verify --org <slug>
    svc hub migrate

  The team server: REST /api/v1 (OpenAPI at /api/v1/openapi.yaml). With DATABASE_URL it uses
  that PostgreSQL server; without it, PGlite in --data (default <store>/hub). PGlite allows one
  process at a time: stop the server before running the other subcommands on the same folder.

  Flags
    --port <n>      port to listen on (default 8080; 0 picks a free one)
    --host <addr>   address to bind (default 127.0.0.1)
    --data <dir>    PGlite data folder (default <store>/hub)
    --admin <name>  the first admin of a new organization
    --org <slug>    the organization to verify

  Environment
    DATABASE_URL                 postgres://... (instead of PGlite)
    SVC_HUB_RATE_LIMIT           requests per minute per token (default 600)
    SVC_HUB_WRITE_RATE_LIMIT     POST and PATCH per minute per token (default 60)
    SVC_HUB_JWT_SECRET, SVC_HUB_JWT_PREVIOUS_SECRET, SVC_HUB_AUDIT_KEY, SVC_HUB_DOCS_URL`;

const FLAGS = {
  port: { type: 'number' },
  host: { type: 'string' },
  data: { type: 'string' },
  admin: { type: 'string' },
  org: { type: 'string' },
} as const;

async function open(flags: { data?: string; path?: string }): Promise<Database> {
  const { openDatabase } = await import('../data/database.js');
  const { migrateHub } = await import('../data/migrate.js');
  const url = process.env.DATABASE_URL || undefined;
  const dataDir = flags.data ?? join(resolveStoreRoot(flags.path), 'hub');
  let db: Database;
  try {
    if (!url) mkdirSync(dataDir, { recursive: true });
    db = await openDatabase(url ? { url } : { dataDir });
  } catch (err) {
    const where = url ? 'the PostgreSQL server at DATABASE_URL' : `the PGlite folder ${dataDir}`;
    throw new SvcError('storage', `cannot open ${where}: ${(err as Error).message.split('\n')[0]}`);
  }
  await migrateHub(db);
  return db;
}

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, FLAGS);
  const out = makeOutput(cli.flags);
  const [sub, ...rest] = cli.input;
  if (sub === undefined) return serve(cli.flags, out);
  if (sub === 'org' && rest[0] === 'create') return orgCreate(rest.slice(1), cli.flags, out);
  if (sub === 'org' && rest[0] === 'list') return orgList(cli.flags, out);
  if (sub === 'audit' && rest[0] === 'verify') return auditVerify(cli.flags, out);
  if (sub === 'migrate') {
    const db = await open(cli.flags);
    await db.close();
    out.result({ migrated: true }, () => 'The hub database is up to date');
    return 0;
  }
  throw invalid(`unknown hub subcommand "${[sub, ...rest].join(' ')}" (see svc hub --help)`);
}

async function serve(flags: { port?: number; host?: string; data?: string; path?: string }, out: Output): Promise<number> {
  const port = flags.port ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw invalid(`--port must be a port number, 0 to 65535 (got ${flags.port})`);
  const db = await open(flags);
  const [{ startHub }, { localEmbedderProvider }] = await Promise.all([import('../server/start.js'), import('../../engine/mcp/embedder-provider.js')]);
  // The dense leg loads the embedding model from <data or store>/models on the first recall.
  const embedder = localEmbedderProvider(flags.data ?? resolveStoreRoot(flags.path), { log: (m) => out.warn(m) });
  let running;
  try {
    running = await startHub({ db, port, host: flags.host ?? '127.0.0.1', embedder });
  } catch (err) {
    await db.close();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw invalid(`port ${port} is in use; pick another with --port`);
    throw err;
  }
  // The URL goes to stdout in both modes: scripts wait for it.
  out.result({ url: running.url, database: db.kind }, () => `svc hub listening on ${running.url} (${db.kind === 'postgres' ? 'PostgreSQL' : 'PGlite'})`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await running.close();
  await db.close();
  return 0;
}

async function orgCreate(args: string[], flags: { admin?: string; data?: string; path?: string }, out: Output): Promise<number> {
  const [slug] = args;
  if (!slug || args.length !== 1) throw invalid('usage: svc hub org create <slug> --admin <name>');
  if (!flags.admin) throw invalid('--admin <name> is required: the organization\'s first admin');
  const db = await open(flags);
  try {
    const { createOrgWithAdmin } = await import('../admin/provision.js');
    const r = await createOrgWithAdmin(db, slug, flags.admin);
    out.result(
      { org: { id: r.org.id, slug: r.org.slug, schema: r.org.schema }, admin: { id: r.userId, name: flags.admin }, api_key: r.apiKey, api_key_id: r.keyId },
      () => [`Created organization ${slug} with admin ${flags.admin}.`, `API key (shown once, keep it safe):`, r.apiKey].join('\n'),
    );
    return 0;
  } finally {
    await db.close();
  }
}

async function orgList(flags: { data?: string; path?: string }, out: Output): Promise<number> {
  const db = await open(flags);
  try {
    const { listOrgs } = await import('../data/organizations.js');
    const orgs = await listOrgs(db);
    out.result({ orgs: orgs.map((o) => ({ id: o.id, slug: o.slug, schema: o.schema })) }, () => (orgs.length ? orgs.map((o) => o.slug).join('\n') : 'No organizations yet'));
    return 0;
  } finally {
    await db.close();
  }
}

async function auditVerify(flags: { org?: string; data?: string; path?: string }, out: Output): Promise<number> {
  if (!flags.org) throw invalid('--org <slug> is required');
  const db = await open(flags);
  try {
    const [{ getOrg }, { verifyAudit }, { loadConfig }] = await Promise.all([
      import('../data/organizations.js'),
      import('../audit/audit-log.js'),
      import('../server/config.js'),
    ]);
    const org = await getOrg(db, flags.org);
    const { auditKey } = await loadConfig(db);
    const r = await verifyAudit(db, org, auditKey);
    out.result({ org: flags.org, ...r }, () =>
      r.ok ? `Audit chain of ${flags.org} intact: ${r.rows} rows` : `Audit chain of ${flags.org} BROKEN at row ${r.first_bad!.seq}: ${r.first_bad!.problem} (${r.rows} rows before it verified)`,
    );
    return r.ok ? 0 : 1;
  } finally {
    await db.close();
  }
}
