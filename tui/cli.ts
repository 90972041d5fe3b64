#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { SvcError } from '../engine/errors.js';

// Entry point of `svc`. Each command lives in its own module, imported only when it runs,
// so `svc recall` never pays for what `svc learn` needs.

type Command = { run(argv: string[]): Promise<number> };

// Hook handlers (hook-*) and installers (init, doctor) live in hooks/; this table is the only
// place the dispatcher reaches into it, by dynamic import.
const HOOKS = [
  'hook-inject',
  'hook-observe',
  'hook-learn-check',
  'hook-session-guard',
  'hook-session-mark',
  'hook-session-remind',
  'hook-correction-detect',
  'hook-revert-detect',
  'hook-cursor-session-start',
  'hook-cursor-prompt',
  'hook-cursor-after-edit',
  'hook-cursor-stop',
] as const;

const COMMANDS: Record<string, () => Promise<Command>> = {
  ...Object.fromEntries(HOOKS.map((name) => [name, () => import('../hooks/handlers/run-hook.js').then((m) => m.command(name))])),
  init: () => import('../hooks/install/init-command.js'),
  'init-remote': () => import('../hooks/install/init-remote-command.js'),
  doctor: () => import('../hooks/install/doctor-command.js'),
  mcp: () => import('./commands/mcp.js'),
  capture: () => import('./commands/capture.js'),
  timeline: () => import('./commands/timeline.js'),
  learn: () => import('./commands/learn.js'),
  recall: () => import('./commands/recall.js'),
  inject: () => import('./commands/inject.js'),
  'similarity-search': () => import('./commands/similarity-search.js'),
  'batch-decay': () => import('./commands/batch-decay.js'),
  list: () => import('./commands/list.js'),
  forget: () => import('./commands/forget.js'),
  feedback: () => import('./commands/feedback.js'),
  promote: () => import('./commands/promote.js'),
  status: () => import('./commands/status.js'),
  sync: () => import('./commands/sync.js'),
  packs: () => import('./commands/packs.js'),
  stores: () => import('./commands/stores.js'),
  ingest: () => import('./commands/ingest.js'),
  import: () => import('./commands/import.js'),
  tensions: () => import('./commands/tensions.js'),
  audit: () => import('./commands/audit.js'),
  session: () => import('./commands/session.js'),
  browse: () => import('./commands/browse.js'),
  migrate: () => import('./commands/migrate.js'),
  'rerank-eval': () => import('./commands/rerank-eval.js'),
  // The team server lives in hub/; like hooks/, reached only by dynamic import.
  hub: () => import('../hub/cli/hub-command.js'),
};

const USAGE = `svc: memory for AI agents and teams

  Usage
    svc <command> [arguments] [flags]

  Commands
    init                     wire svc into the agent host and editor (MCP server, hooks, shim)
    doctor                   check that wiring; each failing line names its fix
    mcp                      run the stdio MCP server
    learn <statement>        save an engram (statement may come from stdin)
    recall <query>           hybrid search (--fast: BM25 only; exit 2 when nothing matches)
    inject <task>            what to know before a task, within --budget tokens
    similarity-search <text> embedding cosine per engram: duplicate, related or new
    list                     inventory, filtered by --scope --domain --type --meta
    forget <id-or-text>      retire an engram (history kept)
    feedback <id> <signal>   positive, negative or neutral; --batch <json>
    promote <id>             candidate to active
    batch-decay              ACT-R decay of every engram; weak ones turn dormant
    capture <summary>        record an episode (what happened); text may come from stdin
    timeline [query]         episode history, newest first
    status                   counts, storage root, index health
    session start|end|show   agent sessions with attached learnings
    sync [remote]            pull and push the store through git (--full: rebuild the index)
    stores list|add          the stores recall and inject span (--shared, --readonly)
    packs <subcommand>       list, preview, install, uninstall, export engram packs
    ingest <text>            extract rules, decisions, definitions from text (no LLM)
    import --from <source>   bring memories from files or another memory system
    tensions                 conflicting engrams: list, --scan, confirm, dismiss, resolve
    audit                    classify an agent host's working memory against the store
    migrate [up|status|down] store layout migrations, with a backup first
    rerank-eval              advisory gate: does the reranker help on this store?
    browse                   interactive terminal browser (also: bare svc on a terminal)
    hub                      run the team server; hub org create, hub audit verify

  Run "svc <command> --help" for a command's flags.
  Global flags: --json --path <dir> --fast --quiet --help --version
`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  // Bare `svc` on a terminal opens the browser; piped or redirected, it prints the usage.
  if (name === undefined && process.stdin.isTTY && process.stdout.isTTY) return (await COMMANDS.browse!()).run([]);
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(version() + '\n');
    return 0;
  }
  const load = COMMANDS[name];
  if (!load) throw new SvcError('invalid', `unknown command "${name}" (run svc --help)`);
  return (await load()).run(rest);
}

async function report(err: unknown): Promise<number> {
  // Errors follow the mode the command chose; before flags were parsed, guess from argv.
  const { chosenJsonMode } = await import('../engine/cli/cli-kit.js');
  const json = chosenJsonMode ?? (process.argv.includes('--json') || (!process.stdout.isTTY && !process.argv.includes('--no-json')));
  if (err instanceof SvcError) {
    const line = err.details.length ? `${err.message}: ${err.details.join('; ')}` : err.message;
    process.stderr.write(
      json ? JSON.stringify({ error: { kind: err.kind, message: err.message, details: err.details } }) + '\n' : `svc: ${line}\n`,
    );
    return err.kind === 'no_results' ? 2 : 1;
  }
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`svc: internal error: ${message.split('\n')[0]}\n`);
  if (process.env.SVC_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
  return 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  async (err) => {
    process.exitCode = await report(err);
  },
);
