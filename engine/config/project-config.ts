import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { invalid } from '../errors.js';
import { parseYaml } from '../store/yaml-codec.js';

// `.svc.yaml` binds a directory tree to a scope and domain (and a hub: remote_url, remote_scopes).
// It is found by walking up from the working directory, stopping at the repository root, and is
// meant to be committed. The hub's token is a credential of this machine: it lives in
// `.svc.local.yaml` beside it (mode 0600, gitignored). An older `.svc.yaml` that still holds
// remote_token keeps working (svc init-remote moves it; svc doctor says so).

export const LOCAL_CONFIG_NAME = '.svc.local.yaml';

export interface ProjectConfig {
  path: string;
  scope?: string;
  domain?: string;
  remote_url?: string;
  remote_token?: string;
  remote_scopes?: string[];
  /** The file remote_token was read from (`.svc.local.yaml`, or `.svc.yaml` in the old layout). */
  remote_token_path?: string;
  /** Learns without a scope may be routed to a team scope on the hub (else they stay local, with a suggestion). */
  route_to_team?: boolean;
}

export function findProjectConfigPath(cwd: string): string | null {
  let dir = cwd;
  for (;;) {
    const candidate = join(dir, '.svc.yaml');
    if (existsSync(candidate)) return candidate;
    if (existsSync(join(dir, '.git'))) return null;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** The machine-local file beside a project's `.svc.yaml`. */
export const localConfigPath = (projectConfigPath: string) => join(dirname(projectConfigPath), LOCAL_CONFIG_NAME);

/** A config file's mapping. Every command in a configured project reads it: parseYaml loads no YAML package for what svc writes. */
function readMapping(path: string): Record<string, unknown> {
  let data: unknown;
  try {
    data = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw invalid(`${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw invalid(`${path} must hold a YAML mapping`);
  return data as Record<string, unknown>;
}

function stringOf(d: Record<string, unknown>, key: string, path: string): string | undefined {
  const v = d[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.trim() === '') throw invalid(`${path}: ${key} must be a non-empty string`);
  return v.trim();
}

export async function loadProjectConfig(cwd: string): Promise<ProjectConfig | null> {
  const path = findProjectConfigPath(cwd);
  if (!path) return null;
  const d = readMapping(path);
  const localPath = localConfigPath(path);
  const local = existsSync(localPath) ? readMapping(localPath) : {};
  const localToken = stringOf(local, 'remote_token', localPath);
  const sharedToken = stringOf(d, 'remote_token', path);
  const token = localToken ?? sharedToken;
  const route = d.route_to_team;
  if (route !== undefined && route !== null && typeof route !== 'boolean') throw invalid(`${path}: route_to_team must be true or false`);
  const scopes = d.remote_scopes;
  return {
    path,
    scope: stringOf(d, 'scope', path),
    domain: stringOf(d, 'domain', path),
    remote_url: stringOf(d, 'remote_url', path),
    remote_token: token,
    remote_scopes: Array.isArray(scopes)
      ? scopes.map(String)
      : typeof scopes === 'string'
        ? scopes.split(',').map((s) => s.trim())
        : undefined,
    ...(token ? { remote_token_path: localToken ? localPath : path } : {}),
    ...(route === true ? { route_to_team: true } : {}),
  };
}
