// The project's files as audit's orphan check sees them: the files, paths and code symbols a
// memory entry names, and which of them do not exist in the project (a lazy walk of its tree,
// file contents read only to look for symbols).

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { resolveImportPath, type MemoryEntry } from './host-memory.js';

const SKIP_DIRS = new Set([
  '.git',
  'node_modules',
  'dist',
  'build',
  'out',
  'coverage',
  'target',
  'vendor',
  '.venv',
  'venv',
  '__pycache__',
  '.next',
  '.cache',
  '.turbo',
]);
const MAX_FILES = 20_000;
const MAX_GREP_BYTES = 512 * 1024;

/** What exists in the project: walked once, lazily; file contents read only for symbol checks. */
export class ProjectFiles {
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

const FILE_EXT =
  'ts|tsx|js|jsx|mjs|cjs|json|jsonc|md|mdx|yaml|yml|toml|ini|cfg|py|rb|go|rs|java|kt|swift|c|h|cc|cpp|hpp|cs|php|sh|bash|zsh|sql|css|scss|html|vue|svelte|lock|txt|env|xml|gradle';
const BARE_FILE = new RegExp(
  `(?:^|[\\s(\\["'])((?:~|\\.{1,2})?/?(?:[\\w@.-]+/)*[\\w@-][\\w@.-]*\\.(?:${FILE_EXT}))(?=$|[\\s)\\]"',;:!?]|\\.(?:\\s|$))`,
  'g',
);
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
  'typescript javascript github gitlab postgresql mysql sqlite mongodb nodejs vscode macos ios openai chatgpt youtube powershell devops graphql webpack esbuild pnpm npm yarn'.split(
    ' ',
  ),
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

export function missingReferences(entry: MemoryEntry, project: ProjectFiles, home: string): string[] {
  const missing: string[] = [];
  const base = entry.file ? dirname(entry.file) : undefined;
  const global = entry.level === 'user';
  const imported = /^@(\S+)$/.exec(entry.text);
  if (imported) return existsSync(resolveImportPath(imported[1]!, base ?? project.root)) ? [] : [imported[1]!];
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
