import { relative } from 'node:path';
import { invalid } from '../../engine/errors.js';
import { AUDIT_CLASSES, DEFAULT_AUDIT_LIMIT, audit, type AuditResult } from '../../engine/ops/audit/audit.js';
import { AUDIT_SOURCES, DEFAULT_AUDIT_SOURCE, isAuditSource, loadHostMemory } from '../../engine/ops/host-memory.js';
import { makeOutput, openStore, parseArgs, positiveInt } from '../../engine/cli/cli-kit.js';
import { embedderFor } from '../embedding.js';

const HELP = `
  Usage
    svc audit [--source <host>] [--from-json <path>] [--limit n] [--project <dir>]

  Health check of an agent host's working memory against svc. Each entry is classified:
    conflict   contradicts a stored engram          -> svc learn "..." --supersedes <id>, or delete it
    duplicate  already stored (same or near-same)   -> delete it from memory
    snapshot   a point-in-time fact (dates, versions, "currently", "as of", status updates)
                                                    -> delete it from memory (svc capture keeps it as history)
    orphan     names a file, path or symbol missing from the project -> fix or delete it
    durable    a lasting rule not stored yet        -> svc learn "..."

  Sources
    claude-code (default)  Claude Code's memory files: ~/.claude/CLAUDE.md and ~/.claude/rules/*.md;
                           in the project CLAUDE.md, .claude/CLAUDE.md, CLAUDE.local.md (from the
                           git root down to the working directory) and .claude/rules/*.md; its
                           auto memory ~/.claude/projects/<project>/memory/*.md. @imports are
                           followed. $CLAUDE_CONFIG_DIR replaces ~/.claude.
    cursor, claude-desktop keep their memories out of reach: export them and pass --from-json.

  Flags
    --source <host>      ${AUDIT_SOURCES.join(', ')} (default ${DEFAULT_AUDIT_SOURCE})
    --from-json <path>   a JSON array of strings, or of objects with "text" (any source)
    --limit <n>          engrams recalled per entry (default ${DEFAULT_AUDIT_LIMIT})
    --project <dir>      the project orphans are checked against (default: the git root of the
                         working directory)`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    source: { type: 'string' },
    fromJson: { type: 'string' },
    limit: { type: 'number' },
    project: { type: 'string' },
  });
  const f = cli.flags;
  const out = makeOutput(f);
  if (cli.input.length) throw invalid(`unexpected argument "${cli.input[0]}"`);
  const source = f.source ?? DEFAULT_AUDIT_SOURCE;
  if (!isAuditSource(source)) throw invalid(`--source must be one of ${AUDIT_SOURCES.join(', ')} (got "${source}")`);
  const limit = positiveInt(f.limit, 'limit', DEFAULT_AUDIT_LIMIT);
  // Read the host's memory first: a missing export fails before the store is opened.
  const memory = loadHostMemory({ source, fromJson: f.fromJson, projectRoot: f.project });
  const store = await openStore(f, 'fast', out);
  try {
    for (const w of memory.warnings) out.warn(w);
    const embedder = await embedderFor(store, out, { fast: f.fast, download: false, warn: false });
    const result = await audit(store, memory, { limit, fast: f.fast, embedder });
    out.result(result, () => text(result));
    return 0;
  } finally {
    store.close();
  }
}

function text(r: AuditResult): string {
  if (r.entries === 0) {
    return r.files.length
      ? `No memory entries in ${r.files.join(', ')}.`
      : `No ${r.source} memory found. Looked in:\n${r.looked_in.map((p) => `  ${p}`).join('\n')}`;
  }
  const where = (file?: string, line?: number): string => {
    if (!file) return '';
    const rel = relative(r.project_root, file);
    const shown = rel && !rel.startsWith('..') ? rel : file;
    return `${shown}${line ? `:${line}` : ''}  `;
  };
  const lines = [
    `Audited ${r.entries} entr${r.entries === 1 ? 'y' : 'ies'} from ${r.files.length} file${r.files.length === 1 ? '' : 's'} (${r.source}, ${r.search === 'hybrid' ? 'hybrid search' : 'BM25 only'}):`,
    '  ' + AUDIT_CLASSES.map((c) => `${r.counts[c]} ${c}`).join(', '),
  ];
  for (const c of AUDIT_CLASSES) {
    const group = r.findings.filter((x) => x.class === c);
    if (!group.length) continue;
    lines.push('', `${c.toUpperCase()} (${group.length})`);
    for (const x of group) {
      lines.push(`  ${where(x.file, x.line)}${x.text}`);
      lines.push(`      ${x.reason}`);
      lines.push(`      next: ${x.command && x.class === 'durable' ? x.command : x.suggestion}`);
    }
  }
  return lines.join('\n');
}
