// Reading an agent host's working memory for audit: Claude Code's CLAUDE.md files, rules and
// auto memory (followed through @imports), or a --from-json export for hosts whose memory svc
// cannot read, as a flat list of entries. Only reads; audit.ts classifies the entries.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { invalid } from '../errors.js';
import { oneLine } from '../text.js';

/** Hosts whose memory audit reads. The first reads its files; the others need --from-json. */
export const AUDIT_SOURCES = ['claude-code', 'cursor', 'claude-desktop'] as const;
export type AuditSource = (typeof AUDIT_SOURCES)[number];
export const DEFAULT_AUDIT_SOURCE: AuditSource = 'claude-code';

export interface MemoryEntry {
  text: string;
  /** The file it came from (absent for --from-json entries without one). */
  file?: string;
  line?: number;
  /** user: applies to every project (its relative paths are not checked against this one). */
  level?: 'project' | 'user' | 'auto' | 'import';
  /** An id the host gave the entry (--from-json objects may carry one). */
  id?: string;
}

export interface HostMemory {
  source: AuditSource;
  /** The project whose files orphan checks look at. */
  project_root: string;
  /** Files read, in order. */
  files: string[];
  /** Where audit looked (for "nothing found"). */
  looked_in: string[];
  entries: MemoryEntry[];
  warnings: string[];
}

export interface LoadOptions {
  source?: AuditSource;
  /** A JSON file: an array of strings or of objects with `text`. Required for the stub hosts. */
  fromJson?: string;
  /** Working directory (default process.cwd()); the project root is its git root. */
  cwd?: string;
  /** The project root, overriding the git-root search. */
  projectRoot?: string;
  /** Home directory (default os.homedir()); Claude Code's folder is $CLAUDE_CONFIG_DIR or <home>/.claude. */
  home?: string;
  env?: NodeJS.ProcessEnv;
}

export function isAuditSource(value: string): value is AuditSource {
  return (AUDIT_SOURCES as readonly string[]).includes(value);
}

/** The nearest folder at or above `cwd` holding `.git`, else `cwd`. */
export function projectRootOf(cwd: string): string {
  let dir = resolve(cwd);
  for (;;) {
    if (existsSync(join(dir, '.git'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return resolve(cwd);
    dir = parent;
  }
}

/** Claude Code's per-project folder name: the absolute path with every other character than a letter or digit as "-". */
export function claudeProjectKey(projectRoot: string): string {
  return resolve(projectRoot).replace(/[^A-Za-z0-9]/g, '-');
}

export function loadHostMemory(opts: LoadOptions = {}): HostMemory {
  const source = opts.source ?? DEFAULT_AUDIT_SOURCE;
  const env = opts.env ?? process.env;
  const cwd = resolve(opts.cwd ?? process.cwd());
  const projectRoot = resolve(opts.projectRoot ?? projectRootOf(cwd));
  const memory: HostMemory = { source, project_root: projectRoot, files: [], looked_in: [], entries: [], warnings: [] };

  if (opts.fromJson !== undefined) {
    memory.looked_in.push(resolve(opts.fromJson));
    memory.files.push(resolve(opts.fromJson));
    memory.entries = readJsonEntries(opts.fromJson);
    return memory;
  }
  if (source !== 'claude-code') {
    throw invalid(
      `--source ${source} keeps its memory where svc cannot read it: export it as JSON (an array of strings, or of objects with "text") and pass --from-json <path>`,
    );
  }

  const claudeDir = env.CLAUDE_CONFIG_DIR?.trim() || join(opts.home ?? homedir(), '.claude');
  const seen = new Set<string>();
  const add = (path: string, level: NonNullable<MemoryEntry['level']>): void => {
    memory.looked_in.push(path);
    readMemoryFile(path, level, memory, seen, 0);
  };
  const mdIn = (dir: string): string[] => {
    memory.looked_in.push(join(dir, '*.md'));
    if (!existsSync(dir)) return [];
    try {
      return readdirSync(dir)
        .filter((f) => f.endsWith('.md'))
        .sort((a, b) => (a === 'MEMORY.md' ? -1 : b === 'MEMORY.md' ? 1 : a.localeCompare(b)))
        .map((f) => join(dir, f));
    } catch {
      return [];
    }
  };

  // User memory, for every project.
  add(join(claudeDir, 'CLAUDE.md'), 'user');
  for (const f of mdIn(join(claudeDir, 'rules'))) readMemoryFile(f, 'user', memory, seen, 0);
  // Project memory: CLAUDE.md, .claude/CLAUDE.md and CLAUDE.local.md from the project root down
  // to the working directory (Claude Code reads every level), then the project's rules.
  const levels: string[] = [];
  if (isInside(cwd, projectRoot)) {
    for (let dir = cwd; ; dir = dirname(dir)) {
      levels.unshift(dir);
      if (dir === projectRoot || dirname(dir) === dir) break;
    }
  } else levels.push(projectRoot);
  for (const dir of levels) {
    add(join(dir, 'CLAUDE.md'), 'project');
    add(join(dir, '.claude', 'CLAUDE.md'), 'project');
    add(join(dir, 'CLAUDE.local.md'), 'project');
  }
  for (const f of mdIn(join(projectRoot, '.claude', 'rules'))) readMemoryFile(f, 'project', memory, seen, 0);
  // Auto memory: the notes Claude Code writes itself, MEMORY.md (the index) first.
  for (const f of mdIn(join(claudeDir, 'projects', claudeProjectKey(projectRoot), 'memory'))) readMemoryFile(f, 'auto', memory, seen, 0);
  return memory;
}

function isInside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function readJsonEntries(path: string): MemoryEntry[] {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw invalid(code ? `cannot read --from-json ${path}: ${code}` : `--from-json ${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const list = ['memories', 'entries', 'items'].map((k) => (data as Record<string, unknown>)[k]).find(Array.isArray);
    if (list) data = list;
  }
  if (!Array.isArray(data)) throw invalid(`--from-json ${path} must hold a JSON array of strings or of objects with "text"`);
  const entries: MemoryEntry[] = [];
  const problems: string[] = [];
  data.forEach((item, i) => {
    const o = item as Record<string, unknown>;
    const text = typeof item === 'string' ? item : item && typeof item === 'object' ? (o.text ?? o.content ?? o.memory) : undefined;
    if (typeof text !== 'string') {
      problems.push(`[${i}]: must be a string or an object with a string "text"`);
      return;
    }
    if (text.trim() === '') return;
    const id = item && typeof item === 'object' && (typeof o.id === 'string' || typeof o.id === 'number') ? String(o.id) : undefined;
    entries.push({ text: oneLine(text), ...(id ? { id } : {}) });
  });
  if (problems.length) throw invalid(`--from-json ${path} has entries audit cannot read`, problems);
  return entries;
}

const MAX_IMPORT_DEPTH = 5;

/** Entries of a markdown memory file: bullets and paragraphs; headings, code, tables and comments skipped; @imports followed. */
function readMemoryFile(
  path: string,
  level: NonNullable<MemoryEntry['level']>,
  memory: HostMemory,
  seen: Set<string>,
  depth: number,
): void {
  const abs = resolve(path);
  if (seen.has(abs) || !existsSync(abs)) return;
  seen.add(abs);
  let text: string;
  try {
    if (!statSync(abs).isFile()) return;
    text = readFileSync(abs, 'utf8');
  } catch (err) {
    memory.warnings.push(`cannot read ${abs}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    return;
  }
  memory.files.push(abs);
  for (const block of markdownBlocks(text)) {
    const imp = /^@(\S+)$/.exec(block.text);
    if (imp) {
      const target = resolveImportPath(imp[1]!, dirname(abs));
      if (existsSync(target) && depth < MAX_IMPORT_DEPTH)
        readMemoryFile(target, level === 'user' ? 'user' : 'import', memory, seen, depth + 1);
      else if (!existsSync(target)) memory.entries.push({ text: block.text, file: abs, line: block.line, level });
      continue;
    }
    if (isBoilerplate(block.text)) continue;
    memory.entries.push({ text: block.text, file: abs, line: block.line, level });
  }
}

export function resolveImportPath(p: string, base: string): string {
  if (p === '~' || p.startsWith('~/')) return join(homedir(), p.slice(1));
  return isAbsolute(p) ? p : resolve(base, p);
}

const isBoilerplate = (t: string): boolean =>
  /provides guidance to Claude Code/i.test(t) ||
  t
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .split(' ').length < 2;

export function markdownBlocks(text: string): Array<{ text: string; line: number }> {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const out: Array<{ text: string; line: number }> = [];
  let current: { parts: string[]; line: number } | null = null;
  const flush = (): void => {
    if (current) {
      const t = oneLine(current.parts.join(' '));
      if (t) out.push({ text: t, line: current.line });
    }
    current = null;
  };
  let i = 0;
  // Front matter (auto-memory topic files carry name, description, type).
  if (lines[0]?.trim() === '---') {
    const end = lines.findIndex((l, j) => j > 0 && l.trim() === '---');
    if (end > 0) i = end + 1;
  }
  let fence: string | null = null;
  let comment = false;
  for (; i < lines.length; i++) {
    const raw = lines[i]!;
    const line = raw.trim();
    if (fence) {
      if (line.startsWith(fence)) fence = null;
      continue;
    }
    if (comment) {
      if (line.includes('-->')) comment = false;
      continue;
    }
    const f = /^(```+|~~~+)/.exec(line);
    if (f) {
      flush();
      fence = f[1]!;
      continue;
    }
    if (line.startsWith('<!--')) {
      flush();
      if (!line.includes('-->')) comment = true;
      continue;
    }
    if (line === '' || /^#{1,6}\s/.test(line) || /^(-{3,}|\*{3,}|_{3,})$/.test(line) || line.startsWith('|') || line.startsWith('>')) {
      flush();
      continue;
    }
    if (/^@\S+$/.test(line)) {
      // An import (`@path/to/file`) always stands alone.
      flush();
      out.push({ text: line, line: i + 1 });
      continue;
    }
    const bullet = /^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$/.exec(line);
    if (bullet) {
      flush();
      current = { parts: [bullet[1]!], line: i + 1 };
      continue;
    }
    if (current) {
      current.parts.push(line);
      continue;
    }
    current = { parts: [line], line: i + 1 };
  }
  flush();
  return out.map((b) => ({ ...b, text: stripMarkdown(b.text) })).filter((b) => b.text !== '');
}

/** Bold and italic markers and link syntax out; code spans kept (they name files and symbols). */
function stripMarkdown(t: string): string {
  return oneLine(
    t
      .replace(/\*\*(.+?)\*\*/g, '$1')
      .replace(/__(.+?)__/g, '$1')
      .replace(/(^|\s)\*(\S.*?\S|\S)\*(?=\s|$|[.,;:!?])/g, '$1$2'),
  );
}
