import { SvcError } from '../engine/errors.js';
import { HOOK_NAMES } from '../hooks/hook-names.js';
import { isTerminal, quietOnClosedPipe, writeErr, writeOut } from '../engine/cli/std-write.js';

// The dispatcher of `svc`: the entry of the CLI's bundle (scripts/bundle-cli.ts), started by
// bin/svc.ts. Each command lives in its own module, initialised only when it runs, so
// `svc recall` never pays for what `svc learn` needs.

type Command = { run(argv: string[]): Promise<number> };

// Hook handlers (hook-*, named in hooks/hook-names.ts) and installers (init, doctor) live in
// hooks/; this table is the only place the dispatcher reaches into it, by dynamic import.

// The prompt bundle (dist/bin/svc-prompt.cjs) is built with SVC_BUNDLE defined as "prompt": the
// bundler drops the other commands' branch and every module only they reach. bin/svc.ts sends it
// the commands bin/prompt-commands.cts names, and this table must hold them all.
const COMMANDS: Record<string, () => Promise<Command>> = {
  ...Object.fromEntries(HOOK_NAMES.map((name) => [name, () => import('../hooks/handlers/run-hook.js').then((m) => m.command(name))])),
  learn: () => import('../tui/commands/learn.js'),
  recall: () => import('../tui/commands/recall.js'),
  inject: () => import('../tui/commands/inject.js'),
  ...(process.env.SVC_BUNDLE === 'prompt' ? {} : otherCommands()),
};

function otherCommands(): Record<string, () => Promise<Command>> {
  return {
    init: () => import('../hooks/install/init-command.js'),
    'init-remote': () => import('../hooks/install/init-remote-command.js'),
    doctor: () => import('../hooks/install/doctor-command.js'),
    mcp: () => import('../tui/commands/mcp.js'),
    capture: () => import('../tui/commands/capture.js'),
    timeline: () => import('../tui/commands/timeline.js'),
    'similarity-search': () => import('../tui/commands/similarity-search.js'),
    'batch-decay': () => import('../tui/commands/batch-decay.js'),
    list: () => import('../tui/commands/list.js'),
    forget: () => import('../tui/commands/forget.js'),
    feedback: () => import('../tui/commands/feedback.js'),
    promote: () => import('../tui/commands/promote.js'),
    rescope: () => import('../tui/commands/rescope.js'),
    status: () => import('../tui/commands/status.js'),
    sync: () => import('../tui/commands/sync.js'),
    conflicts: () => import('../tui/commands/conflicts.js'),
    packs: () => import('../tui/commands/packs.js'),
    stores: () => import('../tui/commands/stores.js'),
    ingest: () => import('../tui/commands/ingest.js'),
    import: () => import('../tui/commands/import.js'),
    tensions: () => import('../tui/commands/tensions.js'),
    audit: () => import('../tui/commands/audit.js'),
    session: () => import('../tui/commands/session.js'),
    browse: () => import('../tui/commands/browse.js'),
    migrate: () => import('../tui/commands/migrate.js'),
    models: () => import('../tui/commands/models.js'),
    'rerank-eval': () => import('../tui/commands/rerank-eval.js'),
    // The team server lives in hub/; like hooks/, reached only by dynamic import.
    hub: () => import('../hub/cli/hub-command.js'),
  };
}

/** The commands this dispatcher runs (a test checks that the prompt bundle's are those bin/svc.ts sends it). */
export const commandNames = (): string[] => Object.keys(COMMANDS);

const USAGE = `svc: memory for AI agents and teams

  Usage
    svc <command> [arguments] [flags]

  Commands
    init                     wire svc into the agent host and editor (MCP server, hooks, shim)
    init-remote              connect this project to a team hub (--url --token; --verify)
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
    rescope <id...> --scope  move engrams to another scope; to a team scope: publish to the hub
    batch-decay              ACT-R decay of every engram; weak ones turn dormant
    capture <summary>        record an episode (what happened); text may come from stdin
    timeline [query]         episode history, newest first
    status                   counts, storage root, index health
    session start|end|show   agent sessions with attached learnings
    sync [remote]            pull and push the store through git (--full: rebuild the index)
    conflicts                what two machines changed differently: list, show, resolve
    stores list|add|discover the stores recall and inject span (--shared, --readonly); hub scopes
    packs <subcommand>       list, preview, install, uninstall, export engram packs
    ingest <text>            extract rules, decisions, definitions from text (no LLM)
    import --from <source>   bring memories from files or another memory system
    tensions                 conflicting engrams: list, --scan, confirm, dismiss, resolve
    audit                    classify an agent host's working memory against the store
    migrate [up|status|down] store layout migrations, with a backup first
    models [list|pull|import|remove]  the embedding models: fetch now, or bring a copy offline
    rerank-eval              advisory gate: does the reranker help on this store?
    browse                   interactive terminal browser (also: bare svc on a terminal)
    hub                      run the team server; hub org create, hub audit verify

  Run "svc <command> --help" for a command's flags.
  Global flags: --json --path <dir> --fast --quiet --help --version
`;

/** Global flags given before the command (`svc --json status`) go after it, where commands read them. */
function commandFirst(argv: string[]): string[] {
  const leading: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const a = argv[i]!;
    if (/^--(no-)?(json|quiet|fast)$/.test(a) || /^--path=/.test(a)) leading.push(a);
    else if (a === '--path' && i + 1 < argv.length) leading.push(a, argv[++i]!);
    else break;
    i++;
  }
  if (leading.length === 0 || i >= argv.length) return argv;
  return [argv[i]!, ...leading, ...argv.slice(i + 1)];
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = commandFirst(argv);
  // Bare `svc` on a terminal opens the browser; piped or redirected, it prints the usage.
  if (name === undefined && isTerminal(0) && isTerminal(1)) return (await COMMANDS.browse!()).run([]);
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    writeOut(USAGE);
    return 0;
  }
  if (name === '--version' || name === '-v') {
    writeOut((await import('../engine/package-info.js')).packageVersion() + '\n');
    return 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    const { closest } = await import('../engine/cli/cli-kit.js');
    const near = name.startsWith('-')
      ? undefined
      : closest(
          name,
          Object.keys(COMMANDS).filter((c) => !c.startsWith('hook-')),
        );
    throw new SvcError('invalid', `unknown command "${name}"${near ? ` (did you mean "svc ${near}"?)` : ''} (run svc --help)`);
  }
  return (await load()).run(rest);
}

async function report(err: unknown): Promise<number> {
  // Errors follow the mode the command chose; before flags were parsed, guess from argv.
  const { chosenJsonMode } = await import('../engine/cli/cli-kit.js');
  const json = chosenJsonMode ?? (process.argv.includes('--json') || (!isTerminal(1) && !process.argv.includes('--no-json')));
  if (err instanceof SvcError) {
    const details = err.details.filter((d) => d !== err.message);
    const line = details.length ? `${err.message}: ${details.join('; ')}` : err.message;
    const { terminalSafe } = await import('../engine/text.js');
    writeErr(
      json
        ? JSON.stringify({ error: { kind: err.kind, message: err.message, details: err.details } }) + '\n'
        : `svc: ${terminalSafe(line)}\n`,
    );
    return err.kind === 'no_results' ? 2 : 1;
  }
  const message = (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
  const { terminalSafe } = await import('../engine/text.js');
  writeErr(
    json ? JSON.stringify({ error: { kind: 'internal', message, details: [] } }) + '\n' : `svc: internal error: ${terminalSafe(message)}\n`,
  );
  if (process.env.SVC_DEBUG && err instanceof Error) writeErr(`${err.stack}\n`);
  return 1;
}

/** Runs the command `argv` names; its exit code becomes the process's. */
export function start(argv: string[]): Promise<void> {
  // A reader that stops early (`svc list | head`) closes the pipe: that ends the output, quietly.
  quietOnClosedPipe();
  return main(argv).then(
    (code) => {
      process.exitCode = code;
    },
    async (err) => {
      process.exitCode = await report(err);
    },
  );
}
