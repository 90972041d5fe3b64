import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { invalid } from '../errors.js';

// `.svc.yaml` binds a directory tree to a scope and domain (and, later, a remote hub).
// It is found by walking up from the working directory, stopping at the repository root.

export interface ProjectConfig {
  path: string;
  scope?: string;
  domain?: string;
  remote_url?: string;
  remote_token?: string;
  remote_scopes?: string[];
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

export async function loadProjectConfig(cwd: string): Promise<ProjectConfig | null> {
  const path = findProjectConfigPath(cwd);
  if (!path) return null;
  const { parse } = await import('yaml');
  let data: unknown;
  try {
    data = parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw invalid(`${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (data === null || data === undefined) return { path };
  if (typeof data !== 'object' || Array.isArray(data)) throw invalid(`${path} must hold a YAML mapping`);
  const d = data as Record<string, unknown>;
  const str = (key: string): string | undefined => {
    const v = d[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string' || v.trim() === '') throw invalid(`${path}: ${key} must be a non-empty string`);
    return v.trim();
  };
  const scopes = d.remote_scopes;
  return {
    path,
    scope: str('scope'),
    domain: str('domain'),
    remote_url: str('remote_url'),
    remote_token: str('remote_token'),
    remote_scopes: Array.isArray(scopes) ? scopes.map(String) : typeof scopes === 'string' ? scopes.split(',').map((s) => s.trim()) : undefined,
  };
}
