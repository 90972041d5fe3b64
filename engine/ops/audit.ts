import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { EngramBackend } from '../backend.js';
import type { EngramDoc } from '../model/engram-schema.js';
import type { EmbedderState } from '../embed/embedder.js';
import { contentHash } from '../model/content-hash.js';
import { detectPolarity, polarityOf } from '../model/polarity.js';
import { invalid } from '../errors.js';
import { recall } from './recall.js';
import { contentTokens, jaccard } from './tensions.js';

// audit: a content-layer health check of an agent host's working memory (the notes a host keeps
// for itself, e.g. Claude Code's CLAUDE.md files and auto memory). Each entry is classified:
//
//   duplicate  already stored: same content hash as a live engram, embedding cosine above 0.9,
//              or content-word overlap of 0.75 or more            -> delete it from memory
//   conflict   contradicts a stored engram: opposite polarity on the same subject ("always X" vs
//              "never X"), a swapped preference ("use A, not B" vs "use B"), or the same rule
//              with one choice swapped ("indent with tabs" vs "indent with spaces")
//                                                                  -> settle it (supersede or forget)
//   orphan     names a file, path or code symbol that does not exist in the project
//                                                                  -> fix the reference or delete it
//   snapshot   a point-in-time fact: dates, versions, "currently", "as of", status updates
//                                                                  -> delete it (or capture it as an episode)
//   durable    a lasting rule or fact not stored yet               -> svc learn "..."
//
// The first matching class wins, in that order. Everything is local and deterministic: no LLM.

export const AUDIT_CLASSES = ['conflict', 'duplicate', 'snapshot', 'orphan', 'durable'] as const;
export type AuditClass = (typeof AUDIT_CLASSES)[number];

/** Hosts whose memory audit reads. The first reads its files; the others need --from-json. */
export const AUDIT_SOURCES = ['claude-code', 'cursor', 'claude-desktop'] as const;
export type AuditSource = (typeof AUDIT_SOURCES)[number];
export const DEFAULT_AUDIT_SOURCE: AuditSource = 'claude-code';
export const DEFAULT_AUDIT_LIMIT = 5;

export const DUPLICATE_COSINE = 0.9;
export const DUPLICATE_OVERLAP = 0.75;
/** Below this overlap (and without a close vector) an engram is about something else. */
const SUBJECT_OVERLAP = 0.3;
const SUBJECT_COSINE = 0.75;

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

export interface RelatedEngram {
  id: string;
  statement: string;
  score: number;
  cosine?: number;
  overlap: number;
}

export interface AuditFinding {
  text: string;
  file?: string;
  line?: number;
  id?: string;
  class: AuditClass;
  /** Why it got its class, in words. */
  reason: string;
  /** The next step, short: learn, delete from memory, supersede, fix or delete. */
  action: 'learn' | 'delete from memory' | 'supersede or delete' | 'fix or delete';
  /** The next step as a sentence. */
  suggestion: string;
  /** A command that carries the step out, when there is one. */
  command?: string;
  /** The engram it duplicates or contradicts. */
  engram?: { id: string; statement: string };
  /** For orphans: the references that do not exist. */
  missing?: string[];
  /** Engrams recall found for the entry (up to --limit). */
  related: RelatedEngram[];
}

export interface AuditResult {
  source: AuditSource;
  project_root: string;
  files: string[];
  looked_in: string[];
  entries: number;
  counts: Record<AuditClass, number>;
  findings: AuditFinding[];
  search: 'hybrid' | 'bm25';
  warnings: string[];
}

// ------------------------------------------------------------------------------ reading host memory

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
function readMemoryFile(path: string, level: NonNullable<MemoryEntry['level']>, memory: HostMemory, seen: Set<string>, depth: number): void {
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
      const target = expandHome(imp[1]!, dirname(abs));
      if (existsSync(target) && depth < MAX_IMPORT_DEPTH) readMemoryFile(target, level === 'user' ? 'user' : 'import', memory, seen, depth + 1);
      else if (!existsSync(target)) memory.entries.push({ text: block.text, file: abs, line: block.line, level });
      continue;
    }
    if (isBoilerplate(block.text)) continue;
    memory.entries.push({ text: block.text, file: abs, line: block.line, level });
  }
}

function expandHome(p: string, base: string): string {
  if (p === '~' || p.startsWith('~/')) return join(homedir(), p.slice(1));
  return isAbsolute(p) ? p : resolve(base, p);
}

const isBoilerplate = (t: string): boolean =>
  /provides guidance to Claude Code/i.test(t) || t.replace(/[^\p{L}\p{N}]+/gu, ' ').trim().split(' ').length < 2;

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

const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();

// ------------------------------------------------------------------------------ the project's files

const SKIP_DIRS = new Set(['.git', 'node_modules', 'dist', 'build', 'out', 'coverage', 'target', 'vendor', '.venv', 'venv', '__pycache__', '.next', '.cache', '.turbo']);
const MAX_FILES = 20_000;
const MAX_GREP_BYTES = 512 * 1024;

/** What exists in the project: walked once, lazily; file contents read only for symbol checks. */
class ProjectFiles {
  private files?: string[];
  private names?: Set<string>;
  private readonly text = new Map<string, string | null>();

  constructor(
    readonly root: string,
    private readonly exclude: Set<string>,
  ) {}

  list(): string[] {
    if (this.files) return this.files;
    const out: string[] = [];
    const walk = (dir: string): void => {
      if (out.length >= MAX_FILES) return;
      let entries: import('node:fs').Dirent[];
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        if (out.length >= MAX_FILES) return;
        const p = join(dir, e.name);
        if (e.isDirectory()) {
          if (!SKIP_DIRS.has(e.name)) walk(p);
        } else if (e.isFile()) out.push(p);
      }
    };
    walk(this.root);
    this.files = out;
    return out;
  }

  hasBasename(name: string): boolean {
    this.names ??= new Set(this.list().map((f) => basename(f)));
    return this.names.has(name);
  }

  /** A relative path exists at the root, or as the tail of some file's path (`utils/date.ts`). */
  hasPath(rel: string, base?: string): boolean {
    const clean = rel.replace(/^\.\//, '').replace(/\/+$/, '');
    if (existsSync(resolve(this.root, clean))) return true;
    if (base && existsSync(resolve(base, rel))) return true;
    const tail = sep + clean.split('/').join(sep);
    return this.list().some((f) => f.endsWith(tail) || dirname(f).endsWith(tail) || dirname(f).includes(tail + sep));
  }

  /** Whether a code symbol appears (as a whole word) in any project file but the memory files. */
  hasSymbol(symbol: string): boolean {
    const re = new RegExp(`(^|[^\\w$])${symbol.replace(/\$/g, '\\$&')}([^\\w$]|$)`);
    for (const f of this.list()) {
      if (this.exclude.has(f)) continue;
      let t = this.text.get(f);
      if (t === undefined) {
        t = null;
        try {
          if (statSync(f).size <= MAX_GREP_BYTES) {
            const buf = readFileSync(f);
            if (!buf.subarray(0, 1024).includes(0)) t = buf.toString('utf8');
          }
        } catch {
          /* unreadable: not a match */
        }
        this.text.set(f, t);
      }
      if (t && re.test(t)) return true;
    }
    return false;
  }
}

const FILE_EXT = 'ts|tsx|js|jsx|mjs|cjs|json|jsonc|md|mdx|yaml|yml|toml|ini|cfg|py|rb|go|rs|java|kt|swift|c|h|cc|cpp|hpp|cs|php|sh|bash|zsh|sql|css|scss|html|vue|svelte|lock|txt|env|xml|gradle';
const BARE_FILE = new RegExp(`(?:^|[\\s(\\["'])((?:~|\\.{1,2})?/?(?:[\\w@.-]+/)*[\\w@-][\\w@.-]*\\.(?:${FILE_EXT}))(?=$|[\\s)\\]"',;:!?]|\\.(?:\\s|$))`, 'g');
const DIR_PATH = /(?:^|[\s(["'])((?:~|\.{1,2})?\/?(?:[\w@.-]+\/)+[\w@.-]*)(?=$|[\s)\]"',;:!?]|\.(?:\s|$))/g;

export interface Reference {
  ref: string;
  kind: 'path' | 'symbol';
}

/** Files, paths and code symbols an entry names. */
export function references(text: string): Reference[] {
  const refs = new Map<string, Reference>();
  const addPath = (p: string, inCode: boolean): void => {
    if (/[*?{}<>]/.test(p) || p.includes('://')) return;
    // `/api/v1/users` is a route, not a file: an absolute path counts when its first folder exists.
    if (p.startsWith('/') && !existsSync('/' + (p.split('/')[1] ?? ''))) return;
    // Node.js, Vue.js, Next.js: names of things, not files (outside code spans).
    if (!inCode && /^[A-Z][\w]*\.js$/.test(p)) return;
    refs.set(`path:${p}`, { ref: p, kind: 'path' });
  };
  const spans = [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.trim());
  for (const s of spans) {
    if (/\s/.test(s)) continue; // a command or a phrase
    if (/^[a-z][\w+.-]*:/i.test(s) && !/^[A-Za-z]:[\\/]/.test(s)) continue; // a URL or scheme
    if (s.includes('/') || new RegExp(`\\.(?:${FILE_EXT})$`).test(s)) {
      if (/^@[\w.-]+\/[\w.-]+(@[\w.^~-]+)?$/.test(s)) continue; // `@scope/package`: a package, not a path
      addPath(s, true);
      continue;
    }
    for (const sym of symbolsOf(s)) refs.set(`symbol:${sym}`, { ref: sym, kind: 'symbol' });
  }
  const outside = text.replace(/`[^`]*`/g, ' ');
  for (const m of outside.matchAll(BARE_FILE)) addPath(m[1]!, false);
  for (const m of outside.matchAll(DIR_PATH)) {
    const p = m[1]!;
    // `and/or`, `read/write`: a slash between two plain words is not a path.
    if (!/^(?:~|\.{1,2})?\//.test(p) && p.split('/').filter(Boolean).length < 3 && !p.endsWith('/')) continue;
    addPath(p, false);
  }
  return [...refs.values()];
}

const PRODUCT_NAMES = new Set(
  'typescript javascript github gitlab postgresql mysql sqlite mongodb nodejs vscode macos ios openai chatgpt youtube powershell devops graphql webpack esbuild pnpm npm yarn'.split(' '),
);

/**
 * Code symbols in a code span: `fooBar()`, `LocalStore`, `parse_config`, `LegacyStore.open()`
 * (the camelCase, PascalCase or snake_case parts; else the called name). Plain words are not.
 */
export function symbolsOf(span: string): string[] {
  const m = /^([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(\(\))?$/.exec(span);
  if (!m) return [];
  const parts = m[1]!.split('.');
  const usable = (p: string): boolean => p.length >= 3 && !PRODUCT_NAMES.has(p.toLowerCase());
  const shaped = parts.filter((p) => {
    const camel = /[a-z][A-Z]/.test(p) || /^[A-Z][a-z0-9]+[A-Z]/.test(p);
    const snake = /^[a-z0-9]+(?:_[a-z0-9]+)+$/i.test(p) && !/^[A-Z0-9_]+$/.test(p);
    return (camel || snake) && usable(p);
  });
  if (shaped.length) return shaped;
  const last = parts[parts.length - 1]!;
  return m[2] !== undefined && usable(last) ? [last] : [];
}

function missingReferences(entry: MemoryEntry, project: ProjectFiles, home: string): string[] {
  const missing: string[] = [];
  const base = entry.file ? dirname(entry.file) : undefined;
  const global = entry.level === 'user';
  const imported = /^@(\S+)$/.exec(entry.text);
  if (imported) return existsSync(expandHome(imported[1]!, base ?? project.root)) ? [] : [imported[1]!];
  for (const r of references(entry.text)) {
    if (r.kind === 'symbol') {
      if (!global && !project.hasSymbol(r.ref)) missing.push(r.ref);
      continue;
    }
    const p = r.ref;
    if (p.startsWith('~/') || p === '~') {
      if (!existsSync(join(home, p.slice(1)))) missing.push(p);
    } else if (isAbsolute(p)) {
      if (!existsSync(p)) missing.push(p);
    } else if (!global) {
      const ok = p.includes('/') ? project.hasPath(p, base) : project.hasBasename(p) || (base !== undefined && existsSync(join(base, p)));
      if (!ok) missing.push(p);
    }
  }
  return missing;
}

// ------------------------------------------------------------------------------ snapshots

const MONTH = '(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)';
const SNAPSHOT_PATTERNS: Array<[RegExp, string]> = [
  [/\b\d{4}-\d{2}-\d{2}\b/, 'a date'],
  [/\b\d{1,2}\/\d{1,2}\/\d{2,4}\b/, 'a date'],
  [new RegExp(`\\b${MONTH}\\.?\\s+\\d{1,2}(?:st|nd|rd|th)?,?\\s+\\d{4}\\b`, 'i'), 'a date'],
  [new RegExp(`\\b${MONTH}\\s+(?:19|20)\\d{2}\\b`), 'a date'],
  [/\b(?:Q[1-4]\s+(?:19|20)\d{2})\b/, 'a date'],
  [/\bv\d+(?:\.\d+){1,3}\b/i, 'a version'],
  [/\b\d+\.\d+\.\d+(?:-[\w.]+)?\b/, 'a version'],
  [/\b(?:version|release)\s+\d+(?:\.\d+)*\b/i, 'a version'],
  [/\b(?:currently|as of|right now|at the moment|at present|for now|for the time being|so far|today|yesterday|tomorrow|recently|this (?:week|month|sprint|quarter|morning)|last (?:week|month|sprint|night)|next (?:week|month|sprint))\b/i, 'time-bound wording'],
  [/\b(?:in progress|WIP|work in progress|is blocked|blocked on|waiting (?:on|for)|pending (?:review|approval)|is (?:down|broken|failing|flaky) (?:right now|again|today)|was (?:just )?(?:merged|deployed|released|fixed|reverted)|just (?:merged|deployed|released|fixed|landed))\b/i, 'a status update'],
  [/^(?:status|update|todo|done|fixed|deployed|released|merged|shipped|note to self)\b\s*[:\-–]/i, 'a status update'],
  [/\b(?:I am|I'm|we are|we're) (?:working on|investigating|migrating|in the middle of|currently)\b/i, 'a status update'],
];

export function snapshotReason(text: string): string | null {
  for (const [re, what] of SNAPSHOT_PATTERNS) {
    const m = re.exec(text);
    if (m) return `${what} ("${m[0].trim()}")`;
  }
  return null;
}

// ------------------------------------------------------------------------------ conflicts

const POLARITY_WORDS = new Set(['always', 'never', 'avoid', 'don', 'not', 'no', 'must', 'should', 'prefer', 'instead', 'rather', 'stop', 'forbidden', 'allowed']);
const CHOICE_VERBS = /\b(?:use|prefer|run|set|pick|choose|install|indent|format|deploy|keep|write|name|call|store|put|target|build|test|lint|commit|push|merge|default)\b/i;

const subjectTokens = (text: string): Set<string> => new Set([...contentTokens(text)].filter((t) => !POLARITY_WORDS.has(t)));

/** `use A instead of B`, `prefer A over B`, `A, not B`: the preferred and the rejected word. */
export function preference(text: string): { prefer: string; over: string } | null {
  const t = text.toLowerCase();
  const patterns = [
    /\b(?:use|prefer|choose|pick|run)\s+([\w@./+-]+)[\w\s-]{0,20}?\s*(?:,\s*)?(?:instead of|rather than|over|not|and not|in place of)\s+([\w@./+-]+)/,
    /\bprefer\s+([\w@./+-]+)\s+to\s+([\w@./+-]+)/,
    /\b([\w@./+-]+),\s*not\s+([\w@./+-]+)/,
  ];
  for (const re of patterns) {
    const m = re.exec(t);
    if (m && m[1] !== m[2] && !/^(?:the|a|an|to)$/.test(m[1]!) && !/^(?:the|a|an|to)$/.test(m[2]!)) {
      return { prefer: m[1]!.replace(/[.,;:]+$/, ''), over: m[2]!.replace(/[.,;:]+$/, '') };
    }
  }
  return null;
}

const mentions = (text: string, word: string): boolean => new RegExp(`(^|[^\\w@./+-])${word.replace(/[.+]/g, '\\$&')}($|[^\\w@/+-])`, 'i').test(text);
const forbids = (text: string, word: string): boolean =>
  new RegExp(`\\b(?:never|don'?t|do not|avoid|stop)\\s+(?:use|using|run|running|install)?\\s*${word.replace(/[.+]/g, '\\$&')}\\b`, 'i').test(text);

/** Why `entry` contradicts `engram`, or null. */
export function conflictReason(entry: string, engram: EngramDoc): string | null {
  const other = engram.statement;
  const a = subjectTokens(entry);
  const b = subjectTokens(other);
  const shared = [...a].filter((t) => b.has(t));
  // 1. A swapped preference: "use A, not B" against "use B" (or "prefer B over A", or "never A").
  const pa = preference(entry);
  const pb = preference(other);
  if (pa && pb && pa.prefer === pb.over && pa.over === pb.prefer) return `it prefers ${pa.prefer} over ${pa.over}; ${engram.id} the opposite`;
  if (pa && !pb && mentions(other, pa.over) && !mentions(other, pa.prefer) && polarityOf(engram) !== 'dont' && !forbids(other, pa.over)) {
    return `it rejects ${pa.over}, which ${engram.id} prescribes`;
  }
  if (pa && forbids(other, pa.prefer)) return `it prescribes ${pa.prefer}, which ${engram.id} forbids`;
  if (pb && !pa && mentions(entry, pb.over) && !mentions(entry, pb.prefer) && detectPolarity(entry) !== 'dont' && !forbids(entry, pb.over)) {
    return `it prescribes ${pb.over}, which ${engram.id} rejects in favour of ${pb.prefer}`;
  }
  if (pb && forbids(entry, pb.prefer)) return `it forbids ${pb.prefer}, which ${engram.id} prescribes`;
  // 2. Opposite polarity on the same subject: "always X" against "never X".
  const pe = detectPolarity(entry);
  const po = polarityOf(engram);
  const smaller = Math.min(a.size, b.size);
  if (pe && po && pe !== po && smaller > 0 && shared.length >= Math.max(1, Math.ceil(smaller * 0.6))) {
    return `${pe === 'do' ? 'it prescribes' : 'it forbids'} what ${engram.id} ${po === 'do' ? 'prescribes' : 'forbids'}: ${shared.join(', ')}`;
  }
  // 3. The same short rule with one choice swapped: "indent with tabs" against "indent with spaces".
  if (pe !== 'dont' && po !== 'dont' && CHOICE_VERBS.test(entry) && CHOICE_VERBS.test(other) && a.size <= 8 && b.size <= 8 && shared.length >= 2) {
    const onlyA = [...a].filter((t) => !b.has(t));
    const onlyB = [...b].filter((t) => !a.has(t));
    if (onlyA.length === 1 && onlyB.length === 1) return `same rule with a different choice: ${onlyA[0]} here, ${onlyB[0]} in ${engram.id}`;
  }
  return null;
}

// ------------------------------------------------------------------------------ audit

export interface AuditOptions {
  /** Engrams recalled per entry (default 5). */
  limit?: number;
  fast?: boolean;
  embedder?: EmbedderState;
  /** For ~ paths (default os.homedir()). */
  home?: string;
  now?: Date;
}

export async function audit(backend: EngramBackend, memory: HostMemory, opts: AuditOptions = {}): Promise<AuditResult> {
  const limit = opts.limit ?? DEFAULT_AUDIT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw invalid(`--limit must be a positive whole number (got ${limit})`);
  const project = new ProjectFiles(memory.project_root, new Set(memory.files));
  const home = opts.home ?? homedir();
  const counts = Object.fromEntries(AUDIT_CLASSES.map((c) => [c, 0])) as Record<AuditClass, number>;
  const findings: AuditFinding[] = [];
  let hybrid = false;

  for (const entry of memory.entries) {
    const text = entry.text;
    const tokens = contentTokens(text);
    const result = await recall(backend, text, { limit, fast: opts.fast, embedder: opts.embedder, now: opts.now });
    if (result.legs.vector === 'ran') hybrid = true;
    const related: RelatedEngram[] = result.hits
      .filter((h) => h.engram.status !== 'retired')
      .map((h) => ({
        id: h.engram.id,
        statement: h.engram.statement,
        score: h.score,
        ...(h.vector ? { cosine: h.vector.cosine } : {}),
        overlap: Math.round(jaccard(tokens, contentTokens(h.engram.statement)) * 1000) / 1000,
      }));
    const docs = new Map(result.hits.map((h) => [h.engram.id, h.engram]));
    const base = { text, ...(entry.file ? { file: entry.file } : {}), ...(entry.line ? { line: entry.line } : {}), ...(entry.id ? { id: entry.id } : {}), related };
    const quoted = shellQuote(text);
    let finding: AuditFinding;

    // The same statement is a duplicate; then a contradiction wins over a near-identical wording
    // ("use A, not B" and "use B, not A" share every word).
    const exact = (await backend.findByHash(contentHash(text))).find((e) => e.status !== 'retired');
    const clash = exact
      ? undefined
      : related
          .filter((r) => r.overlap >= SUBJECT_OVERLAP || (r.cosine ?? 0) >= SUBJECT_COSINE || sharesKeyWord(text, r.statement))
          .map((r) => ({ r, why: conflictReason(text, docs.get(r.id)!) }))
          .find((c) => c.why !== null);
    const near = exact || clash ? undefined : related.find((r) => (r.cosine ?? 0) > DUPLICATE_COSINE || r.overlap >= DUPLICATE_OVERLAP);
    const twin = exact ? { id: exact.id, statement: exact.statement } : near ? { id: near.id, statement: near.statement } : undefined;

    if (twin) {
      const how = exact ? 'the same statement' : near!.cosine !== undefined && near!.cosine > DUPLICATE_COSINE ? `embedding cosine ${near!.cosine}` : `word overlap ${near!.overlap}`;
      finding = {
        ...base,
        class: 'duplicate',
        reason: `already stored as ${twin.id} (${how})`,
        action: 'delete from memory',
        suggestion: `delete this entry from the host's memory: svc already injects ${twin.id}`,
        engram: twin,
      };
    } else if (clash) {
      const id = clash.r.id;
      finding = {
        ...base,
        class: 'conflict',
        reason: `contradicts ${id}: ${clash.why}`,
        action: 'supersede or delete',
        suggestion: `decide which holds. If this entry does: svc learn ${quoted} --supersedes ${id}, then svc forget ${id}. If ${id} does: delete this entry from memory`,
        command: `svc learn ${quoted} --supersedes ${id}`,
        engram: { id, statement: clash.r.statement },
      };
    } else {
      const missing = missingReferences(entry, project, home);
      const snap = snapshotReason(text);
      if (missing.length) {
        finding = {
          ...base,
          class: 'orphan',
          reason: `names ${missing.map((m) => `"${m}"`).join(', ')}, not found in ${memory.project_root}`,
          action: 'fix or delete',
          suggestion: `fix the reference if it moved, else delete this entry from memory`,
          missing,
        };
      } else if (snap) {
        finding = {
          ...base,
          class: 'snapshot',
          reason: `a point-in-time fact: ${snap}`,
          action: 'delete from memory',
          suggestion: `delete this entry from memory: it will go stale. To keep it as history: svc capture ${quoted}`,
          command: `svc capture ${quoted}`,
        };
      } else {
        const close = related.find((r) => r.overlap >= SUBJECT_OVERLAP || (r.cosine ?? 0) >= SUBJECT_COSINE);
        finding = {
          ...base,
          class: 'durable',
          reason: `a lasting ${detectPolarity(text) ? 'rule' : 'fact'} not in svc yet${close ? ` (related: ${close.id})` : ''}`,
          action: 'learn',
          suggestion: `learn it, then delete it from the host's memory: svc injects it from now on`,
          command: `svc learn ${quoted}`,
        };
      }
    }
    counts[finding.class] += 1;
    findings.push(finding);
  }

  return {
    source: memory.source,
    project_root: memory.project_root,
    files: memory.files,
    looked_in: memory.looked_in,
    entries: memory.entries.length,
    counts,
    findings,
    search: hybrid ? 'hybrid' : 'bm25',
    warnings: memory.warnings,
  };
}

/** A shared rare word (a tool or file name) makes two statements about the same thing even at low overlap. */
function sharesKeyWord(a: string, b: string): boolean {
  const pa = preference(a);
  const pb = preference(b);
  const words = [pa?.prefer, pa?.over, pb?.prefer, pb?.over].filter((w): w is string => !!w);
  return words.some((w) => mentions(a, w) && mentions(b, w));
}

/** A statement as one shell argument, for copy and paste. */
export function shellQuote(s: string): string {
  // Inside double quotes only $, backquote, backslash, " and ! are special.
  return /[$`\\"!]/.test(s) ? `'${s.replace(/'/g, `'\\''`)}'` : `"${s}"`;
}
