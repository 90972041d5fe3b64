import { dirname, join } from 'node:path';
import { invalid, SvcError } from '../../engine/errors.js';
import { findProjectConfigPath, loadProjectConfig, localConfigPath, LOCAL_CONFIG_NAME } from '../../engine/config/project-config.js';
import { makeOutput, parseArgs, splitList } from '../../engine/cli/cli-kit.js';
import { applyPlan, readTextOrNull, withGitignoreLine, type PlannedFile } from './config-files.js';
import { svcYamlWith } from './dot-svc-yaml.js';
import { httpSend, type HttpAnswer } from '../../engine/remote/http-send.js';

const HELP = `
  Usage
    svc init-remote --url <url> --token <key> [--scopes a,b] [--no-gitignore]
    svc init-remote
    svc init-remote --verify

  Opts this project into recall from the server: tests the token against GET <url>/api/v1/me,
  then writes remote_url and remote_scopes into .svc.yaml (the nearest one, up to the repository
  root, else a new one here), which stays committable, and the token into .svc.local.yaml beside
  it (mode 0600, gitignored: a credential of this machine). A rejected token or an unreachable
  server writes nothing. Without --url and --token it takes the project's current ones: run
  alone, it moves a token an older .svc.yaml still holds into .svc.local.yaml.

  Flags
    --url <url>        server base address (default: the project's remote_url)
    --token <key>      API key (default: the project's token)
    --scopes <list>    comma-separated scope whitelist (default: every readable scope;
                       --scopes "" removes a whitelist written before)
    --no-gitignore     do not add .svc.local.yaml to .gitignore (not recommended)
    --verify           test the nearest .svc.yaml's server and token; exit 2 on failure`;

/** How long the token test may take before the server counts as unreachable. */
const ME_TIMEOUT_MS = 10_000;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    url: { type: 'string' },
    token: { type: 'string' },
    scopes: { type: 'string' },
    gitignore: { type: 'boolean' },
    verify: { type: 'boolean' },
  });
  const out = makeOutput(cli.flags);
  const f = cli.flags;
  if (cli.input.length > 0) throw invalid(`svc init-remote takes no arguments (got "${cli.input.join(' ')}")`);

  if (f.verify) {
    if (f.url !== undefined || f.token !== undefined || f.scopes !== undefined) {
      throw invalid('--verify reads .svc.yaml: do not combine it with --url, --token or --scopes');
    }
    return verify(out);
  }

  const cwd = process.cwd();
  // Without --url and --token: the project's own (run alone, this moves an old token out of .svc.yaml).
  const current = f.url === undefined || f.token === undefined ? await loadProjectConfig(cwd) : null;
  const rawUrl = f.url ?? current?.remote_url;
  const rawToken = f.token ?? current?.remote_token;
  if (!rawUrl) throw invalid('--url is required (the server base address)');
  if (!rawToken || rawToken.trim() === '') throw invalid('--token is required (an API key from the server)');
  const url = normalizeUrl(rawUrl);
  const token = rawToken.trim();
  const scopes = f.scopes === undefined ? undefined : splitList(f.scopes, 'scopes')!;

  const me = await checkToken(url, token);
  if (!me.ok) throw new SvcError('invalid', `${me.error}; .svc.yaml was not written`);

  const path = findProjectConfigPath(cwd) ?? join(cwd, '.svc.yaml');
  const localPath = localConfigPath(path);
  const hadToken = /^remote_token\s*:/m.test(readTextOrNull(path) ?? '');
  const files: PlannedFile[] = [
    {
      path,
      role: 'remote_url' + (scopes?.length ? ', remote_scopes' : '') + ' (committable)',
      // The token is no longer kept here: the file can be committed with the project's scope and domain.
      content: await svcYamlWith(path, {
        remote_url: url,
        remote_token: null,
        remote_scopes: scopes === undefined ? undefined : scopes.length > 0 ? scopes : null,
      }),
    },
    // It holds a credential in plaintext.
    {
      path: localPath,
      role: 'remote_token (this machine only)',
      content: await svcYamlWith(localPath, { remote_token: token }),
      mode: 0o600,
      forceMode: true,
    },
  ];
  if (f.gitignore !== false) {
    const gitignore = join(dirname(path), '.gitignore');
    let text = withGitignoreLine(readTextOrNull(gitignore), LOCAL_CONFIG_NAME);
    // .svc.yaml was gitignored while it held the token; it holds none now.
    if (hadToken)
      text = text
        .split('\n')
        .filter((l) => l.trim() !== '.svc.yaml' && l.trim() !== '/.svc.yaml')
        .join('\n');
    files.push({ path: gitignore, role: `${LOCAL_CONFIG_NAME} (a credential file)`, content: text });
  } else {
    out.warn(`${LOCAL_CONFIG_NAME} holds the token in plaintext and is not gitignored: do not commit it`);
  }
  const unknownScopes = scopes && me.scopes ? scopes.filter((s) => !me.scopes!.includes(s)) : [];
  if (unknownScopes.length > 0) out.warn(`the server does not list ${unknownScopes.join(', ')} among this token's readable scopes`);

  const written = applyPlan(files);
  const result = {
    path,
    token_path: localPath,
    remote_url: url,
    remote_scopes: scopes ?? null,
    identity: me.identity,
    ...(hadToken ? { moved_token: true } : {}),
    files: written,
  };
  out.result(result, () =>
    [
      `Token accepted by ${url}${me.identity ? ` (${me.identity})` : ''}.`,
      ...written.map((w) => `  ${w.status.padEnd(9)}  ${w.path}  ${w.role}`),
      ...(hadToken ? [`The token moved from ${path} to ${localPath}: ${path} can be committed now.`] : []),
      `Recall in this project now also queries ${scopes?.length ? scopes.join(', ') : 'every readable scope'} on the server.`,
    ].join('\n'),
  );
  return 0;
}

async function verify(out: ReturnType<typeof makeOutput>): Promise<number> {
  const cwd = process.cwd();
  const fail = (path: string | null, error: string): number => {
    if (out.json) out.result({ ok: false, path, error }, () => '');
    else process.stderr.write(`svc: remote check failed: ${error}\n`);
    return 2;
  };
  let config;
  try {
    config = await loadProjectConfig(cwd);
  } catch (err) {
    return fail(findProjectConfigPath(cwd), (err as Error).message);
  }
  if (!config)
    return fail(null, `no .svc.yaml in ${cwd} or above it (up to the repository root); run svc init-remote --url <url> --token <key>`);
  if (!config.remote_url || !config.remote_token) {
    return fail(
      config.path,
      `${config.path} has no remote_url, or no remote_token (in ${LOCAL_CONFIG_NAME} beside it); run svc init-remote --url <url> --token <key>`,
    );
  }
  let url: string;
  try {
    url = normalizeUrl(config.remote_url);
  } catch (err) {
    return fail(config.path, `${config.path}: ${(err as Error).message}`);
  }
  const me = await checkToken(url, config.remote_token);
  if (!me.ok) return fail(config.path, me.error);
  out.result(
    { ok: true, path: config.path, remote_url: url, identity: me.identity, remote_scopes: config.remote_scopes ?? null },
    () => `ok: ${url} accepts the token in ${config.remote_token_path ?? config.path}${me.identity ? ` (${me.identity})` : ''}`,
  );
  return 0;
}

function normalizeUrl(raw: string): string {
  const text = raw.trim().replace(/\/+$/, '');
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw invalid(`--url must be an http(s) address (got "${raw}")`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid(`--url must be an http(s) address (got "${raw}")`);
  return text;
}

type MeResult = { ok: true; identity?: string; scopes?: string[] } | { ok: false; error: string };

/** `GET {url}/api/v1/me` with the token: 2xx accepts it; anything else names why not. */
export async function checkToken(url: string, token: string): Promise<MeResult> {
  const endpoint = `${url}/api/v1/me`;
  let res: HttpAnswer;
  try {
    res = await httpSend(endpoint, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      timeoutMs: ME_TIMEOUT_MS,
    });
  } catch (err) {
    return { ok: false, error: `cannot reach ${endpoint}: ${(err as Error).message}` };
  }
  const body = res.text;
  if (res.status === 401 || res.status === 403) {
    return { ok: false, error: `the server rejected the token (HTTP ${res.status} from ${endpoint})` };
  }
  if (res.status >= 300 && res.status < 400) {
    return { ok: false, error: `${endpoint} answered HTTP ${res.status}, a redirect to ${res.location ?? '?'}: use the address it names` };
  }
  if (res.status < 200 || res.status >= 300) return { ok: false, error: `${endpoint} answered HTTP ${res.status}` };
  let data: unknown;
  try {
    data = JSON.parse(body);
  } catch {
    return { ok: false, error: `${endpoint} did not answer JSON: is ${url} an svc server?` };
  }
  return { ok: true, identity: identityOf(data), scopes: scopesOf(data) };
}

function identityOf(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const d = data as Record<string, unknown>;
  const user = (typeof d.user === 'object' && d.user !== null ? d.user : d) as Record<string, unknown>;
  for (const key of ['email', 'username', 'name', 'id']) {
    if (typeof user[key] === 'string' && user[key]) return user[key] as string;
  }
  return undefined;
}

function scopesOf(data: unknown): string[] | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const d = data as Record<string, unknown>;
  const list = d.scopes ?? d.readable_scopes;
  if (!Array.isArray(list)) return undefined;
  const names = list.map((s) =>
    typeof s === 'string'
      ? s
      : typeof s === 'object' && s !== null
        ? ((s as Record<string, unknown>).scope ?? (s as Record<string, unknown>).name)
        : undefined,
  );
  return names.every((n) => typeof n === 'string') ? (names as string[]) : undefined;
}
