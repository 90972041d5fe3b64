import { chmodSync, existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { invalid } from '../../engine/errors.js';
import { writeFileDurable } from '../../engine/store/durable-write.js';

// Reading and writing the hosts' config files without harming them: a malformed file is an
// error that names it and leaves it untouched; a rewrite is atomic (temp file + rename), keeps
// the file's mode, writes through a symlink rather than replacing it, and is skipped when the
// bytes would not change (so a second `svc init` leaves every file as it was).

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses a JSON object file; a missing or blank file is `{}`. Throws `invalid` naming the file. */
export function readJsonObject(path: string): { exists: boolean; data: JsonObject } {
  if (!existsSync(path)) return { exists: false, data: {} };
  const text = readFileSync(path, 'utf8');
  if (text.trim() === '') return { exists: true, data: {} };
  let data: unknown;
  try {
    data = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw invalid(`${path} is not valid JSON (${(err as Error).message}); fix it by hand and run again: nothing was changed`);
  }
  if (!isObject(data)) throw invalid(`${path} must hold a JSON object; fix it by hand and run again: nothing was changed`);
  return { exists: true, data };
}

/** Two-space JSON with a final newline, the way the hosts write their own files. */
export function formatJson(data: unknown): string {
  return JSON.stringify(data, null, 2) + '\n';
}

export type WriteStatus = 'created' | 'updated' | 'unchanged';

export interface PlannedFile {
  path: string;
  /** What the file is for, for the summary. */
  role: string;
  content: string;
  /** Mode for a new file (default 0o644); `force` also applies it to an existing one. */
  mode?: number;
  forceMode?: boolean;
}

export interface WrittenFile {
  path: string;
  role: string;
  status: WriteStatus;
}

/** Writes each planned file whose bytes differ; reports created / updated / unchanged. */
export function applyPlan(files: PlannedFile[]): WrittenFile[] {
  return files.map((f) => ({ path: f.path, role: f.role, status: writeIfChanged(f) }));
}

function writeIfChanged(f: PlannedFile): WriteStatus {
  const exists = existsSync(f.path);
  const target = exists ? realpathSync(f.path) : f.path;
  if (exists && readFileSync(target, 'utf8') === f.content) {
    if (f.forceMode && f.mode !== undefined && (statSync(target).mode & 0o7777) !== f.mode) {
      chmodSync(target, f.mode);
      return 'updated';
    }
    return 'unchanged';
  }
  const mode = exists && !f.forceMode ? statSync(target).mode & 0o7777 : (f.mode ?? 0o644);
  writeFileDurable(target, f.content, { mode, mkdir: true });
  return exists ? 'updated' : 'created';
}

/** The text of `.gitignore` with `line` added when no line already says it. */
export function withGitignoreLine(existing: string | null, line: string): string {
  const text = existing ?? '';
  const present = text.split(/\r?\n/).some((l) => l.trim() === line || l.trim() === `/${line}`);
  if (present) return text;
  const sep = text === '' || text.endsWith('\n') ? '' : '\n';
  return `${text}${sep}${line}\n`;
}

export function readTextOrNull(path: string): string | null {
  return existsSync(path) ? readFileSync(path, 'utf8') : null;
}
