import { sha1Hex } from '../../engine/text-hash.js';
import { oneLine } from '../../engine/text.js';

// Pure helpers to tell when a change was reverted: a shell command that throws work away
// (git revert, git checkout -- <file>, git restore, git reset --hard, hg/svn revert, jj undo),
// or an edit that puts back exactly what an earlier edit of the same file replaced.

/** What the command reverted, in a few words, or null. Only the command's own words count, not quoted text. */
export function revertCommand(command: string): string | null {
  if (typeof command !== 'string' || command.length > 20_000) return null;
  for (const segment of segments(command)) {
    const words = tokens(segment);
    // Skip leading env assignments and wrappers: FOO=1 sudo git ...
    while (words.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!) || ['sudo', 'command', 'env', 'time', 'nohup'].includes(words[0]!)))
      words.shift();
    const [tool, ...rest] = words;
    if (tool === 'git') {
      const found = gitRevert(rest);
      if (found) return found;
    } else if ((tool === 'hg' || tool === 'svn') && rest[0] === 'revert') {
      return `${tool} revert ${rest.slice(1).join(' ')}`.trim();
    } else if (tool === 'jj' && (rest[0] === 'undo' || rest[0] === 'restore' || rest[0] === 'abandon')) {
      return `jj ${rest.join(' ')}`.trim();
    }
  }
  return null;
}

function gitRevert(args: string[]): string | null {
  // Drop git's global options (-C dir, -c k=v, --no-pager, ...).
  let i = 0;
  while (i < args.length && args[i]!.startsWith('-')) i += args[i] === '-C' || args[i] === '-c' ? 2 : 1;
  const [sub, ...rest] = args.slice(i);
  const flags = rest.filter((a) => a.startsWith('-'));
  const operands = rest.filter((a) => !a.startsWith('-'));
  const show = (): string => oneLine(`git ${sub} ${rest.join(' ')}`.replace(/\u0000/g, ''), 160);
  switch (sub) {
    case 'revert':
      return flags.some((f) => ['--abort', '--continue', '--quit', '--skip'].includes(f)) || operands.length === 0 ? null : show();
    case 'restore':
      // --staged alone only unstages: the work is still in the tree.
      if (flags.includes('--staged') || flags.includes('-S')) {
        if (!flags.includes('--worktree') && !flags.includes('-W')) return null;
      }
      return operands.length > 0 ? show() : null;
    case 'checkout': {
      // Only the file form throws work away; `git checkout <branch>` switches.
      const dd = rest.indexOf('--');
      if (dd >= 0 && dd < rest.length - 1) return show();
      if (operands.length === 1 && operands[0] === '.') return show();
      return null;
    }
    case 'reset':
      if (flags.includes('--hard')) return show();
      if (operands.some((o) => /^(HEAD|@)([~^]\d*)+$/.test(o))) return show();
      return null;
    case 'stash':
      return null;
    case 'clean':
      return flags.some((f) => /^-[a-z]*f/.test(f) || f === '--force') ? show() : null;
    default:
      return null;
  }
}

/** Splits a shell line into simple commands at ; && || | and newlines (outside quotes). */
function segments(command: string): string[] {
  const out: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const ch = command[i]!;
    if (quote) {
      if (ch === quote) quote = null;
      current += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      current += ch;
    } else if (ch === ';' || ch === '\n' || ch === '|' || ch === '&' || ch === '(' || ch === ')') {
      out.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  out.push(current);
  return out.map((s) => s.trim()).filter(Boolean);
}

/** Words of one simple command; a quoted word stays one word (and never starts a command). */
function tokens(segment: string): string[] {
  return (segment.match(/"[^"]*"|'[^']*'|\S+/g) ?? []).map((w) => (/^["']/.test(w) ? `\u0000${w}` : w));
}

/** A short stable hash of a text (whitespace at the ends ignored). */
export function textHash(text: string): string {
  return sha1Hex(text.trim()).slice(0, 16);
}

export interface EditRecord {
  /** File path (as the host gave it). */
  f: string;
  /** Hash of the replaced text. */
  o: string;
  /** Hash of the new text. */
  n: string;
}

/** Edits as records; pairs whose old and new text are the same are dropped. */
export function editRecords(file: string, edits: Array<{ old_string?: unknown; new_string?: unknown }>): EditRecord[] {
  const out: EditRecord[] = [];
  for (const e of edits) {
    if (typeof e?.old_string !== 'string' || typeof e?.new_string !== 'string') continue;
    if (e.old_string.trim() === e.new_string.trim()) continue;
    out.push({ f: file, o: textHash(e.old_string), n: textHash(e.new_string) });
  }
  return out;
}

/** True when `edit` exactly undoes one of `earlier` (same file, texts swapped). */
export function undoesEarlier(edit: EditRecord, earlier: EditRecord[]): boolean {
  return earlier.some((p) => p.f === edit.f && p.o === edit.n && p.n === edit.o);
}
