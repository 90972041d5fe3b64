import type { EngramType } from '../../engine/model/engram-types.js';
import type { LearnInput } from '../../engine/ops/learn.js';
import { seededRandom } from '../../engine/seeded-random.js';

// A deterministic generator of realistic engrams (coding conventions, tool choices,
// prohibitions, architecture decisions, terminology, procedures) and of recall queries drawn
// from the same vocabulary. Same seed, same output; no dependency.

interface Domain {
  path: string;
  tags: string[];
  tools: string[];
  tasks: string[];
  things: string[];
}

const DOMAINS: Domain[] = [
  {
    path: 'lang.typescript',
    tags: ['typescript', 'node'],
    tools: ['tsc', 'eslint', 'prettier', 'zod', 'vitest', 'tsx', 'esbuild'],
    tasks: ['type-check the monorepo', 'validate request bodies', 'bundle the CLI', 'lint staged files'],
    things: ['strict null checks', 'barrel files', 'const enums', 'type assertions', 'default exports', 'the any type', 'path aliases'],
  },
  {
    path: 'lang.python',
    tags: ['python'],
    tools: ['ruff', 'mypy', 'poetry', 'uv', 'pytest', 'pydantic', 'black'],
    tasks: ['manage virtualenvs', 'pin dependencies', 'parse settings files', 'run the unit suite'],
    things: [
      'mutable default arguments',
      'bare except clauses',
      'wildcard imports',
      'type hints',
      'import-time side effects',
      'global state',
    ],
  },
  {
    path: 'lang.go',
    tags: ['go', 'golang'],
    tools: ['golangci-lint', 'gofmt', 'sqlc', 'testify', 'cobra', 'pprof'],
    tasks: ['generate query code', 'profile allocations', 'build command-line tools', 'table-test handlers'],
    things: ['naked returns', 'panics in library code', 'context propagation', 'wrapped errors', 'goroutine leaks', 'init functions'],
  },
  {
    path: 'lang.rust',
    tags: ['rust'],
    tools: ['clippy', 'cargo-nextest', 'serde', 'tokio', 'anyhow', 'thiserror'],
    tasks: ['serialize config structs', 'run async tasks', 'speed up the test suite', 'define library errors'],
    things: ['unwrap calls', 'unsafe blocks', 'explicit lifetimes', 'cargo feature flags', 'blocking calls in async code'],
  },
  {
    path: 'db.postgres',
    tags: ['postgres', 'database', 'sql'],
    tools: ['pgbouncer', 'sqitch', 'flyway', 'psql', 'pg_dump', 'pgbench'],
    tasks: ['pool connections', 'apply schema migrations', 'take logical backups', 'load-test queries'],
    things: ['foreign keys', 'nullable columns', 'advisory locks', 'long-running transactions', 'sequential scans', 'partial indexes'],
  },
  {
    path: 'infra.kubernetes',
    tags: ['kubernetes', 'k8s', 'deploy'],
    tools: ['helm', 'kustomize', 'argocd', 'kubectl', 'k9s', 'karpenter'],
    tasks: ['roll out manifests', 'template charts', 'autoscale node pools', 'inspect crashing pods'],
    things: ['resource limits', 'liveness probes', 'latest image tags', 'namespaces', 'pod disruption budgets', 'host path volumes'],
  },
  {
    path: 'infra.terraform',
    tags: ['terraform', 'iac', 'cloud'],
    tools: ['terraform', 'terragrunt', 'tflint', 'atlantis', 'infracost'],
    tasks: ['plan infrastructure changes', 'estimate cloud costs', 'share modules across accounts', 'review plans in pull requests'],
    things: ['remote state', 'provider versions', 'workspaces', 'module outputs', 'manual console edits'],
  },
  {
    path: 'frontend.react',
    tags: ['react', 'frontend', 'ui'],
    tools: ['vite', 'react-query', 'zustand', 'storybook', 'playwright', 'tailwind'],
    tasks: ['fetch server state', 'document components', 'run end-to-end tests', 'style design tokens'],
    things: ['useEffect hooks', 'prop drilling', 'inline styles', 'controlled inputs', 'suspense boundaries', 'index keys in lists'],
  },
  {
    path: 'ci.pipelines',
    tags: ['ci', 'github-actions', 'build'],
    tools: ['github actions', 'renovate', 'dependabot', 'buildkite', 'nx', 'turborepo'],
    tasks: ['update dependencies', 'cache build outputs', 'run matrix builds', 'gate merges on checks'],
    things: ['pinned action hashes', 'cache keys', 'flaky tests', 'required checks', 'self-hosted runners'],
  },
  {
    path: 'observability',
    tags: ['observability', 'monitoring', 'oncall'],
    tools: ['opentelemetry', 'prometheus', 'grafana', 'loki', 'sentry', 'datadog'],
    tasks: ['trace cross-service requests', 'alert on error budgets', 'search structured logs', 'group crash reports'],
    things: ['trace ids', 'debug log levels', 'high-cardinality labels', 'alert thresholds', 'dashboards', 'sampling rates'],
  },
  {
    path: 'security',
    tags: ['security', 'secrets', 'compliance'],
    tools: ['vault', 'sops', 'trivy', 'semgrep', 'gitleaks', 'cosign'],
    tasks: ['store service credentials', 'scan container images', 'sign release artifacts', 'encrypt config files'],
    things: ['plaintext env files', 'token rotation', 'least privilege roles', 'dependency audits', 'CSP headers', 'shared admin accounts'],
  },
  {
    path: 'api.http',
    tags: ['api', 'http', 'backend'],
    tools: ['openapi', 'grpc', 'fastify', 'express', 'nginx', 'envoy'],
    tasks: ['describe public endpoints', 'terminate TLS', 'serve internal RPC', 'throttle abusive clients'],
    things: ['pagination cursors', 'idempotency keys', 'rate limits', 'error envelopes', 'versioned routes', 'breaking field renames'],
  },
  {
    path: 'data.pipelines',
    tags: ['data', 'etl', 'analytics'],
    tools: ['airflow', 'dbt', 'kafka', 'spark', 'duckdb', 'parquet'],
    tasks: ['schedule nightly jobs', 'model warehouse tables', 'stream change events', 'query exports ad hoc'],
    things: ['late-arriving events', 'backfills', 'schema evolution', 'partition keys', 'exactly-once delivery', 'wide joins'],
  },
  {
    path: 'mobile',
    tags: ['mobile', 'ios', 'android'],
    tools: ['swiftui', 'jetpack compose', 'fastlane', 'expo', 'firebase'],
    tasks: ['ship beta builds', 'sign app bundles', 'send push notifications', 'test on real devices'],
    things: ['offline caching', 'push tokens', 'app store review notes', 'deep links', 'main-thread network calls'],
  },
  {
    path: 'docs',
    tags: ['docs', 'writing'],
    tools: ['markdown', 'docusaurus', 'vale', 'mermaid', 'typedoc'],
    tasks: ['publish the developer portal', 'lint prose', 'draw sequence diagrams', 'generate API references'],
    things: ['changelogs', 'decision records', 'README files', 'code samples', 'screenshots of terminals'],
  },
  {
    path: 'git.workflow',
    tags: ['git', 'workflow', 'review'],
    tools: ['git', 'pre-commit', 'commitlint', 'gh', 'graphite'],
    tasks: ['stack pull requests', 'enforce commit messages', 'run hooks before push', 'cut release branches'],
    things: ['force pushes', 'squash merges', 'release branches', 'signed commits', 'merge commits on main', 'large binary files'],
  },
];

const SERVICES = [
  'billing',
  'checkout',
  'auth',
  'search',
  'notifications',
  'ingest',
  'reporting',
  'gateway',
  'scheduler',
  'inventory',
  'ledger',
  'onboarding',
];
const TEAMS = ['platform', 'payments', 'growth', 'data', 'mobile', 'infra', 'security', 'design-systems'];
const PLACES = [
  'the main branch',
  'shared libraries',
  'request handlers',
  'migrations',
  'the public API',
  'test fixtures',
  'production configs',
  'the CLI entry point',
  'background workers',
  'the monorepo root',
];
const WHENS = [
  'before merging',
  'on every release',
  'when adding a dependency',
  'before a Friday deploy',
  'after a schema change',
  'when a test is flaky',
  'during code review',
  'for new services',
];
const REASONS = [
  'it caused an outage in March',
  'the audit requires it',
  'reviews go faster that way',
  'it keeps builds reproducible',
  'the old approach leaked memory',
  'it halves cold-start time',
  'support asked for it',
  'it avoids vendor lock-in',
  'on-call gets paged less',
  'it matches the upstream style guide',
];
const BAD_VERBS = ['disable', 'skip', 'hard-code', 'silence', 'bypass', 'rewrite'];
const APIS = ['REST', 'gRPC', 'event', 'GraphQL'];
const BUSES = ['Kafka', 'SQS', 'NATS', 'Redis streams', 'Pub/Sub'];
const STORES = ['Postgres', 'S3', 'Redis', 'SQLite', 'ClickHouse'];
const SUBCOMMANDS = ['check', 'run', 'plan', 'apply', 'build', 'lint --fix', 'test', 'sync'];
const EVENTS = [
  'tagging a release',
  'rotating credentials',
  'merging a migration',
  'onboarding a new engineer',
  'deploying to production',
  'deleting a feature flag',
];
const SYMPTOMS = [
  'the build fails only in CI',
  'p99 latency spikes',
  'a migration locks a table',
  'tests pass locally but not in CI',
  'a deploy stalls at the canary stage',
  'memory grows after each request',
];
const SCOPES = ['global', 'global', 'global', 'user:alex', 'local'];
const TERMS: Array<[string, string]> = [
  ['tenant', 'a paying organisation, not a user'],
  ['drain', 'stopping new traffic to a node and waiting for in-flight requests'],
  ['golden path', 'the template repository new services start from'],
  ['hotfix', 'a patch cut from the release branch, not from main'],
  ['shadow traffic', 'a copy of production requests sent to the new version without affecting responses'],
  ['cell', 'an isolated copy of the stack serving a subset of tenants'],
  ['tombstone', 'a row marked deleted but kept for replication'],
  ['freeze', 'the days before a release when only fixes merge'],
  ['runbook', 'the step-by-step page on-call follows for an alert'],
  ['ledger entry', 'an immutable record of one money movement'],
  ['canary', 'the first five percent of hosts a deploy reaches'],
  ['backfill', 'recomputing historical partitions after a logic change'],
  ['fixture', 'checked-in sample data used by integration tests'],
  ['seat', 'one licensed user inside a tenant'],
  ['epoch', 'a monotonically increasing configuration generation number'],
  ['sidecar', 'the proxy container injected next to each pod'],
  ['dead letter', 'a message that failed all retries and waits for manual review'],
  ['watermark', 'the latest event time a pipeline has fully processed'],
  ['SLO', 'the reliability target agreed with product, not the alert threshold'],
  ['blue lane', 'the staging environment that mirrors the shape of production data'],
];

type Pick = <T>(xs: readonly T[]) => T;

interface Draft {
  type: EngramType;
  kind: string;
  statement: string;
  /** For templates that use no domain words. */
  domain?: string;
}

// Each template draws its words from one domain plus the shared lists.
const TEMPLATES: Array<(p: Pick, d: Domain, r: () => number) => Draft> = [
  (p, d) => ({ type: 'behavioral', kind: 'convention', statement: `Always use ${p(d.tools)} to ${p(d.tasks)} ${p(WHENS)}.` }),
  (p, d) => ({ type: 'behavioral', kind: 'prohibition', statement: `Never commit ${p(d.things)} to ${p(PLACES)}; ${p(REASONS)}.` }),
  (p, d) => ({ type: 'behavioral', kind: 'tool-choice', statement: `Prefer ${p(d.tools)} over ${p(d.tools)} when you ${p(d.tasks)}.` }),
  (p, d) => ({
    type: 'behavioral',
    kind: 'prohibition',
    statement: `Avoid ${p(d.things)} in ${p(PLACES)} unless the ${p(TEAMS)} team signs off.`,
  }),
  (p, d) => ({ type: 'behavioral', kind: 'prohibition', statement: `Do not ${p(BAD_VERBS)} ${p(d.things)} ${p(WHENS)}.` }),
  (p, d) => ({
    type: 'behavioral',
    kind: 'convention',
    statement: `In the ${p(SERVICES)} service, keep ${p(d.things)} out of ${p(PLACES)} because ${p(REASONS)}.`,
  }),
  (p, d) => ({
    type: 'architectural',
    kind: 'decision',
    statement: `The ${p(SERVICES)} service owns ${p(d.things)}; other services go through its ${p(APIS)} API.`,
  }),
  (p, d) => ({
    type: 'architectural',
    kind: 'decision',
    statement: `We chose ${p(d.tools)} over ${p(d.tools)} to ${p(d.tasks)} because ${p(REASONS)}.`,
  }),
  (p) => ({
    type: 'architectural',
    kind: 'decision',
    statement: `The ${p(SERVICES)} service publishes events to ${p(BUSES)} and never calls the ${p(SERVICES)} service directly.`,
    domain: 'architecture.messaging',
  }),
  (p, d, r) => ({
    type: 'architectural',
    kind: 'decision',
    statement: `Each ${p(SERVICES)} worker buffers ${p(d.things)} in memory and flushes to ${p(STORES)} every ${5 + Math.floor(r() * 55)} seconds.`,
  }),
  (p, d, r) => ({
    type: 'architectural',
    kind: 'decision',
    statement: `The ${p(TEAMS)} team decided in ADR-${1 + Math.floor(r() * 240)} that ${p(d.things)} belong in ${p(PLACES)}.`,
  }),
  (p) => {
    const [term, def] = p(TERMS);
    return {
      type: 'terminological',
      kind: 'terminology',
      statement: `In the ${p(SERVICES)} codebase, "${term}" means ${def}.`,
      domain: 'glossary',
    };
  },
  (p) => {
    const [term, def] = p(TERMS);
    return {
      type: 'terminological',
      kind: 'terminology',
      statement: `When the ${p(TEAMS)} team says "${term}", they mean ${def}.`,
      domain: 'glossary',
    };
  },
  (p, d) => ({
    type: 'procedural',
    kind: 'howto',
    statement: `To ${p(d.tasks)}, run \`${p(d.tools)} ${p(SUBCOMMANDS)}\` and then check ${p(d.things)}.`,
  }),
  (p, d) => ({
    type: 'procedural',
    kind: 'howto',
    statement: `Before ${p(EVENTS)}, run \`${p(d.tools)} ${p(SUBCOMMANDS)}\` and ask the ${p(TEAMS)} team for review.`,
  }),
  (p, d) => ({ type: 'procedural', kind: 'debugging', statement: `When ${p(SYMPTOMS)}, first look at ${p(d.things)} with ${p(d.tools)}.` }),
];

/** `count` distinct engrams (distinct statements, so none is deduplicated by learn). */
export function syntheticEngrams(count: number, seed = 42): LearnInput[] {
  const r = seededRandom(seed);
  const pick: Pick = (xs) => xs[Math.floor(r() * xs.length)]!;
  const seen = new Set<string>();
  const out: LearnInput[] = [];
  while (out.length < count) {
    const domain = pick(DOMAINS);
    const draft = pick(TEMPLATES)(pick, domain, r);
    let statement = draft.statement;
    // The vocabulary is finite: past a few thousand engrams, qualify repeats with a service.
    if (seen.has(statement.toLowerCase())) statement = `${statement.slice(0, -1)} (${pick(SERVICES)}, ${pick(TEAMS)}).`;
    if (seen.has(statement.toLowerCase())) continue;
    seen.add(statement.toLowerCase());
    const tags = [
      ...new Set([draft.domain ? draft.domain.split('.')[0]! : pick(domain.tags), draft.kind, ...(r() < 0.4 ? [pick(domain.tags)] : [])]),
    ];
    const input: LearnInput = { statement, type: draft.type, domain: draft.domain ?? domain.path, tags, scope: pick(SCOPES) };
    if (r() < 0.3) input.rationale = pick(REASONS);
    if (r() < 0.2) input.source = `review of PR #${1 + Math.floor(r() * 9000)}`;
    out.push(input);
  }
  return out;
}

const QUESTIONS: Array<(p: Pick, d: Domain) => string> = [
  (p, d) => `how do we ${p(d.tasks)}?`,
  (p) => `what does ${p(TERMS)[0]} mean?`,
  (p, d) => `why ${p(d.tools)}?`,
  (p, d) => `who owns ${p(d.things)}?`,
  (p, d) => `can I ${p(BAD_VERBS)} ${p(d.things)}?`,
  (p, d) => `which tool for ${p(d.tasks)}?`,
];

/** Recall queries: 1-6 vocabulary words, about a third of them short questions. */
export function syntheticQueries(count: number, seed = 7): string[] {
  const r = seededRandom(seed);
  const pick: Pick = (xs) => xs[Math.floor(r() * xs.length)]!;
  const out: string[] = [];
  while (out.length < count) {
    const d = pick(DOMAINS);
    let q: string;
    if (r() < 0.35) {
      q = pick(QUESTIONS)(pick, d);
    } else {
      const pool = [...d.tools, ...d.things, ...d.tasks, ...SERVICES, ...TEAMS].flatMap((s) => s.split(' '));
      const n = 1 + Math.floor(r() * 6);
      q = Array.from({ length: n }, () => pick(pool)).join(' ');
    }
    if (q.split(' ').length <= 6) out.push(q);
  }
  return out;
}

const ASKS: Array<(p: Pick, d: Domain) => string> = [
  (p, d) => `what is our policy on ${p(d.things)} when we ${p(d.tasks)} for the ${p(SERVICES)} service`,
  (p, d) => `should I use ${p(d.tools)} or ${p(d.tools)} to ${p(d.tasks)}`,
  (p, d) => `why does ${p(SYMPTOMS)} in ${p(SERVICES)} and how do we fix it with ${p(d.tools)}`,
  (p, d) => `steps to ${p(d.tasks)} before ${p(EVENTS)}`,
  (p, d) => `is it ok to ${p(BAD_VERBS)} ${p(d.things)} in ${p(PLACES)} ${p(WHENS)}`,
  (p, d) => `who reviews changes to ${p(d.things)} on the ${p(TEAMS)} team`,
  (p, d) => `${p(d.tools)} config for ${p(SERVICES)} ${p(d.things)} ${p(STORES)} ${p(BUSES)}`,
  (p) => `where does the ${p(TEAMS)} team keep notes about ${p(TERMS)[0]} and ${p(TERMS)[0]}`,
  (p, d) => `error in ${p(APIS)} handler of ${p(SERVICES)} after ${p(d.tasks)}, what should we check first`,
  (p, d) => `remind me the rule about ${p(d.things)} and ${p(d.things)}`,
];

/**
 * Queries as people and agents type them: 4 to 16 words, whole questions with common words
 * ("the", "we", "service", "team") and several domains' words at once, some words the store
 * never saw. They reach far more postings than `syntheticQueries`; distinct, same seed same list.
 */
export function variedQueries(count: number, seed = 13): string[] {
  const r = seededRandom(seed);
  const pick: Pick = (xs) => xs[Math.floor(r() * xs.length)]!;
  const out = new Set<string>();
  while (out.size < count) {
    let q = pick(ASKS)(pick, pick(DOMAINS));
    if (r() < 0.3) q += ` (${pick(['urgent', 'prod incident', 'new hire question', 'for the quarterly review', 'again'])})`;
    if (r() < 0.25) q = `${q} ${pick(DOMAINS).tools.join(' ').split(' ').slice(0, 2).join(' ')}`;
    out.add(q);
  }
  return [...out];
}

// A team's shared vocabulary (issue 31): every statement reads "<verb> <thing> for the <service>
// service <when>", from a few dozen words, so each query word has thousands of documents, and
// queries are four such common words. A ranking that is fast only on rare words shows here.
const DENSE_SERVICES = ['billing', 'payments', 'search', 'auth', 'orders', 'users', 'inventory', 'shipping', 'reports', 'gateway'];
const DENSE_VERBS = ['use', 'prefer', 'avoid', 'require', 'run', 'deploy', 'cache', 'log', 'retry', 'validate'];
const DENSE_THINGS = [
  'the queue',
  'the cache',
  'the database',
  'the client',
  'retries',
  'timeouts',
  'the config',
  'the logs',
  'the tests',
  'the build',
];
const DENSE_WHEN = ['in production', 'before release', 'on every change', 'during review', 'at startup', 'after an incident'];
const DENSE_WHY = [
  'to keep latency low',
  'so alerts stay quiet',
  'because the team agreed',
  'to save cost',
  'for safety',
  'as the runbook says',
  'until the migration ends',
  'per the architecture review',
];

/** `count` distinct statements from the shared vocabulary above (same seed, same output). */
export function denseEngrams(count: number, seed = 7): LearnInput[] {
  const r = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const seen = new Set<string>();
  const out: LearnInput[] = [];
  while (out.length < count) {
    const service = pick(DENSE_SERVICES);
    const verb = pick(DENSE_VERBS);
    let statement = `${verb[0]!.toUpperCase()}${verb.slice(1)} ${pick(DENSE_THINGS)} for the ${service} service ${pick(DENSE_WHEN)} ${pick(DENSE_WHY)}`;
    // Past the vocabulary's combinations, a revision number keeps statements distinct.
    if (seen.has(statement)) statement = `${statement} (rev ${out.length})`;
    seen.add(statement);
    out.push({ statement, type: 'behavioral', domain: `svc.${service}`, tags: [service] });
  }
  return out;
}

/** `count` queries of four common words of that vocabulary (a service, "service", a verb, a thing's last word). */
export function denseQueries(count: number, seed = 17): string[] {
  const r = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const out = new Set<string>();
  while (out.size < Math.min(count, 1000)) {
    const words = [pick(DENSE_SERVICES), 'service', pick(DENSE_VERBS), pick(DENSE_THINGS).split(' ').at(-1)!];
    for (let i = words.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [words[i], words[j]] = [words[j]!, words[i]!];
    }
    out.add(words.join(' '));
  }
  return [...out];
}
