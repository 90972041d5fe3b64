import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { SvcError } from '../../errors.js';
import { writeFileDurable } from '../../store/durable-write.js';
import { checkPackName, MANIFEST_FILE, type PackManifest } from './format.js';

// Which packs a store has installed. The backend interface knows engrams, not packs, so the
// record lives beside it: on the local store `<store>/packs/<name>/pack.yaml` (the manifest
// plus installed_at, the source folder and the installed ids), committed with the engrams;
// `status` counts the entries of `<store>/packs/`. The hub implements PackRegistry in its own
// tables.
//
// An install writes the record twice: first with `state: installing` and every id it may write
// (the previous version's and the ones it allocated), before any engram; then, once the
// engrams are written, without `state` and with the ids it kept. A process killed in between
// leaves a record saying so, never engrams no record names: `packs list` reports it, and
// install (again) or uninstall finish the job.

export interface InstalledPack extends PackManifest {
  installed_at: string;
  /** The folder it was installed from. */
  source: string;
  /** Engrams of this pack in the store (any status but retired); while installing, every id the install may write. */
  ids: string[];
  /** Present while an install runs, and after one was interrupted. */
  state?: 'installing';
  /** While installing: the version that was installed before (null: none). */
  replaces?: number | null;
}

/** The version an install replaces: the installed one, or the one an interrupted install was replacing. */
export function installedVersion(record: InstalledPack | null): number | null {
  if (!record) return null;
  return record.state === 'installing' ? (record.replaces ?? null) : record.version;
}

export interface PackRegistry {
  list(): Promise<{ packs: InstalledPack[]; problems: string[] }>;
  get(name: string): Promise<InstalledPack | null>;
  put(record: InstalledPack): Promise<void>;
  /** Returns false when there was nothing to remove. */
  remove(name: string): Promise<boolean>;
}

export const PACKS_DIR = 'packs';

export class FilePackRegistry implements PackRegistry {
  readonly dir: string;

  constructor(storeRoot: string) {
    this.dir = join(storeRoot, PACKS_DIR);
  }

  async list(): Promise<{ packs: InstalledPack[]; problems: string[] }> {
    if (!existsSync(this.dir)) return { packs: [], problems: [] };
    const packs: InstalledPack[] = [];
    const problems: string[] = [];
    for (const name of readdirSync(this.dir).sort()) {
      if (name.startsWith('.')) continue;
      try {
        const record = await this.read(name);
        if (record) packs.push(record);
        else problems.push(`${join(this.dir, name)} holds no ${MANIFEST_FILE}`);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    return { packs, problems };
  }

  async get(name: string): Promise<InstalledPack | null> {
    if (checkPackName(name)) return null;
    return this.read(name);
  }

  async put(record: InstalledPack): Promise<void> {
    const { stringify } = await import('yaml');
    const dir = join(this.dir, record.name);
    mkdirSync(dir, { recursive: true });
    writeFileDurable(join(dir, MANIFEST_FILE), stringify(record, { lineWidth: 0 }));
  }

  async remove(name: string): Promise<boolean> {
    if (checkPackName(name)) return false;
    const dir = join(this.dir, name);
    if (!existsSync(dir)) return false;
    // Rename first, so a reader never sees half a record.
    const aside = join(this.dir, `.removed-${name}-${randomBytes(4).toString('hex')}`);
    renameSync(dir, aside);
    rmSync(aside, { recursive: true, force: true });
    return true;
  }

  private async read(name: string): Promise<InstalledPack | null> {
    const path = join(this.dir, name, MANIFEST_FILE);
    if (!existsSync(path)) return null;
    const { parse } = await import('yaml');
    let value: unknown;
    try {
      value = parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new SvcError('storage', `pack record ${path} is unreadable: ${(err as Error).message.split('\n')[0]}`);
    }
    const r = value as Partial<InstalledPack> | null;
    if (!r || typeof r !== 'object' || r.name !== name || !Array.isArray(r.ids)) {
      throw new SvcError('storage', `pack record ${path} is not a pack record (expected name "${name}" and a list of ids)`);
    }
    return r as InstalledPack;
  }
}
