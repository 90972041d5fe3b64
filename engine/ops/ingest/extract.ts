// Ingest's extractor: the learnable statements of a text, found by wording patterns (no LLM),
// from a document (statements and procedures under their headings) or from a chat transcript
// (the human turns). `extractCandidates` is its entry point; ingest.ts learns what it finds.

import type { EngramType, Polarity } from '../../model/engram-types.js';
import { contentHash } from '../../model/content-hash.js';
import { classify, inline, KIND_TYPES, sentences, slug, STEP_VERBS, type CandidateKind, type Setting } from './classify.js';
import { lineOf, parseBlocks } from './markdown.js';
import { parseTranscript, type Turn } from './transcript.js';

// Ingest: pattern-based extraction of learnable statements from text, no LLM. Precision over
// recall: a statement is taken only when its wording says what it is, and questions, hedges,
// chit-chat and fragments are left alone.
//
// Kinds and the engram types they become:
//   rule         "Always ...", "Use ...", "X must ...", "We use ..."    -> behavioral, polarity do
//   prohibition  "Never ...", "Don't ...", "X is not allowed"           -> behavioral, polarity dont
//   decision     "We decided to ...", "We chose X over Y", "Decision: ..." -> architectural
//   definition   "X means ...", "By X we mean ...", glossary entries    -> terminological
//   procedure    a numbered list of imperative steps (or a bulleted one under an intro ending
//                in ":" or a setup/release/how-to heading)             -> procedural, ONE engram
//                per list ("<title>: 1. ...; 2. ...") because steps recalled one by one lose their order.
//
// Input forms:
//   Markdown     headings give each statement its section (a domain segment and a context);
//                bullets and numbered lists are read item by item; fenced and indented code,
//                tables, HTML and front matter are ignored.
//   Prose        sentences, the same patterns.
//   Chat         "user: ..." / "assistant: ..." transcripts (also "Human:", "AI:", named speakers
//                when most lines carry one). Only the human turns are read, and only with a
//                durable marker (always, never, don't, instead, from now on, must, we use ...):
//                a bare imperative in a chat ("fix the login bug") is a task, not a rule.

export interface IngestCandidate {
  statement: string;
  kind: CandidateKind;
  type: EngramType;
  polarity: Polarity | null;
  /** 1-based line of the input the statement starts on. */
  line: number;
  /** Headings above it, outermost first, e.g. "Contributing > Pull requests". */
  context?: string;
  /** The nearest section heading as a domain segment, e.g. "pull-requests". */
  section?: string;
  /** In a chat transcript: who said it. */
  speaker?: string;
}

export interface ExtractResult {
  format: 'document' | 'chat';
  candidates: IngestCandidate[];
}

// ----------------------------------------------------------------------- document extraction

const GLOSSARY_HEADING = /\b(?:glossary|terminology|terms|definitions|vocabulary|concepts|jargon|nomenclature)\b/i;
const PROCEDURE_HEADING =
  /\b(?:how to|steps|setup|set up|setting up|install(?:ing|ation)?|getting started|quick ?start|releas(?:e|ing)|publish(?:ing)?|deploy(?:ing|ment)?|workflow|process|procedure|running|build(?:ing)?|bootstrap(?:ping)?|upgrad(?:e|ing)|migrat(?:e|ing|ion))\b/i;
const DECISION_HEADING = /\b(?:decisions?|adr|architecture decision)\b/i;

function firstWord(text: string): string {
  return inline(text)
    .replace(/^(?:then|first|next|finally|now|and|lastly|optionally)\b[,:]?\s*/i, '')
    .split(/\s+/)[0]!
    .toLowerCase()
    .replace(/[^a-z]/g, '');
}

function isStep(text: string): boolean {
  return STEP_VERBS.has(firstWord(text));
}

interface Collector {
  add(kind: CandidateKind, statement: string, line: number, extra?: Partial<IngestCandidate>): void;
}

function extractDocument(text: string, out: Collector): void {
  const blocks = parseBlocks(text);
  const headings: Array<{ level: number; text: string }> = [];
  const hasSections = blocks.some((b) => b.kind === 'heading' && (b.level ?? 1) >= 2);
  const where = (): Partial<IngestCandidate> => {
    if (headings.length === 0) return {};
    const section = [...headings].reverse().find((h) => h.level >= 2 || !hasSections);
    return { context: headings.map((h) => h.text).join(' > '), ...(section && slug(section.text) ? { section: slug(section.text) } : {}) };
  };
  const current = (): string => headings.at(-1)?.text ?? '';

  for (let b = 0; b < blocks.length; b++) {
    const block = blocks[b]!;
    if (block.kind === 'heading') {
      while (headings.length && headings.at(-1)!.level >= block.level!) headings.pop();
      headings.push({ level: block.level!, text: block.text });
      continue;
    }
    const setting: Setting = { mode: 'document', glossary: GLOSSARY_HEADING.test(current()), decisions: DECISION_HEADING.test(current()) };

    if (block.kind === 'item') {
      // The whole list: items until a block that is not an item.
      let end = b;
      while (end + 1 < blocks.length && blocks[end + 1]!.kind === 'item') end++;
      const items = blocks.slice(b, end + 1);
      const top = Math.min(...items.map((it) => it.indent ?? 0));
      const steps = items.filter((it) => (it.indent ?? 0) === top);
      const intro = b > 0 && blocks[b - 1]!.kind === 'para' ? blocks[b - 1]!.text : '';
      const introSentence = intro ? (sentences(inline(intro)).at(-1) ?? '') : '';
      const introCue =
        /:\s*$/.test(introSentence) && /\b(?:to\s+\w+|steps?|follow(?:ing)?|how to|process|procedure)\b/i.test(introSentence);
      const imperative = steps.filter((it) => isStep(it.text)).length;
      const ordered = steps.every((it) => it.ordered);
      const isProcedure =
        steps.length >= 2 &&
        imperative / steps.length >= 0.6 &&
        !setting.glossary &&
        (ordered || introCue || PROCEDURE_HEADING.test(current()));
      if (isProcedure) {
        const title = introCue ? introSentence.replace(/:\s*$/, '') : current() || 'Steps';
        const parts = steps.map((st, n) => {
          const children = items.filter((it) => it.line > st.line && (it.indent ?? 0) > top && it.line < (steps[n + 1]?.line ?? Infinity));
          const body = inline(st.text).replace(/[.;:\s]+$/, '');
          return children.length ? `${body} (${children.map((c) => inline(c.text).replace(/[.;:\s]+$/, '')).join(', ')})` : body;
        });
        const statement = `${title.replace(/[.\s]+$/, '')}: ${parts.map((p, n) => `${n + 1}. ${p}`).join('; ')}.`;
        out.add('procedure', statement, introCue ? blocks[b - 1]!.line : block.line, where());
      } else {
        for (const it of items) {
          for (const sentence of sentences(inline(it.text))) {
            const c = classify(sentence, { ...setting, bullet: true });
            if (c) out.add(c.kind, c.statement, it.line, where());
          }
        }
      }
      b = end;
      continue;
    }

    for (const sentence of sentences(inline(block.text))) {
      const c = classify(sentence, setting);
      if (c) out.add(c.kind, c.statement, lineOf(sentence, block), where());
    }
  }
}

// --------------------------------------------------------------------------- chat extraction

function extractChat(turns: Turn[], out: Collector): void {
  for (const turn of turns) {
    if (!turn.human) continue;
    // A fenced block in a turn is code or pasted output, not advice.
    const prose = turn.text.replace(/```[\s\S]*?(?:```|$)/g, ' ');
    for (const part of prose.split('\n')) {
      for (const sentence of sentences(inline(part.replace(/^\s*(?:[-*+•]|\d{1,3}[.)])\s+/, '')), true)) {
        const c = classify(sentence, { mode: 'chat', glossary: false, decisions: false });
        if (c) out.add(c.kind, c.statement, turn.line, { speaker: turn.speaker });
      }
    }
  }
}

// ------------------------------------------------------------------------------- entry points

/** The statements a text holds, in order of appearance, each once. */
export function extractCandidates(text: string): ExtractResult {
  const normalized = text.replace(/\r\n?/g, '\n');
  const seen = new Set<string>();
  const candidates: IngestCandidate[] = [];
  const out: Collector = {
    add(kind, statement, line, extra = {}) {
      const hash = contentHash(statement);
      if (seen.has(hash)) return;
      seen.add(hash);
      const type = KIND_TYPES[kind];
      const polarity: Polarity | null = kind === 'rule' ? 'do' : kind === 'prohibition' ? 'dont' : null;
      candidates.push({ statement, kind, type, polarity, line, ...extra });
    },
  };
  const turns = parseTranscript(normalized);
  if (turns) extractChat(turns, out);
  else extractDocument(normalized, out);
  return { format: turns ? 'chat' : 'document', candidates };
}
