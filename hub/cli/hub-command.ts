import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { invalid, SvcError } from '../../engine/errors.js';
import { makeOutput, parseArgs, type Output } from '../../engine/cli/cli-kit.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import type { Database } from '../contracts.js';

// `svc hub`: run the team server, and administer it from the machine it runs on.
//   svc hub [--port N] [--host H] [--data DIR]          start (PGlite in DIR, or DATABASE_URL)
//   svc hub org create <slug> --admin <name> [--json]   an organization and its admin's API key
//   svc hub org list
//   svc hub org admin add --org <slug> --user <name>  make (or create) an admin: the operator's recovery
//   svc hub login-link --org <slug> [--user <name>]     a single-use sign-in URL (10 minutes)
//   svc hub invite --org <slug> --email <address> [--name N] [--role R] [--group G]   invite a person
// login-link and invite open the database, or (--url and --key) ask the running hub: a PGlite
// folder is locked while a hub serves it.
//   svc hub audit verify --org <slug> [--checkpoints DIR] walk the audit chain; exit 1 on a break
//   svc hub audit checkpoint --org <slug> --out DIR    sign the chain's head into DIR
//   svc hub migrate                                     apply pending migrations and exit
//   svc hub secrets rotate                              re-seal every stored secret under SVC_HUB_SECRET_KEY
// Every subcommand opens the same database: DATABASE_URL when set, else PGlite in --data.

const HELP = `
  Usage
    svc hub [--port 8080] [--host 127.0.0.1] [--data <dir>]
    svc hub org create <slug> --admin <name> [--url <hub>]
    svc hub org list
    svc hub org admin add --org <slug> --user <name>
    svc hub login-link --org <slug> [--user <name>] [--url <hub> [--key <admin key>]]
    svc hub invite --org <slug> --email <address> [--name <name>] [--role editor] [--group <path>] [--url <hub> [--key <admin key>]]
    svc hub audit verify --org <slug> [--checkpoints <dir>] [--trust-key <key id>]
    svc hub audit checkpoint --org <slug> --out <dir>
    svc hub migrate
    svc hub secrets rotate
    svc hub backup --data <dir> --out <file> [--force]
    svc hub restore <file> --data <dir> [--force]
    svc hub config [--port <n>] [--host <addr>] [--data <dir>]

  The team server: REST /api/v1 (OpenAPI at /api/v1/openapi.yaml). With DATABASE_URL it uses
  that PostgreSQL server; without it, PGlite in --data (default <store>/hub). PGlite allows one
  process at a time: the folder is locked (svc-hub.lock, holding the pid) while a hub or a
  subcommand has it open; stop the server before running the other subcommands on it.

  Flags
    --port <n>      port to listen on (default 8080; 0 picks a free one)
    --host <addr>   address to bind (default 127.0.0.1)
    --data <dir>    PGlite data folder (default <store>/hub)
    --admin <name>  the first admin of a new organization
    --org <slug>    the organization to verify, checkpoint or give an admin
    --user <name>   org admin add: the person made an active admin (created when there is none;
                    one who never had a key gets an invitation to redeem, one whose keys are all
                    revoked gets a new key; either is shown once)
    --url <hub>     org create, login-link, invite: the hub's address, as people's browsers reach it (for the
                    link; default SVC_HUB_PUBLIC_URL, else http://127.0.0.1:8080)
    --key <key>     login-link, invite: an admin's API key (or SVC_HUB_KEY): ask the hub at --url
                    instead of opening the database, e.g. beside a hub running on PGlite
    --email <addr>  invite: the person's address (they are created when nobody has it)
    --name, --role, --group  invite: a new person's user name (default: from the address) and role
                    (default editor), and a group they join
    --checkpoints <dir>  also hold the chain against the signed checkpoints in dir: proves that
                    nothing up to the newest one was removed, edited or re-signed
    --trust-key <id>  a checkpoint key id to trust besides the hub's own (an earlier key)
    --out <dir>     where audit checkpoint writes its file; backup: the archive to write
    --force         backup: replace an existing --out; restore: replace the database in a non-empty --data
                    (its models/ stay)

  backup copies the PGlite folder (stop the hub first: it refuses beside a running one) into one
  checked archive; restore checks it whole, then rebuilds --data from it. On PostgreSQL use
  pg_dump / pg_restore (README: Backups). config lists every setting in effect, where it came
  from and what a start would refuse; secrets are never printed.

  Environment
    DATABASE_URL                 postgres://... (instead of PGlite)
    SVC_HUB_RATE_LIMIT           requests per minute per token (default 600)
    SVC_HUB_WRITE_RATE_LIMIT     writes per minute per token (default 60)
    SVC_HUB_AUTH_FAILURE_LIMIT   failed authentications per minute per address (default 30)
    SVC_HUB_AUDIT_KEY            the audit chain's HMAC key (else generated into the database)
    SVC_HUB_CHECKPOINT_KEY       Ed25519 PKCS#8 PEM, or a file holding it, that signs checkpoints
    SVC_HUB_CHECKPOINT_DIR       write a signed checkpoint per organization there at an interval
    SVC_HUB_CHECKPOINT_INTERVAL  seconds between checkpoints of a grown chain (default 60)
    SVC_HUB_CHECKPOINT_ROWS      rows after which a chain is checkpointed at once (default 100)
    SVC_HUB_DRAIN_SECONDS        on SIGTERM, how long queued audit rows may take (default 10)
    SVC_HUB_MCP_MESSAGE_LIMIT    MCP messages per minute per token (default 300)
    SVC_HUB_INGEST_LIMIT         writes per minute per user through MCP (default 120)
    SVC_HUB_MCP_SESSIONS_PER_TOKEN (16), SVC_HUB_MCP_SESSIONS_PER_USER (32), SVC_HUB_MCP_IDLE_SECONDS,
    SVC_HUB_MCP_MAX_MESSAGE_BYTES, SVC_HUB_MCP_MAX_BATCH (messages in a JSON-RPC batch, 20)
    SVC_HUB_STATEMENT_TIMEOUT    seconds a database statement may run (default 30; 0: no limit)
    SVC_HUB_IDLE_TRANSACTION_TIMEOUT  seconds a transaction may sit idle before it is rolled back (default 60)
    SVC_HUB_WEBHOOK_TIMEOUT      seconds a webhook receiver has to answer (default 10)
    SVC_HUB_WEBHOOK_RETRY_BASE   seconds before the first retry; doubles up to an hour (default 10)
    SVC_HUB_WEBHOOK_ATTEMPTS     attempts per delivery before giving up or disabling (default 12)
    SVC_HUB_ALLOW_PRIVATE_URLS   1: packs by URL and webhooks may reach private addresses and http
    SVC_HUB_PUBLIC_URL           the hub's address in browsers (sign-in redirects), e.g. https://hub.example.com
    SVC_HUB_SECRET_KEY           32 random bytes (base64 or hex) sealing the secrets kept in the database (else in clear)
    SVC_HUB_SECRET_KEY_OLD       earlier keys, comma-separated, still opening what they sealed (see secrets rotate)
    SVC_HUB_SMTP_URL             smtp://user:pass@host:587 or smtps://...: invitations and sign-in links by e-mail
    SVC_HUB_MAIL_FROM            their sender, e.g. "svc hub <hub@example.com>" (needed with SVC_HUB_SMTP_URL)
    SVC_HUB_JWT_SECRET, SVC_HUB_JWT_PREVIOUS_SECRET, SVC_HUB_DOCS_URL`;

const FLAGS = {
  port: { type: 'number' },
  host: { type: 'string' },
  data: { type: 'string' },
  admin: { type: 'string' },
  org: { type: 'string' },
  user: { type: 'string' },
  checkpoints: { type: 'string' },
  trustKey: { type: 'string', isMultiple: true },
  out: { type: 'string' },
  url: { type: 'string' },
  key: { type: 'string' },
  email: { type: 'string' },
  name: { type: 'string' },
  role: { type: 'string' },
  group: { type: 'string' },
  force: { type: 'boolean' },
} as const;

/** What a command can ask a running hub instead of opening its locked PGlite folder (the others need it stopped). */
const THROUGH_THE_HUB: Record<string, string> = {
  'svc hub login-link': 'add --url <hub> --key <admin API key>',
  'svc hub invite': 'add --url <hub> --key <admin API key>',
  'svc hub audit verify': 'GET /api/v1/admin/audit/verify, or the admin pages',
  'svc hub audit checkpoint': 'GET /api/v1/admin/audit/checkpoint',
};

/** The running command, as a lock on the PGlite folder names its holder. */
let command = 'svc hub';
/** What the last open() migrated: the migrations applied to the control schema and to each organization's. */
let migrated: { control: number; orgs: Record<string, number> } | undefined;

async function open(flags: { data?: string; path?: string }, serving = false): Promise<Database> {
  const { openDatabase, DataFolderInUse } = await import('../data/database.js');
  const { migrateHub } = await import('../data/migrate.js');
  const url = process.env.DATABASE_URL || undefined;
  const dataDir = flags.data ?? join(resolveStoreRoot(flags.path), 'hub');
  let db: Database | undefined;
  // A hub started before its PostgreSQL (an orchestrator's start order) waits for it, bounded:
  // 0.5 s, then twice as long each time (at most 5 s), for SVC_HUB_DATABASE_WAIT seconds.
  const until = Date.now() + (url && serving ? databaseWaitSeconds() : 0) * 1000;
  for (let wait = 500; ; wait = Math.min(wait * 2, 5_000)) {
    try {
      if (!url) mkdirSync(dataDir, { recursive: true });
      // PGlite is one process's: the folder is locked while a hub (or a command) has it open.
      db = await openDatabase(url ? { url } : { dataDir, holder: command });
      if (url) await db.query('SELECT 1');
      break;
    } catch (err) {
      await db?.close().catch(() => undefined);
      db = undefined;
      if (err instanceof DataFolderInUse) {
        throw new SvcError(
          'conflict',
          serving
            ? `${err.holder} (pid ${err.pid}) is already running on the data folder ${dataDir}: stop it first, or give this hub another --data`
            : `${err.holder} (pid ${err.pid}) is running on the data folder ${dataDir}: stop it first${THROUGH_THE_HUB[command] ? `, or do this through the running hub (${THROUGH_THE_HUB[command]})` : ''}`,
        );
      }
      const reason = (err as Error).message.split('\n')[0];
      if (url && Date.now() + wait <= until) {
        process.stderr.write(`svc hub: waiting for the PostgreSQL server at DATABASE_URL (${reason}); trying again in ${wait / 1000} s\n`);
        await sleep(wait);
        continue;
      }
      const where = url ? 'the PostgreSQL server at DATABASE_URL' : `the PGlite folder ${dataDir}`;
      const waited = url && serving ? ` (waited ${databaseWaitSeconds()} s for it; SVC_HUB_DATABASE_WAIT sets how long)` : '';
      throw new SvcError('storage', `cannot open ${where}: ${reason}${waited}`);
    }
  }
  migrated = await migrateHub(db!);
  return db!;
}

/** The PGlite folder the subcommands use: --data, else <store>/hub. */
const dataFolder = (flags: { data?: string; path?: string }): string => flags.data ?? join(resolveStoreRoot(flags.path), 'hub');

/** SVC_HUB_DATABASE_WAIT: how long `svc hub` waits for an unreachable PostgreSQL at start (default 60 s; 0: not at all). */
function databaseWaitSeconds(): number {
  const raw = process.env.SVC_HUB_DATABASE_WAIT;
  if (raw === undefined || raw === '') return 60;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw new SvcError('invalid', `SVC_HUB_DATABASE_WAIT must be a whole number of seconds, 0 to not wait (got "${raw}")`);
  return n;
}

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, FLAGS);
  const out = makeOutput(cli.flags);
  const [sub, ...rest] = cli.input;
  command = ['svc hub', ...cli.input.slice(0, 2)].join(' ');
  if (sub === undefined) return serve(cli.flags, out);
  // Every other subcommand runs a few statements and exits: PGlite on V8's baseline compiler, with a small buffer cache.
  (await import('../data/database.js')).runShortLived();
  if (sub === 'org' && rest[0] === 'create') return orgCreate(rest.slice(1), cli.flags, out);
  if (sub === 'org' && rest[0] === 'list') return orgList(cli.flags, out);
  if (sub === 'org' && rest[0] === 'admin' && rest[1] === 'add' && rest.length === 2) return orgAdminAdd(cli.flags, out);
  if (sub === 'login-link' && rest.length === 0) return loginLink(cli.flags, out);
  if (sub === 'invite' && rest.length === 0) return invite(cli.flags, out);
  if (sub === 'audit' && rest[0] === 'verify') return auditVerify(cli.flags, out);
  if (sub === 'audit' && rest[0] === 'checkpoint') return auditCheckpoint(cli.flags, out);
  if (sub === 'backup' && rest.length === 0)
    return (await import('./backup-command.js')).backup({ ...cli.flags, data: dataFolder(cli.flags) }, out);
  if (sub === 'restore') return (await import('./backup-command.js')).restore(rest, { ...cli.flags, data: dataFolder(cli.flags) }, out);
  if (sub === 'config' && rest.length === 0) return (await import('./config-command.js')).showConfig(cli.flags, dataFolder(cli.flags), out);
  if (sub === 'secrets' && rest[0] === 'rotate' && rest.length === 1)
    return (await import('./secrets-command.js')).rotate(cli.flags, out, open);
  if (sub === 'migrate') {
    const db = await open(cli.flags);
    await db.close();
    out.result({ migrated: true }, () => 'The hub database is up to date');
    return 0;
  }
  throw invalid(`unknown hub subcommand "${[sub, ...rest].join(' ')}" (see svc hub --help)`);
}

async function serve(flags: { port?: number; host?: string; data?: string; path?: string }, out: Output): Promise<number> {
  const refused = (await import('./config-command.js')).refuseBadSettings(flags, out);
  if (refused !== undefined) return refused;
  const port = flags.port ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw invalid(`--port must be a port number, 0 to 65535 (got ${flags.port})`);
  // The log: JSON lines on stderr (readable ones on a terminal) at SVC_HUB_LOG_LEVEL, checked before anything opens.
  const logger = (await import('../observe/logger.js')).createLogger();
  const [{ startHub }, { localEmbedderProvider }, { rerankerSetting }] = await Promise.all([
    import('../start.js'),
    import('../../engine/mcp/embedder-provider.js'),
    import('../../engine/rerank/reranker.js'),
  ]);
  // Ranking runs here: the embedding model (and SVC_RERANKER's cross-encoder) load from <data or store>/models on first use.
  const modelsRoot = flags.data ?? resolveStoreRoot(flags.path);
  const embedder = localEmbedderProvider(modelsRoot, { log: (m) => logger.warn({ event: 'embedder' }, m) });
  let running;
  let db: Database | undefined;
  try {
    running = await startHub({
      // Opened once the port is ours: a busy port is said at once, before PGlite starts or migrates.
      db: async () => (db = await open(flags, true)),
      port,
      host: flags.host ?? '127.0.0.1',
      embedder,
      reranker: rerankerSetting(modelsRoot),
      logger,
    });
  } catch (err) {
    await db?.close();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw invalid(`port ${port} is in use; pick another with --port`);
    throw err;
  }
  // Said once the port is ours: a busy port is the one line a failed start says.
  const applied = Object.values(migrated?.orgs ?? {}).reduce((a, b) => a + b, migrated?.control ?? 0);
  logger.info(
    { event: 'migrations', applied, control: migrated?.control ?? 0, organizations: Object.keys(migrated?.orgs ?? {}).length },
    applied ? `applied ${applied} database migrations` : 'the database is at the newest migration',
  );
  // The URL goes to stdout in both modes: scripts wait for it.
  out.result(
    { url: running.url, database: running.db.kind },
    () => `svc hub listening on ${running.url} (${running.db.kind === 'postgres' ? 'PostgreSQL' : 'PGlite'})`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  // The audit queue gets its drain window; after it the process ends whatever the database does.
  const drain = Number(process.env.SVC_HUB_DRAIN_SECONDS || 10);
  await running.close((Number.isFinite(drain) && drain >= 0 ? drain : 10) * 1000);
  await Promise.race([running.db.close().catch(() => undefined), sleep(2000, undefined, { ref: false })]);
  return 0;
}

async function orgCreate(
  args: string[],
  flags: { admin?: string; url?: string; data?: string; path?: string },
  out: Output,
): Promise<number> {
  const [slug] = args;
  if (!slug || args.length !== 1) throw invalid('usage: svc hub org create <slug> --admin <name>');
  if (!flags.admin) throw invalid("--admin <name> is required: the organization's first admin");
  (await import('../data/organizations.js')).checkSlug(slug); // before the database opens: a typo answers at once
  const db = await open(flags);
  try {
    const [{ createOrgWithAdmin, mintLoginLinkLocally }, { loadConfig }, { linkPath }] = await Promise.all([
      import('../admin/provision.js'),
      import('../config.js'),
      import('../login/login-links.js'),
    ]);
    const config = await loadConfig(db);
    const r = await createOrgWithAdmin(db, slug, flags.admin);
    const { link } = await mintLoginLinkLocally(db, slug, flags.admin, config.auditKey);
    const url = linkBase(flags, config.publicUrl) + linkPath(link.token);
    out.result(
      {
        org: { id: r.org.id, slug: r.org.slug, schema: r.org.schema },
        admin: { id: r.userId, name: flags.admin },
        api_key: r.apiKey,
        api_key_id: r.keyId,
        sign_in: { url, expires_at: link.expiresAt },
      },
      () =>
        [
          `Created organization ${slug} with admin ${flags.admin}.`,
          `API key (shown once, keep it safe):`,
          r.apiKey,
          `Sign-in link to the admin pages (works once, for 10 minutes; start the hub first; a new one: svc hub login-link --org ${slug}):`,
          url,
        ].join('\n'),
    );
    return 0;
  } finally {
    await db.close();
  }
}

async function orgAdminAdd(flags: { org?: string; user?: string; data?: string; path?: string }, out: Output): Promise<number> {
  if (!flags.org || !flags.user) throw invalid('usage: svc hub org admin add --org <slug> --user <name>');
  const db = await open(flags);
  try {
    const [{ addOrgAdmin }, { loadConfig }] = await Promise.all([import('../admin/provision.js'), import('../config.js')]);
    const r = await addOrgAdmin(db, flags.org, flags.user, (await loadConfig(db)).auditKey);
    out.result(
      {
        org: { id: r.org.id, slug: r.org.slug },
        user: r.user,
        created: r.created,
        previous: r.previous,
        invitation: r.invitation,
        api_key: r.api_key,
      },
      () =>
        [
          `${r.user.name} is now an active admin of ${r.org.slug}${r.created ? ' (created)' : r.previous ? ` (was ${r.previous.role}${r.previous.active ? '' : ', deactivated'})` : ''}.`,
          ...(r.invitation
            ? [`Invitation for their first API key (shown once; redeem with POST /api/v1/invitations/redeem):`, r.invitation.token]
            : []),
          ...(r.api_key ? [`They hold no live API key; a new one (shown once, keep it safe):`, r.api_key.key] : []),
        ].join('\n'),
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
    out.result({ orgs: orgs.map((o) => ({ id: o.id, slug: o.slug, schema: o.schema })) }, () =>
      orgs.length ? orgs.map((o) => o.slug).join('\n') : 'No organizations yet',
    );
    return 0;
  } finally {
    await db.close();
  }
}

async function auditVerify(
  flags: { org?: string; checkpoints?: string; trustKey?: string[]; data?: string; path?: string },
  out: Output,
): Promise<number> {
  if (!flags.org) throw invalid('--org <slug> is required');
  if (flags.checkpoints && !existsSync(flags.checkpoints)) throw invalid(`--checkpoints: no folder ${flags.checkpoints}`);
  const db = await open(flags);
  try {
    const [{ getOrg }, { verifyAudit }, { loadConfig }, cp] = await Promise.all([
      import('../data/organizations.js'),
      import('../audit/audit-log.js'),
      import('../config.js'),
      import('../audit/checkpoints.js'),
    ]);
    const org = await getOrg(db, flags.org);
    const config = await loadConfig(db);
    const chain = await verifyAudit(db, org, config.auditKey);
    let report: import('../audit/checkpoints.js').CheckpointReport | undefined;
    if (flags.checkpoints) {
      const { checkpoints, unreadable } = cp.readCheckpoints(flags.checkpoints, org.slug);
      if (checkpoints.length === 0)
        throw invalid(
          `--checkpoints: ${flags.checkpoints} holds no checkpoint of ${org.slug}${unreadable.length ? ` (${unreadable.length} unreadable files)` : ''}`,
        );
      report = await cp.checkAgainstCheckpoints(db, org, chain, checkpoints, [config.checkpointKey.id, ...(flags.trustKey ?? [])]);
      for (const f of unreadable) report.problems.push({ file: f, problem: 'not readable as JSON' });
    }
    const ok = chain.ok && (report?.problems.length ?? 0) === 0;
    out.result({ org: flags.org, ...chain, ok, ...(report ? { checkpoints: report } : {}) }, () => auditText(flags.org!, chain, report));
    return ok ? 0 : 1;
  } finally {
    await db.close();
  }
}

function auditText(
  org: string,
  chain: import('../audit/audit-log.js').VerifyResult,
  report?: import('../audit/checkpoints.js').CheckpointReport,
): string {
  const lines = [
    chain.ok && report?.cut
      ? `Audit chain of ${org} CUT: it ends at row ${report.cut.head}, but checkpoint ${report.cut.file} (${report.cut.at}) signed row ${report.cut.seq}`
      : chain.ok
        ? `Audit chain of ${org} intact: ${chain.rows} rows`
        : `Audit chain of ${org} BROKEN at row ${chain.first_bad!.seq}: ${chain.first_bad!.problem} (${chain.rows} rows before it verified)`,
  ];
  for (const g of chain.gaps) lines.push(`  gap at row ${g.seq}: ${g.lost} row(s) could not be written (${g.reason})`);
  for (const w of chain.unfinished)
    lines.push(
      `  a hub process started writing at row ${w.started_seq} (${w.started_at}) and has no stop marker: it is still running, or it crashed and lost the read rows it had queued`,
    );
  if (report) {
    if (report.latest)
      lines.push(
        `  ${report.checked} checkpoint(s); the newest that holds is row ${report.latest.seq} of ${report.latest.at}: nothing up to it was removed, edited or re-signed`,
      );
    for (const p of report.problems) lines.push(`  CHECKPOINT ${p.file}: ${p.problem}`);
  }
  return lines.join('\n');
}

async function auditCheckpoint(flags: { org?: string; out?: string; data?: string; path?: string }, out: Output): Promise<number> {
  if (!flags.org) throw invalid('--org <slug> is required');
  if (!flags.out)
    throw invalid('--out <dir> is required: a folder outside the database, kept where whoever holds the database cannot change it');
  const db = await open(flags);
  try {
    const [{ getOrg }, { loadConfig }, cp] = await Promise.all([
      import('../data/organizations.js'),
      import('../config.js'),
      import('../audit/checkpoints.js'),
    ]);
    const org = await getOrg(db, flags.org);
    const config = await loadConfig(db);
    let checkpoint;
    try {
      checkpoint = await new cp.Checkpointer(db, config.auditKey, config.checkpointKey).current(org);
    } catch (err) {
      throw new SvcError('conflict', (err as Error).message);
    }
    const file = cp.writeCheckpoint(flags.out, checkpoint);
    out.result(
      { file, checkpoint },
      () => `Checkpoint of ${org.slug} at row ${checkpoint.seq} written to ${file} (key ${checkpoint.key_id})`,
    );
    return 0;
  } finally {
    await db.close();
  }
}

/** Where links point: --url, else SVC_HUB_PUBLIC_URL, else the default address of svc hub. */
function linkBase(flags: { url?: string }, publicUrl?: string): string {
  const base = flags.url ?? publicUrl ?? 'http://127.0.0.1:8080';
  if (!/^https?:\/\/[^/?#\s]+\/?$/.test(base))
    throw invalid(`--url must be the hub's origin, such as http://127.0.0.1:8080 (got "${base}")`);
  return base.replace(/\/$/, '');
}

/** A call to the running hub's REST API as an admin (--url, --key); its refusal as one line. */
async function askHub<T>(flags: { url?: string; org?: string }, key: string, path: string, body?: unknown): Promise<T> {
  const base = linkBase(flags);
  if (!flags.url) throw invalid('--key needs --url <hub>: the running hub to ask');
  if (body !== undefined) {
    // The key names its organization: it must be the one --org names.
    const me = await askHub<{ org: { slug: string } }>(flags, key, '/me');
    if (me.org.slug !== flags.org) throw invalid(`--key is a key of ${me.org.slug}, not of ${flags.org}`);
  }
  let res: Response;
  try {
    res = await fetch(`${base}/api/v1${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (err) {
    throw new SvcError(
      'storage',
      `cannot reach the hub at ${base}: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`,
    );
  }
  const text = await res.text();
  let doc: Record<string, unknown> = {};
  try {
    doc = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not the hub, or not JSON: said below.
  }
  if (res.ok) return doc as T;
  const why = typeof doc.detail === 'string' ? doc.detail : `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`;
  const kind =
    res.status === 404
      ? 'not_found'
      : res.status === 409
        ? 'conflict'
        : res.status === 401 || res.status === 403
          ? 'forbidden'
          : res.status >= 500
            ? 'storage'
            : 'invalid';
  throw new SvcError(kind, `the hub at ${base} refused: ${why}`);
}

const adminKey = (flags: { key?: string }): string | undefined => flags.key ?? (process.env.SVC_HUB_KEY || undefined);

async function loginLink(
  flags: { org?: string; user?: string; url?: string; key?: string; data?: string; path?: string },
  out: Output,
): Promise<number> {
  if (!flags.org) throw invalid('usage: svc hub login-link --org <slug> [--user <name>] [--url <hub> --key <admin key>]');
  const key = adminKey(flags);
  let r: { user: { name: string }; expires_at: string; url?: string; emailed: boolean; sent_to?: string };
  if (key) {
    r = await askHub(flags, key, '/admin/login-links', flags.user ? { user: flags.user } : {});
  } else {
    const db = await open(flags);
    try {
      const [{ mintLoginLinkLocally }, { loadConfig }, { linkPath }] = await Promise.all([
        import('../admin/provision.js'),
        import('../config.js'),
        import('../login/login-links.js'),
      ]);
      const config = await loadConfig(db);
      const { link } = await mintLoginLinkLocally(db, flags.org, flags.user, config.auditKey);
      r = {
        user: { name: link.user.name },
        expires_at: link.expiresAt,
        url: linkBase(flags, config.publicUrl) + linkPath(link.token),
        emailed: false,
      };
    } finally {
      await db.close();
    }
  }
  out.result({ org: flags.org, ...r }, () =>
    r.emailed
      ? `A sign-in link for ${r.user.name} was e-mailed to ${r.sent_to} (works once, until ${r.expires_at}).`
      : [`Sign-in link for ${r.user.name} at ${flags.org} (works once, for one browser, until ${r.expires_at}):`, r.url!].join('\n'),
  );
  return 0;
}

async function invite(
  flags: {
    org?: string;
    email?: string;
    name?: string;
    role?: string;
    group?: string;
    url?: string;
    key?: string;
    data?: string;
    path?: string;
  },
  out: Output,
): Promise<number> {
  if (!flags.org || !flags.email)
    throw invalid('usage: svc hub invite --org <slug> --email <address> [--name <name>] [--role viewer|editor|admin] [--group <path>]');
  if (flags.role && !['viewer', 'editor', 'admin'].includes(flags.role))
    throw invalid(`--role must be viewer, editor or admin (got "${flags.role}")`);
  const key = adminKey(flags);
  const body = {
    email: flags.email,
    ...(flags.name ? { name: flags.name } : {}),
    ...(flags.role ? { role: flags.role } : {}),
    ...(flags.group ? { group: flags.group } : {}),
  };
  let r: { user: { name: string; created?: boolean }; expires_at: string; url?: string; emailed: boolean; sent_to?: string };
  if (key) {
    r = await askHub(flags, key, '/admin/invitations', body);
  } else {
    const db = await open(flags);
    try {
      const [{ invitePersonLocally }, { loadConfig }, mail] = await Promise.all([
        import('../admin/provision.js'),
        import('../config.js'),
        import('../mail/mailer.js'),
      ]);
      const config = await loadConfig(db);
      const made = await invitePersonLocally(db, flags.org, { ...body, role: flags.role as 'editor' | undefined }, config.auditKey);
      const url = `${linkBase(flags, config.publicUrl)}/invite/${made.token}`;
      const emailed = Boolean(config.mail && made.user.email);
      if (emailed) {
        try {
          await mail.sendMail(
            config.mail!,
            mail.invitationMessage({
              org: made.org.slug,
              name: made.user.name,
              address: made.user.email!,
              url,
              by: `An admin of ${made.org.slug}`,
              expiresAt: made.invitation.expires_at,
            }),
          );
        } catch (err) {
          // The invitation stands: the operator passes the link on by hand.
          out.warn(`${(err as Error).message}; pass the link on yourself`);
          r = { user: { name: made.user.name, created: made.created }, expires_at: made.invitation.expires_at, url, emailed: false };
          return printInvite(flags.org, r, out);
        }
      }
      r = {
        user: { name: made.user.name, created: made.created },
        expires_at: made.invitation.expires_at,
        emailed,
        ...(emailed ? { sent_to: made.user.email! } : { url }),
      };
    } finally {
      await db.close();
    }
  }
  return printInvite(flags.org, r, out);
}

function printInvite(
  org: string,
  r: { user: { name: string; created?: boolean }; expires_at: string; url?: string; emailed: boolean; sent_to?: string },
  out: Output,
): number {
  out.result({ org, ...r }, () =>
    [
      `Invited ${r.user.name}${r.user.created ? ' (created)' : ''} to ${org}.`,
      r.emailed
        ? `The invitation was e-mailed to ${r.sent_to} (works once, until ${r.expires_at}).`
        : `Send them this link (works once, until ${r.expires_at}; it signs them in and shows their first API key):\n${r.url}`,
    ].join('\n'),
  );
  return 0;
}
