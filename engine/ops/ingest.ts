import type { EngramBackend } from '../backend.js';
import type { EngramDoc, EngramType, Polarity } from '../model/engram-schema.js';
import { contentHash } from '../model/content-hash.js';
import { invalid } from '../errors.js';
import type { OpContext } from './context.js';
import { learnBatch, type BatchItem } from '../importers/batch-learn.js';

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

export type CandidateKind = 'rule' | 'prohibition' | 'decision' | 'definition' | 'procedure';

export const KIND_TYPES: Readonly<Record<CandidateKind, EngramType>> = {
  rule: 'behavioral',
  prohibition: 'behavioral',
  decision: 'architectural',
  definition: 'terminological',
  procedure: 'procedural',
};

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

// ------------------------------------------------------------------------------ vocabulary

/** Imperative verbs that open a rule in a document ("Use ...", "Keep ..."). */
const RULE_VERBS = new Set(
  (
    'use prefer run keep write add include format name follow make ensure put target base rebase squash sign open file document ' +
    'update reference test lint commit label link describe mention request wait split limit pin declare prefix wrap mark tag bump ' +
    'handle validate return throw place store cover remove delete call set pass give leave treat stick switch start create ' +
    'require check avoid build review sort list log record respect'
  ).split(' '),
);

/** Imperative verbs that open a procedure step (RULE_VERBS plus more). */
const STEP_VERBS = new Set([
  ...RULE_VERBS,
  ...(
    'fork clone install download upload copy move rename edit open close go navigate click select choose pick type enter ' +
    'restart stop deploy release publish push pull fetch merge checkout apply configure generate execute verify confirm ' +
    'submit send post announce notify draft prepare repeat attach provide fill read wait run bump tag create build update ' +
    'export import drop migrate seed init initialize enable disable replace change fix'
  ).split(' '),
]);

const NOT_RULES = /^(?:see|join|visit|read|thank|feel|click|enjoy|let|contact|email|star|watch|check out|have fun|happy|welcome|refer)\b/i;
const HEDGE = /\b(?:maybe|perhaps|probably|possibly|i think|i guess|i believe|i'm not sure|not sure|might want|could try|at some point|some day|someday|for now)\b/i;
const CHIT_CHAT = /^(?:thanks?(?: you)?(?: so much| a lot)?|ty|thx|ok(?:ay)?|k|great|cool|nice|perfect|awesome|sounds good|looks good|lgtm|hi|hello|hey|sure|yes|yep|yeah|no|nope|no problem|np|got it|done|good|right|exactly|agreed|fine)\b[\s!.,:)-]*(?:(?:thanks?|looks good|great|lgtm)[\s!.,]*)?$/i;
const QUESTION_START = /^(?:(?:can|could|would|will|shall|should|may|do|does|did|is|are|was|were|have|has)\s+(?:you|we|i|it|this|that|they|there)\b|(?:what|why|how|where|when|who|whom|which|whose)(?:'s|'re|\s+(?:is|are|was|were|do|does|did|can|could|would|should|will|has|have|about|if|else|exactly)\b))/i;
const NOT_A_SUBJECT = /^(?:i|it|this|that|these|those|there|which|what|who|he|she|they|doing|using|having|here|so|then|also|and|but|or)\b/i;
const DONT_WORRY = /^(?:don'?t|do not|never)\s+(?:worry|bother|mind)\b|^never\s?mind\b/i;

const PROHIBITION_START = /^(?:never|do not|don'?t|must not|mustn'?t|should not|shouldn'?t|avoid|refrain from|please don'?t|please do not|stop\s+\w+ing\b|no longer)\b/i;
const RULE_START = /^(?:always|make sure|ensure|be sure to|remember to|prefer|only)\b/i;
const MODAL = String.raw`(?:must|should|shall|needs? to|ha(?:s|ve) to|(?:is|are) required to|may only|can only)`;
// "may not" and "cannot" usually state a possibility ("X may not run on Node 18"): a prohibition
// only in the passive ("cannot be") or said of people (PERSON_NEG).
const NEG_MODAL = String.raw`(?:must not|mustn'?t|must never|should not|shouldn'?t|should never|shall not|need not|are not allowed to|is not allowed to|(?:cannot|can'?t|can not|may not) be)`;
const PERSON_NEG = /^(?:you|we|contributors?|users?|maintainers?|developers?|agents?|nobody|no one)\s+(?:may not|cannot|can'?t|can not)\s+\w/i;
const SUBJECT = String.raw`((?:[\w\`"'“”./@#()+-]+\s+){0,7}?[\w\`"'“”./@#()+-]+)`;
const SUBJECT_PROHIBITION = new RegExp(String.raw`^${SUBJECT}\s+${NEG_MODAL}\s+\w`, 'i');
const SUBJECT_RULE = new RegExp(String.raw`^${SUBJECT}\s+${MODAL}\s+(?!not\b|never\b)\w`, 'i');
const PASSIVE_PROHIBITION = /\b(?:is|are)\s+(?:not allowed|not permitted|forbidden|prohibited|not accepted|banned)\b/i;
/** "Type hints: required on all functions" (a labelled bullet). */
const LABELLED = /^[\w\`/. -]{1,40}:\s*(?:(required|mandatory)|(forbidden|prohibited|not allowed|banned|disallowed))\b/i;
const PASSIVE_RULE = /\b(?:is|are)\s+(?:required|mandatory)\b/i;
const WE_RULE = /^(?:we|you)\s+(?:always\s+\w+|use|prefer|follow|require|squash|rebase|sign|pin|format|lint)\b/i;
const WE_PROHIBITION = /^(?:we|you)\s+(?:never|don'?t|do not)\s+\w/i;
const NO_NOUN = /^no\s+(?!(?:one|problem|worries|idea|way|thanks|need|matter|,))[\w`-]+(?:\s+[\w`-]+){0,3}\s+(?:to|on|in|into|without|before|after|for|outside|from|unless|except)\b/i;
const CORRECTION = /^(?:use|prefer|switch to|stick (?:with|to)|go with)\b.*\b(?:instead|not|rather than|over)\b/i;
const DECISION = /^(?:(?:in|after|for|since|at)\b[^,]{0,80},\s*)?(?:we|the team|the maintainers|maintainers|i)(?:'ve|'d|\s+have|\s+had)?\s+(?:all\s+|finally\s+|eventually\s+)?(?:decided|chose|chosen|opted|settled on|went with|agreed (?:to|that|on)|picked|standardi[sz]ed on|switched to|migrated to|moved to)\b/i;
const DECISION_LABEL = /^(?:decision|decided|we decided)\s*[:—–-]\s*(.{8,})$/i;
const DEFINITION = /^(?:(?:a|an|the)\s+)?(["“`*]?[A-Za-z][\w`"“”'*./ -]{0,50}?["”`*]?)\s+(?:here\s+|in this (?:project|repo|repository|codebase|document)\s+)?(?:means|refers to|is defined as|stands for|is short for|is an? (?:abbreviation|acronym) (?:for|of)|denotes)\s+\S/i;
const BY_WE_MEAN = /^by\s+(.{1,50}?),?\s+we\s+mean\s+(.+)$/i;
const GLOSSARY_ENTRY = /^(?:\*\*([^*]{1,50})\*\*|`([^`]{1,50})`|__([^_]{1,50})__|([A-Z][\w .'-]{0,40}?))\s*(?::|—|–|\s-\s)\s*(.{3,})$/;
const NOT_TERMS = /^(?:note|warning|tip|important|example|caution|info|tl;?dr|update|edit|status|todo|nb|ps|see also|hint)$/i;

const GLOSSARY_HEADING = /\b(?:glossary|terminology|terms|definitions|vocabulary|concepts|jargon|nomenclature)\b/i;
const PROCEDURE_HEADING = /\b(?:how to|steps|setup|set up|setting up|install(?:ing|ation)?|getting started|quick ?start|releas(?:e|ing)|publish(?:ing)?|deploy(?:ing|ment)?|workflow|process|procedure|running|build(?:ing)?|bootstrap(?:ping)?|upgrad(?:e|ing)|migrat(?:e|ing|ion))\b/i;
const DECISION_HEADING = /\b(?:decisions?|adr|architecture decision)\b/i;

/** Human speakers vs. the machine in a transcript. */
const MACHINE = /^(?:assistant|ai|bot|agent|claude|chatgpt|gpt(?:-?\d.*)?|copilot|model|system|cursor|gemini|llm|tool)$/i;
const KNOWN_ROLES = /^(?:user|human|me|you|developer|dev|assistant|ai|bot|agent|claude|chatgpt|gpt(?:-?\d.*)?|copilot|model|system|cursor|gemini|llm|tool)$/i;
const SPEAKER_LINE = /^\s*(?:\[[^\]\n]{1,40}\]\s*|\(?\d{1,2}:\d{2}(?::\d{2})?\s*(?:[AaPp][Mm])?\)?\s*[-–]?\s*)?(?:\*\*|__)?(?:>\s*)?([A-Za-z][\w .'-]{0,30}?)(?:\*\*|__)?\s*:(?:\*\*|__)?\s+(.*)$/;

// --------------------------------------------------------------------------- text helpers

/** Markdown inline markup off (links, emphasis, HTML), code spans kept. */
function inline(text: string): string {
  return text
    .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]+)\]\[[^\]]*\]/g, '$1')
    .replace(/<\/?[A-Za-z][^>]*>/g, '')
    .replace(/(\*\*|__)(?=\S)(.+?)(?<=\S)\1/g, '$2')
    .replace(/(^|[\s(])\*(?=\S)([^*]+?)(?<=\S)\*(?=$|[\s).,;:!?])/g, '$1$2')
    .replace(/(^|[\s(])_(?=\S)([^_]+?)(?<=\S)_(?=$|[\s).,;:!?])/g, '$1$2')
    .replace(/\s+/g, ' ')
    .trim();
}

const ABBREVIATIONS = /\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|esp|resp|viz|ca|no|mr|mrs|ms|dr|st|jr|sr|fig|ver|v)\.$/i;

/** Sentences of a paragraph; code spans and abbreviations do not end one. */
export function sentences(text: string, loose = false): string[] {
  const out: string[] = [];
  let current = '';
  let inCode = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    current += c;
    if (c === '`') inCode = !inCode;
    if (inCode) continue;
    if ((c === '.' || c === '!' || c === '?') && /\s/.test(text[i + 1] ?? ' ')) {
      // Keep "?!", "..." and closing quotes or brackets with the sentence.
      while (i + 1 < text.length && /[.!?"'”’)\]]/.test(text[i + 1]!)) current += text[++i];
      const next = text.slice(i + 1).trimStart();
      if (c === '.' && ABBREVIATIONS.test(current.trimEnd())) continue;
      if (next !== '' && !loose && !/^[A-Z`"“'(\[*_0-9]/.test(next)) continue;
      out.push(current.trim());
      current = '';
    }
  }
  if (current.trim()) out.push(current.trim());
  return out;
}

function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/^[\d.)\s]+/, '')
    .replace(/[`*_"'’]/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
}

function capitalize(s: string): string {
  return /^[a-z]/.test(s) && /^[a-z']+\b/.test(s) && isCapitalizable(s) ? s[0]!.toUpperCase() + s.slice(1) : s;
}

const CAPITALIZABLE = new Set([...STEP_VERBS, 'always', 'never', "don't", 'dont', 'do', 'we', 'you', 'avoid', 'please', 'stop', 'remember', 'ensure', 'only', 'no', 'by', 'every', 'all', 'each', 'any', 'our', 'your', 'the', 'a', 'an', 'in', 'after', 'for', 'if', 'when', 'before', 'once', 'unless', 'decision']);
function isCapitalizable(s: string): boolean {
  return CAPITALIZABLE.has(s.split(/\s/)[0]!.toLowerCase());
}

/** Ends with one full stop (keeps "!" and a closing code span or quote). */
function finish(s: string): string {
  const t = s.trim().replace(/[\s,;:–—-]+$/, '');
  return /[.!]$/.test(t) ? t : `${t}.`;
}

function wordCount(s: string): number {
  return s.split(/\s+/).filter(Boolean).length;
}

// ------------------------------------------------------------------------- classification

interface Classified {
  kind: CandidateKind;
  statement: string;
}

interface Setting {
  mode: 'document' | 'chat';
  glossary: boolean;
  decisions: boolean;
  /** A bullet item (a bare imperative is then a rule even if short). */
  bullet?: boolean;
}

const CHAT_LEAD = [
  /^(?:no|nope|nah|ok(?:ay)?|yes|yeah|yep|right|hmm+|oh|ah|well|so|sorry|hey|hi)\s*[,.!:;-]+\s*/i,
  /^(?:actually|also|and|but|btw|fyi|important|again|plus|oh and|one more thing|ps)\b\s*[,:!.-]*\s*/i,
  /^(?:please|pls|plz)\b\s*[,:]?\s*/i,
];
const DURABLE_LEAD = /^(?:from now on|going forward|in the future|moving forward|for future reference|as a rule|in general|generally|in this (?:repo|repository|project|codebase)|for this (?:repo|repository|project)|remember(?: that)?|reminder|keep in mind(?: that)?|note(?: that)?|for the record|rule of thumb)\b\s*[,:]?\s*/i;

function stripLead(s: string, setting: Setting): { text: string; durable: boolean } {
  let text = s;
  let durable = false;
  for (let changed = true; changed; ) {
    changed = false;
    for (const re of setting.mode === 'chat' ? [...CHAT_LEAD, DURABLE_LEAD] : [/^(?:please)\b\s*[,:]?\s*/i, /^(?:note(?: that)?|remember(?: that)?|important)\s*[,:]\s*/i]) {
      const m = re.exec(text);
      if (m && m[0].length > 0 && m[0].length < text.length) {
        if (re === DURABLE_LEAD) durable = true;
        text = text.slice(m[0].length);
        changed = true;
      }
    }
  }
  return { text, durable };
}

/** What a sentence is, if its wording says so; null for everything else. */
function classify(raw: string, setting: Setting): Classified | null {
  let s = inline(raw).replace(/^[>\s]+/, '');
  if (s.length < 8 || s.length > 600) return null;
  if (/\?\s*["')\]]*$/.test(s)) return null;
  if (CHIT_CHAT.test(s)) return null;
  const lead = stripLead(s, setting);
  s = lead.text;
  const durable = lead.durable;
  if (setting.mode === 'chat') s = s.replace(/(?:[,\s]+(?:please|pls|thanks|thank you|ty|thx|ok\??|okay\??))+[.!]*$/i, '');
  if (wordCount(s) < 3 || CHIT_CHAT.test(s)) return null;
  if (QUESTION_START.test(s) && !/^(?:do not|don'?t)\b/i.test(s)) return null;
  if (HEDGE.test(s)) return null;

  // Decisions and definitions read the same in documents and chats.
  const label = DECISION_LABEL.exec(s);
  if (label) return { kind: 'decision', statement: finish(capitalize(label[1]!.trim())) };
  if (DECISION.test(s)) return { kind: 'decision', statement: finish(capitalize(s)) };
  if (setting.decisions && /^we\s+(?:will|'ll|shall|use|are going to)\b/i.test(s)) return { kind: 'decision', statement: finish(capitalize(s)) };
  const by = BY_WE_MEAN.exec(s);
  if (by) {
    const term = by[1]!.trim();
    return { kind: 'definition', statement: finish(`${/^["“`*]/.test(term) ? term : `"${term}"`} means ${by[2]!.trim()}`) };
  }
  const def = DEFINITION.exec(s);
  if (def && wordCount(def[1]!) <= 6 && !NOT_A_SUBJECT.test(def[1]!.replace(/^["“`*]/, ''))) return { kind: 'definition', statement: finish(capitalize(s)) };
  if (setting.glossary) {
    const g = GLOSSARY_ENTRY.exec(s);
    const term = g ? (g[1] ?? g[2] ?? g[3] ?? g[4])!.trim() : '';
    if (g && !NOT_TERMS.test(term) && wordCount(term) <= 5) return { kind: 'definition', statement: finish(`${term}: ${g[5]!.trim()}`) };
  }

  const rule = ruleKind(s, setting, durable);
  if (rule) return { kind: rule, statement: finish(capitalize(tidyRule(s, setting))) };

  // "If you change a public API, update the changelog.": the main clause decides.
  const cond = /^(?:if|when|whenever|before|after|once|unless|while|for|in|on)\b[^,]{3,120},\s*(.+)$/i.exec(s);
  if (cond) {
    const main = ruleKind(cond[1]!, setting, durable);
    if (main) return { kind: main, statement: finish(capitalize(s)) };
  }
  // "All code is formatted with Prettier; run `pnpm format` before committing.": any clause.
  if (s.includes('; ')) {
    for (const clause of s.split(/;\s+/).slice(1)) {
      const k = ruleKind(clause, setting, durable);
      if (k) return { kind: k, statement: finish(capitalize(s)) };
    }
  }
  return null;
}

/** "we need to talk", "you should check out", "the tests should pass now": a modal, but no rule. */
function notARuleAfterModal(rest: string): boolean {
  const m = new RegExp(String.raw`^\s+${MODAL}\s+(.*)$`, 'i').exec(rest);
  if (!m) return false;
  const tail = m[1]!;
  if (NOT_RULES.test(tail)) return true;
  if (/^(?:talk|discuss|figure|think|decide|look into|find out|investigate|chat|sync|meet|catch up)\b/i.test(tail)) return true;
  if (/^(?:be\s+)?(?:work(?:ing)?|pass(?:ing)?|fine|ok(?:ay)?|good|done|fixed|better|ready|here|there|back)(?:\s+(?:again|too|now))?\s*[.!]?$/i.test(tail)) return true;
  return /\bnow[.!]?$/i.test(tail);
}

function tidyRule(s: string, setting: Setting): string {
  if (setting.mode !== 'chat') return s;
  // "use pnpm instead" (of what the assistant just did): the rule is "Use pnpm".
  return s.replace(/,?\s+instead(?=[.!]?$)/i, '');
}

/** rule / prohibition / nothing, for one clause. */
function ruleKind(clause: string, setting: Setting, durable: boolean): 'rule' | 'prohibition' | null {
  const s = clause.trim();
  if (DONT_WORRY.test(s)) return null;
  if (wordCount(s) < 3) return null;
  if (PROHIBITION_START.test(s)) return 'prohibition';
  if (WE_PROHIBITION.test(s) || PERSON_NEG.test(s)) return 'prohibition';
  if (NO_NOUN.test(s)) return 'prohibition';
  const neg = SUBJECT_PROHIBITION.exec(s);
  if (neg && !NOT_A_SUBJECT.test(neg[1]!)) return 'prohibition';
  if (PASSIVE_PROHIBITION.test(s) && !/^(?:if|when)\b/i.test(s)) return 'prohibition';
  const labelled = LABELLED.exec(s);
  if (labelled) return labelled[1] ? 'rule' : 'prohibition';
  if (RULE_START.test(s)) return 'rule';
  if (WE_RULE.test(s)) return 'rule';
  if (CORRECTION.test(s)) return 'rule';
  const pos = SUBJECT_RULE.exec(s);
  if (pos && !NOT_A_SUBJECT.test(pos[1]!) && !/\b(?:you can|feel free)\b/i.test(s) && !notARuleAfterModal(s.slice(pos[1]!.length))) return 'rule';
  if (PASSIVE_RULE.test(s) && !/^(?:if|when)\b/i.test(s) && wordCount(s) >= 4) return 'rule';
  // A bare imperative: a rule in a document; in a chat only after a durable marker.
  const first = s.split(/\s+/)[0]!.toLowerCase();
  if ((setting.mode === 'document' || durable) && RULE_VERBS.has(first) && !NOT_RULES.test(s) && !/\b(?:you can|feel free)\b/i.test(s)) {
    if (wordCount(s) >= (setting.bullet ? 3 : 4)) return 'rule';
  }
  return null;
}

// ---------------------------------------------------------------------------- document parse

interface Block {
  kind: 'heading' | 'para' | 'item';
  text: string;
  line: number;
  level?: number;
  ordered?: boolean;
  indent?: number;
  /** A paragraph's source lines, to tell which line a sentence starts on. */
  parts?: Array<{ text: string; line: number }>;
}

/** The line a sentence of a paragraph starts on. */
function lineOf(sentence: string, block: Block): number {
  if (!block.parts || block.parts.length < 2) return block.line;
  const probe = sentence.slice(0, 24);
  let joined = '';
  const starts: number[] = [];
  for (const part of block.parts) {
    starts.push(joined.length);
    joined += inline(part.text) + ' ';
  }
  const at = joined.indexOf(probe);
  if (at < 0) return block.line;
  let k = 0;
  while (k + 1 < starts.length && starts[k + 1]! <= at) k++;
  return block.parts[k]!.line;
}

const LIST_ITEM = /^(\s*)([-*+•]|\d{1,3}[.)])\s+(.*)$/;
const FENCE = /^\s{0,3}(`{3,}|~{3,})/;

/** Markdown (or plain text) as headings, paragraphs and list items; code, tables and HTML dropped. */
function parseBlocks(text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  let i = 0;
  // Front matter.
  if (/^---\s*$/.test(lines[0] ?? '')) {
    const end = lines.findIndex((l, k) => k > 0 && /^(?:---|\.\.\.)\s*$/.test(l));
    if (end > 0) i = end + 1;
  }
  let fence: string | null = null;
  let inComment = false;
  let para: { text: string[]; line: number; parts: Array<{ text: string; line: number }> } | null = null;
  let item: Block | null = null;
  let prevBlank = true;
  const flush = (): void => {
    if (para) blocks.push({ kind: 'para', text: para.text.join(' '), line: para.line, parts: para.parts });
    if (item) blocks.push(item);
    para = null;
    item = null;
  };
  for (; i < lines.length; i++) {
    const raw = lines[i]!;
    const line = raw.replace(/\t/g, '    ');
    if (fence) {
      if (line.trim().startsWith(fence)) fence = null;
      continue;
    }
    const f = FENCE.exec(line);
    if (f) {
      flush();
      fence = f[1]!.slice(0, 3);
      continue;
    }
    if (inComment) {
      if (line.includes('-->')) inComment = false;
      continue;
    }
    if (/^\s*<!--/.test(line)) {
      flush();
      if (!line.includes('-->')) inComment = true;
      continue;
    }
    if (line.trim() === '') {
      flush();
      prevBlank = true;
      continue;
    }
    // Indented code: after a blank line, outside a list.
    if (/^ {4,}\S/.test(line) && prevBlank && !item && !(blocks.at(-1)?.kind === 'item')) {
      while (i + 1 < lines.length && (lines[i + 1]!.trim() === '' || /^ {4,}/.test(lines[i + 1]!.replace(/\t/g, '    ')))) i++;
      continue;
    }
    prevBlank = false;
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      blocks.push({ kind: 'heading', text: inline(heading[2]!), line: i + 1, level: heading[1]!.length });
      continue;
    }
    const next = lines[i + 1] ?? '';
    if (!item && !para && /^\s{0,3}(?:=+|-+)\s*$/.test(next) && !LIST_ITEM.test(line) && !/^\s*[|<]/.test(line)) {
      blocks.push({ kind: 'heading', text: inline(line), line: i + 1, level: next.trim().startsWith('=') ? 1 : 2 });
      i++;
      continue;
    }
    if (/^\s{0,3}(?:[-*_]\s*){3,}$/.test(line)) {
      flush();
      continue;
    }
    if (/^\s*\|/.test(line) || /^\s*<\/?[A-Za-z]/.test(line)) {
      flush();
      continue;
    }
    const li = LIST_ITEM.exec(line);
    if (li) {
      flush();
      item = { kind: 'item', text: li[3]!.trim(), line: i + 1, ordered: /\d/.test(li[2]!), indent: li[1]!.length };
      continue;
    }
    const body = line.trim().replace(/^>\s?/, '');
    if (item) {
      item.text += ' ' + body;
      continue;
    }
    if (para) {
      para.text.push(body);
      para.parts.push({ text: body, line: i + 1 });
    } else para = { text: [body], line: i + 1, parts: [{ text: body, line: i + 1 }] };
  }
  flush();
  return blocks;
}

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
      const introSentence = intro ? sentences(inline(intro)).at(-1) ?? '' : '';
      const introCue = /:\s*$/.test(introSentence) && /\b(?:to\s+\w+|steps?|follow(?:ing)?|how to|process|procedure)\b/i.test(introSentence);
      const imperative = steps.filter((it) => isStep(it.text)).length;
      const ordered = steps.every((it) => it.ordered);
      const isProcedure =
        steps.length >= 2 && imperative / steps.length >= 0.6 && !setting.glossary && (ordered || introCue || PROCEDURE_HEADING.test(current()));
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

// -------------------------------------------------------------------------------- chat parse

interface Turn {
  speaker: string;
  human: boolean;
  text: string;
  line: number;
}

/** The turns of a transcript, or null when the text is not one. */
export function parseTranscript(text: string): Turn[] | null {
  const lines = text.split('\n');
  const nonBlank = lines.filter((l) => l.trim() !== '').length;
  const turns: Turn[] = [];
  let speakerLines = 0;
  let known = 0;
  for (const [i, line] of lines.entries()) {
    const m = SPEAKER_LINE.exec(line);
    const name = m?.[1]?.trim();
    if (m && name && wordCount(name) <= 3 && !NOT_TERMS.test(name) && !/^(?:https?|note|step \d+)$/i.test(name)) {
      speakerLines += 1;
      if (KNOWN_ROLES.test(name)) known += 1;
      turns.push({ speaker: name, human: !MACHINE.test(name), text: m[2]!, line: i + 1 });
      continue;
    }
    if (turns.length && line.trim() !== '') turns.at(-1)!.text += '\n' + line.trim();
  }
  const speakers = new Set(turns.map((t) => t.speaker.toLowerCase()));
  const isChat = speakerLines >= 2 && speakers.size >= 2 && (known >= 2 || speakerLines / Math.max(1, nonBlank) >= 0.5);
  return isChat ? turns : null;
}

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

export interface IngestInput {
  content: string;
  /** Where the text came from (recorded on every engram, with the section). */
  source?: string;
  scope?: string;
  /** Domain of every engram; a statement under a heading gets `<domain>.<section>`. */
  domain?: string;
  extract_only?: boolean;
}

export interface IngestItemResult extends IngestCandidate {
  /** created, duplicate (already known: reference count bumped), conflict or error. */
  action?: 'created' | 'duplicate' | 'conflict' | 'error';
  id?: string;
  scope?: string;
  domain?: string;
  reason?: string;
  warnings?: string[];
}

export interface IngestResult {
  format: 'document' | 'chat';
  extract_only: boolean;
  count: number;
  created: number;
  duplicate: number;
  conflict: number;
  error: number;
  candidates: IngestItemResult[];
  warnings: string[];
}

/** The domain of a candidate: the given domain, refined by its section. */
function domainOf(base: string | undefined, section: string | undefined): string | undefined {
  const parts = [base, section].filter((p): p is string => !!p);
  return parts.length ? parts.join('.') : undefined;
}

/** The candidates of `input.content` with their domains, as `svc ingest --extract-only` shows them; saves nothing. */
export function extractForIngest(input: IngestInput): IngestResult {
  const content = input.content.trim();
  if (content === '') throw invalid('the content is empty: pass the text to extract from');
  if (input.domain !== undefined && /\s/.test(input.domain)) throw invalid(`--domain must be a dotted path without whitespace (got "${input.domain}")`);
  const { format, candidates } = extractCandidates(content);
  return {
    format,
    extract_only: input.extract_only === true,
    count: candidates.length,
    created: 0,
    duplicate: 0,
    conflict: 0,
    error: 0,
    candidates: candidates.map((c) => ({ ...c, ...(domainOf(input.domain, c.section) ? { domain: domainOf(input.domain, c.section) } : {}) })),
    warnings: [],
  };
}

/**
 * Extracts candidates from `input.content` and (unless extract_only) learns them, all in one
 * write transaction, through learn(): same-scope duplicates bump the reference count as a second
 * `svc learn` would; a statement retired at the scope, or stored there with another type, is a
 * conflict and is left alone.
 */
export async function ingest(backend: EngramBackend, input: IngestInput, ctx: OpContext): Promise<IngestResult> {
  const result = extractForIngest(input);
  if (input.extract_only || result.count === 0) return result;

  const source = input.source ?? 'ingest';
  const items: BatchItem[] = result.candidates.map((c) => ({
    input: {
      statement: c.statement,
      type: c.type,
      scope: input.scope,
      domain: c.domain,
      tags: ['ingest', c.kind],
      source: c.context ? `${source} § ${c.context}` : c.speaker ? `${source} (${c.speaker})` : source,
    },
    polarity: c.polarity,
    details: { via: 'ingest', kind: c.kind, line: c.line },
  }));
  const outcomes = await learnBatch(backend, items, ctx, { onDuplicate: 'reference' });
  outcomes.forEach((o, i) => {
    const r = result.candidates[i]!;
    let e: EngramDoc | undefined;
    switch (o.action) {
      case 'created':
        e = o.engram;
        r.action = 'created';
        result.created += 1;
        break;
      case 'duplicate':
        e = o.existing;
        r.action = 'duplicate';
        r.reason = `already known as ${o.existing.id}; reference count now ${o.existing.reference_count ?? 1}`;
        result.duplicate += 1;
        break;
      case 'conflict':
        e = o.existing;
        r.action = 'conflict';
        r.reason = o.reason;
        result.conflict += 1;
        break;
      case 'error':
        r.action = 'error';
        r.reason = o.reason;
        result.error += 1;
        break;
    }
    if (e) {
      r.id = e.id;
      r.scope = e.scope;
    }
    if (o.action !== 'error' && o.warnings.length) {
      r.warnings = o.warnings;
      result.warnings.push(...o.warnings.map((w) => `line ${r.line}: ${w}`));
    }
  });
  return result;
}
