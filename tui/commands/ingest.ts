import { invalid } from '../../engine/errors.js';
import { extractForIngest, ingest, type IngestItemResult } from '../../engine/ops/ingest/ingest.js';
import { systemContext } from '../../engine/ops/context.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { checkScope } from '../../engine/model/scope.js';
import { makeOutput, openStore, parseArgs, textArgument } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc ingest <text> [flags]
    cat CONTRIBUTING.md | svc ingest [flags]

  Extracts rules, prohibitions, decisions, definitions and procedures from text by pattern
  (no LLM) and saves them as engrams. The text is an argument or stdin, not a file path:
  Markdown (headings become the section), plain prose, or a chat transcript
  ("user: ..." / "assistant: ..."; only the human turns are read).

  Flags
    --source <s>      where the text came from, recorded on each engram (default "ingest")
    --scope <s>       scope of the engrams (default: .svc.yaml scope, else global)
    --domain <d>      domain of the engrams; a statement under a heading gets <d>.<section>
                      (default: .svc.yaml domain)
    --extract-only    print the candidates, save nothing`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    source: { type: 'string' },
    scope: { type: 'string' },
    domain: { type: 'string' },
    extractOnly: { type: 'boolean', default: false },
  });
  const f = cli.flags;
  const out = makeOutput(f);
  if (f.scope !== undefined) {
    const bad = checkScope(f.scope);
    if (bad) throw invalid(bad);
  }
  if (f.domain !== undefined && (f.domain.trim() === '' || /\s/.test(f.domain)))
    throw invalid(`--domain must be a dotted path without whitespace (got "${f.domain}")`);
  if (f.source !== undefined && f.source.trim() === '') throw invalid('--source must not be empty');
  const content = await textArgument(cli.input, 'the text to ingest');
  const project = f.scope === undefined || f.domain === undefined ? await loadProjectConfig(process.cwd()) : null;
  const input = {
    content,
    source: f.source,
    scope: f.scope ?? project?.scope,
    domain: f.domain ?? project?.domain,
    extract_only: f.extractOnly === true,
  };

  if (input.extract_only) {
    // Nothing is saved: no store is opened (or created).
    const result = extractForIngest(input);
    out.result(result, () => candidatesText(result.candidates, result.format, true));
    return 0;
  }

  const store = await openStore(f, 'fast', out);
  try {
    const result = await ingest(store, input, systemContext);
    for (const w of result.warnings) out.warn(w);
    out.result(result, () => {
      if (out.quiet)
        return result.candidates
          .filter((c) => c.id)
          .map((c) => c.id)
          .join('\n');
      const head =
        result.count === 0
          ? 'No learnable statements found.'
          : `Ingested ${result.count} statement${result.count === 1 ? '' : 's'} from a ${result.format}: ${result.created} new, ${result.duplicate} already known` +
            (result.conflict ? `, ${result.conflict} in conflict` : '') +
            (result.error ? `, ${result.error} refused` : '');
      return result.count === 0 ? head : `${head}\n${candidatesText(result.candidates, result.format, false)}`;
    });
    return result.error > 0 ? 1 : 0;
  } finally {
    store.close();
  }
}

function candidatesText(candidates: IngestItemResult[], format: string, extractOnly: boolean): string {
  if (candidates.length === 0) return 'No learnable statements found.';
  const lines = extractOnly ? [`${candidates.length} candidate${candidates.length === 1 ? '' : 's'} in a ${format} (nothing saved):`] : [];
  for (const c of candidates) {
    const where = [`line ${c.line}`, c.domain ?? c.section, c.speaker].filter(Boolean).join(', ');
    const tag = c.polarity ? `${c.kind}, ${c.type}, ${c.polarity}` : `${c.kind}, ${c.type}`;
    const status = extractOnly ? '' : c.action === 'created' ? `${c.id}  ` : `${c.action}${c.id ? ` ${c.id}` : ''}  `;
    lines.push(`  ${status}[${tag}] ${c.statement}  (${where})${c.reason && c.action !== 'duplicate' ? `\n      ${c.reason}` : ''}`);
  }
  return lines.join('\n');
}
