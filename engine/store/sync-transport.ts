import * as fs from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SvcError, invalid } from '../errors.js';

// Talking to a store's remote: fetch one branch, push one branch. HTTP(S) remotes go through
// isomorphic-git (no git installation needed); SSH remotes (git@host:path, ssh://) and local
// ones (a path, file://) go through the system `git`, which has the SSH client, keys and agent
// the user already set up. Everything else about sync (commits, merges) is isomorphic-git on
// the store's own .git either way.

type Git = typeof import('isomorphic-git');
type Http = typeof import('isomorphic-git/http/node');

export const REMOTE = 'origin';

let loaded: Promise<{ git: Git['default']; http: Http['default'] }> | undefined;
export function loadGit(): Promise<{ git: Git['default']; http: Http['default'] }> {
  return (loaded ??= Promise.all([import('isomorphic-git'), import('isomorphic-git/http/node')]).then(([g, h]) => ({
    git: g.default,
    http: h.default,
  })));
}

const run = promisify(execFile);

export type RemoteKind = 'http' | 'system';

/** Hides credentials in an address before it is shown. */
export function redactUrl(url: string): string {
  return url.replace(/^(https?:\/\/)[^@/]*@/i, '$1***@');
}

/** How a remote address is reached; refuses what is not a git remote. */
export function remoteKind(url: string): RemoteKind {
  if (/^https?:\/\/\S+$/i.test(url)) return 'http';
  if (/^(ssh|git\+ssh|file):\/\/\S+$/i.test(url) || /^[\w.-]+@[\w.-]+:\S+$/.test(url) || /^(\/|\.{1,2}\/|~\/)\S*$/.test(url))
    return 'system';
  throw invalid(
    `"${redactUrl(url)}" is not a git remote: use an https:// address, an SSH address (git@host:owner/repo.git, ssh://...) or a path to a repository`,
  );
}

async function systemGit(root: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  try {
    // Never wait for a password or a host-key prompt nobody will answer.
    const env = {
      ...process.env,
      GIT_TERMINAL_PROMPT: '0',
      GIT_SSH_COMMAND: process.env.GIT_SSH_COMMAND ?? 'ssh -o BatchMode=yes -o ConnectTimeout=10',
    };
    return await run('git', ['-C', root, ...args], { env, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') {
      throw new SvcError(
        'storage',
        'SSH and local-path remotes need the git command, which is not installed here: install git, or use an https:// remote',
      );
    }
    throw Object.assign(new Error((e.stderr || e.message).trim()), { stderr: e.stderr ?? '' });
  }
}

function networkError(action: string, url: string, err: unknown): SvcError {
  if (err instanceof SvcError) return err;
  const e = err as { code?: string; message?: string; data?: { statusCode?: number; statusMessage?: string } };
  const detail = e.data?.statusCode
    ? `HTTP ${e.data.statusCode} ${e.data.statusMessage ?? ''}`.trim()
    : (e.message ?? String(err)).trim().split('\n').slice(-3).join('; ');
  return new SvcError('storage', `cannot ${action} ${redactUrl(url)}: ${detail}`);
}

/**
 * Fetches the store's branch from the remote; the remote's commit of it, or null when the
 * remote does not have that branch yet (an empty repository, or one whose default branch is
 * another: the store's own branch is what is fetched, whatever the remote's HEAD says).
 */
export async function fetchBranch(root: string, url: string, branch: string, cache: object): Promise<string | null> {
  if (remoteKind(url) === 'system') return systemFetch(root, url, branch);
  const { git, http } = await loadGit();
  let refs: Array<{ ref: string }>;
  try {
    refs = await git.listServerRefs({ http, url, prefix: `refs/heads/${branch}` });
  } catch (err) {
    throw networkError('fetch from', url, err);
  }
  if (!refs.some((r) => r.ref === `refs/heads/${branch}`)) return null;
  try {
    const fetched = await git.fetch({
      fs,
      http,
      dir: root,
      remote: REMOTE,
      ref: branch,
      remoteRef: branch,
      singleBranch: true,
      tags: false,
      cache,
    });
    return fetched.fetchHead ?? null;
  } catch (err) {
    // isomorphic-git cannot fetch from a server whose HEAD names a branch that does not exist
    // (`git init --bare` points it at master): the system git can.
    if ((err as Error).message === 'Could not find HEAD.') {
      try {
        return await systemFetch(root, url, branch);
      } catch (fallback) {
        if (fallback instanceof SvcError && /not installed/.test(fallback.message)) {
          throw new SvcError(
            'storage',
            `cannot fetch from ${redactUrl(url)}: its HEAD names a branch that does not exist; point it at ${branch} (in the bare repository: git symbolic-ref HEAD refs/heads/${branch}), or install git`,
          );
        }
        throw fallback;
      }
    }
    throw networkError('fetch from', url, err);
  }
}

async function systemFetch(root: string, url: string, branch: string): Promise<string | null> {
  try {
    await systemGit(root, ['fetch', '--quiet', '--no-tags', url, `+refs/heads/${branch}:refs/remotes/${REMOTE}/${branch}`]);
  } catch (err) {
    if (/couldn't find remote ref|no such ref/i.test((err as Error).message)) return null;
    throw networkError('fetch from', url, err);
  }
  return resolveRef(root, `refs/remotes/${REMOTE}/${branch}`);
}

/** Pushes the branch; 'rejected' when the remote moved on (someone pushed first). */
export async function pushBranch(root: string, url: string, branch: string, cache: object): Promise<'pushed' | 'rejected'> {
  if (remoteKind(url) === 'system') {
    try {
      await systemGit(root, ['push', '--quiet', REMOTE, `refs/heads/${branch}:refs/heads/${branch}`]);
      return 'pushed';
    } catch (err) {
      if (
        /\[rejected\]|non-fast-forward|fetch first|failed to update ref/i.test(
          (err as { stderr?: string }).stderr ?? (err as Error).message,
        )
      )
        return 'rejected';
      throw networkError('push to', url, err);
    }
  }
  const { git, http } = await loadGit();
  try {
    const pushed = await git.push({ fs, http, dir: root, remote: REMOTE, ref: branch, remoteRef: branch, cache });
    if (pushed.ok) return 'pushed';
    const why = Object.values(pushed.refs ?? {})
      .map((r) => r.error)
      .filter(Boolean)
      .join('; ');
    if (/fetch first|non-fast-forward|rejected|failed to update ref/i.test(why)) return 'rejected';
    throw new SvcError('storage', `the remote refused the push: ${pushed.error ?? (why || 'unknown reason')}`);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'PushRejectedError') return 'rejected';
    if (code === 'GitPushError' && /fetch first|non-fast-forward|rejected|failed to update ref/i.test((err as Error).message))
      return 'rejected';
    throw networkError('push to', url, err);
  }
}

export async function resolveRef(root: string, ref: string): Promise<string | null> {
  const { git } = await loadGit();
  try {
    return await git.resolveRef({ fs, dir: root, ref });
  } catch {
    return null;
  }
}
