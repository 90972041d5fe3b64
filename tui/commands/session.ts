import { invalid } from '../../engine/errors.js';
import { systemContext } from '../../engine/ops/context.js';
import { checkBudget, DEFAULT_INJECT_BUDGET } from '../../engine/ops/inject-budget.js';
import { endSession, sessionScope, startSession } from '../../engine/ops/sessions.js';
import { hubWritableScopes, sendQueued, teamSource, warnSources } from '../team-memory.js';
import { learnSummary } from '../../engine/ops/result-json.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { checkScope } from '../../engine/model/scope.js';
import { globalFlags, makeOutput, openStore, parseArgs, type Output, type FlagSpecs, type ParsedFlags } from '../../engine/cli/cli-kit.js';
import { embedderFor } from '../embedding.js';
import { shellQuote, byCodeUnit } from '../../engine/text.js';
import { rerankerSetting } from '../../engine/rerank/reranker.js';

const HELP = `
  Usage
    svc session start [task] [--agent a] [--scope s] [--domain d] [--budget n] [--fast]
    svc session end <session id> [--summary text] [--learn "statement"]...
    svc session show <session id>

  A session is one agent's unit of work. start prints the session id, what to know for the task
  (## DIRECTIVES, ## CONSTRAINTS, ## ALSO CONSIDER) and the scopes the session may write; scope and
  domain default to the project's (.svc.yaml). end records the summary, learns each --learn
  statement (in the session's scope and domain) and suggests statements from the summary and the
  session's corrections that look worth learning. show prints the session and its episodes.

  Flags
    --agent <a>         who works in the session (default cli)
    --scope <s>         scope of the session; its learnings default to it
    --domain <d>        domain of the session; its learnings default to it
    --budget <n>        token budget of the injection (default ${DEFAULT_INJECT_BUDGET})
    --summary <text>    (end) what was done and learned
    --learn <text>      (end) a statement to learn; repeat for several`;

const FLAGS = {
  agent: { type: 'string' },
  scope: { type: 'string' },
  domain: { type: 'string' },
  budget: { type: 'number' },
  summary: { type: 'string' },
  learn: { type: 'string', isMultiple: true },
} as const satisfies FlagSpecs;

type Flags = ParsedFlags<typeof FLAGS & typeof globalFlags>;

const FLAG_USE: Record<string, Array<keyof typeof FLAGS>> = {
  start: ['agent', 'scope', 'domain', 'budget'],
  end: ['summary', 'learn'],
  show: [],
};

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, FLAGS);
  const f = cli.flags;
  const out = makeOutput(f);
  const [sub, ...rest] = cli.input;
  if (sub === undefined) throw invalid('a subcommand is missing: svc session start|end|show (see --help)');
  const allowed = FLAG_USE[sub];
  if (!allowed) throw invalid(`unknown session subcommand "${sub}" (use start, end or show)`);
  for (const name of Object.keys(FLAGS) as Array<keyof typeof FLAGS>) {
    const given = name === 'learn' ? (f.learn?.length ?? 0) > 0 : f[name] !== undefined;
    if (given && !allowed.includes(name)) throw invalid(`--${name} does not apply to "session ${sub}"`);
  }
  if (sub === 'start') return start(rest, f, out);
  const [id, ...extra] = rest;
  if (!id) throw invalid(`the session id is missing: svc session ${sub} <session id>`);
  if (extra.length) throw invalid(`unexpected argument "${extra[0]}"${sub === 'end' ? ' (the summary goes in --summary)' : ''}`);
  return sub === 'end' ? end(id, f, out) : show(id, f, out);
}

async function start(words: string[], f: Flags, out: Output): Promise<number> {
  const budget = checkBudget(f.budget ?? DEFAULT_INJECT_BUDGET, '--budget');
  if (f.scope !== undefined) {
    const bad = checkScope(f.scope);
    if (bad) throw invalid(bad);
  }
  const task = words.join(' ').trim() || undefined;
  const project = await loadProjectConfig(process.cwd());
  const store = await openStore(f, 'fast', out);
  try {
    const outbox = await sendQueued(store.root, project, out);
    const embedder = await embedderFor(store, out, { fast: f.fast, download: false, warn: false });
    const started = await startSession(
      store,
      {
        task,
        agent: f.agent ?? 'cli',
        scope: f.scope ?? project?.scope,
        domain: f.domain ?? project?.domain,
        budget,
        fast: f.fast,
        embedder,
        reranker: rerankerSetting(store.root),
        team: await teamSource(store.root, process.cwd(), project),
      },
      systemContext,
    );
    warnSources(started.injection.sources, out);
    // The hub's scopes this person may write count too (its /me answer, cached 10 minutes).
    const hubWritable = await hubWritableScopes(store.root, project);
    const writable = [...started.writable_scopes, ...(hubWritable ?? []).filter((s) => !started.writable_scopes.includes(s))];
    const r = {
      ...started,
      writable_scopes: writable,
      ...(hubWritable ? { hub_writable_scopes: hubWritable } : {}),
      ...(outbox ? { outbox: outbox.report } : {}),
    };
    out.result(r, () => {
      if (out.quiet) return r.session.id;
      const where = [r.session.scope && `scope ${r.session.scope}`, r.session.domain && `domain ${r.session.domain}`]
        .filter(Boolean)
        .join(', ');
      return [
        `Session ${r.session.id} started${task ? ` for: ${task}` : ''}${where ? ` (${where})` : ''}`,
        ...(outbox ? [outbox.line] : []),
        '',
        r.injection.text || '(nothing in memory for this task yet)',
        '',
        `Writable scopes: ${r.writable_scopes.join(', ')}`,
        `End it with: svc session end ${r.session.id} --summary "..." [--learn "..."]`,
      ].join('\n');
    });
    return 0;
  } finally {
    store.close();
  }
}

async function end(id: string, f: Flags, out: Output): Promise<number> {
  const learnings = (f.learn ?? []).map((s) => s.trim());
  if (learnings.some((s) => s === '')) throw invalid('--learn must not be empty');
  const store = await openStore(f, 'fast', out);
  try {
    const embedder = await embedderFor(store, out, { fast: f.fast, download: false, warn: false });
    const r = await endSession(store, id, { summary: f.summary, learnings: learnings.map((statement) => ({ statement })) }, systemContext, {
      embedder,
    });
    for (const l of r.learned) for (const w of l.warnings) out.warn(w);
    const learned = r.learned.map(learnSummary);
    out.result({ session: r.session, learned, suggested: r.suggested }, () => {
      const lines = [`Session ${id} ended${r.session.summary ? `: ${r.session.summary}` : ''}`];
      if (r.learned.length) {
        lines.push('', 'Learned:');
        for (const l of r.learned) lines.push(`  ${l.engram.id} (${l.action}, scope ${l.engram.scope}): ${l.engram.statement}`);
      }
      if (r.suggested.length) {
        lines.push('', 'Worth learning? (not saved yet)');
        for (const s of r.suggested) lines.push(`  svc learn ${shellQuote(s)}`);
      }
      return lines.join('\n');
    });
    return 0;
  } finally {
    store.close();
  }
}

async function show(id: string, f: Flags, out: Output): Promise<number> {
  const store = await openStore(f, 'fast', out);
  try {
    const session = await sessionScope(store, id, {});
    const episodes = (await store.queryEpisodes({ session: id, limit: 200 })).sort((a, b) => byCodeUnit(a.at, b.at));
    out.result({ session, episodes }, () => {
      const s = session;
      const lines = [
        `${s.id}  ${s.status}`,
        `  started ${s.started_at}${s.ended_at ? `, ended ${s.ended_at}` : ''}`,
        ...(s.task ? [`  task: ${s.task}`] : []),
        ...(s.agent ? [`  agent: ${s.agent}`] : []),
        ...(s.scope || s.domain
          ? [`  ${[s.scope && `scope ${s.scope}`, s.domain && `domain ${s.domain}`].filter(Boolean).join(', ')}`]
          : []),
        ...(s.summary ? [`  summary: ${s.summary}`] : []),
        `  engrams: ${s.engram_ids.length ? s.engram_ids.join(', ') : 'none'}`,
      ];
      if (episodes.length) {
        lines.push('  episodes:');
        for (const e of episodes) lines.push(`    ${e.at}  ${e.summary}`);
      }
      return lines.join('\n');
    });
    return 0;
  } finally {
    store.close();
  }
}
