import { existsSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathKind, peekManifest } from './format.js';
import { installedVersion, type PackRegistry } from './registry.js';

// Discover: pack folders on this machine that are not installed, or only in an older version.

export interface DiscoveredPack {
  name: string;
  version: number | null;
  description: string;
  creator: string;
  engram_count: number | null;
  path: string;
  /** The installed version, when an older one is installed. */
  installed_version: number | null;
}

export interface DiscoverResult {
  count: number;
  packs: DiscoveredPack[];
  /** Where it looked. */
  searched: string[];
  notes: string[];
}

/**
 * Packs available but not installed (or installed in an older version): pack folders under
 * ~/svc-packs (or `dirs`), matching any word of `query` in name or description. A pack folder
 * that is a link is skipped. Remote stores offer no packs in this version; a configured remote is noted.
 */
export async function discoverPacks(
  registry: PackRegistry,
  opts: { query?: string; limit?: number; dirs?: string[]; remote?: string } = {},
): Promise<DiscoverResult> {
  const dirs = (opts.dirs ?? [join(homedir(), 'svc-packs')]).map((d) => resolve(d));
  const installed = new Map((await registry.list()).packs.map((p) => [p.name, installedVersion(p)]));
  const words = (opts.query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const packs: DiscoveredPack[] = [];
  for (const dir of dirs) {
    // The folder searched may be a link (packs kept elsewhere); the packs in it may not.
    if (!existsSync(dir) || !statSync(dir).isDirectory()) continue;
    for (const entry of readdirSync(dir).sort()) {
      if (entry.startsWith('.')) continue;
      const path = join(dir, entry);
      if (pathKind(path) !== 'folder') continue;
      const m = await peekManifest(path);
      if (!m || typeof m.name !== 'string') continue;
      const version = Number.isInteger(m.version) ? (m.version as number) : null;
      const have = installed.get(m.name) ?? null;
      if (have !== null && (version === null || have >= version)) continue;
      const description = typeof m.description === 'string' ? m.description : '';
      const hay = `${m.name} ${description}`.toLowerCase();
      if (words.length && !words.some((w) => hay.includes(w))) continue;
      packs.push({
        name: m.name,
        version,
        description,
        creator: typeof m.creator === 'string' ? m.creator : '',
        engram_count: Number.isInteger(m.engram_count) ? (m.engram_count as number) : null,
        path,
        installed_version: have,
      });
    }
  }
  const limited = packs.slice(0, opts.limit ?? 20);
  const notes = opts.remote ? [`remote store ${opts.remote} is configured, but remote packs are not available in this version`] : [];
  return { count: limited.length, packs: limited, searched: dirs, notes };
}
