// Ingest's sentence classifier: the wording patterns (vocabulary), the text helpers they work on
// and `classify`, which says whether one sentence is a rule, a prohibition, a decision or a
// definition. Shared by the document and chat extractors in ingest-extract.ts.

import type { EngramType } from '../../model/engram-types.js';

export type CandidateKind = 'rule' | 'prohibition' | 'decision' | 'definition' | 'procedure';

export const KIND_TYPES: Readonly<Record<CandidateKind, EngramType>> = {
  rule: 'behavioral',
  prohibition: 'behavioral',
  decision: 'architectural',
  definition: 'terminological',
  procedure: 'procedural',
};

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
export const STEP_VERBS = new Set([
  ...RULE_VERBS,
  ...(
    'fork clone install download upload copy move rename edit open close go navigate click select choose pick type enter ' +
    'restart stop deploy release publish push pull fetch merge checkout apply configure generate execute verify confirm ' +
    'submit send post announce notify draft prepare repeat attach provide fill read wait run bump tag create build update ' +
    'export import drop migrate seed init initialize enable disable replace change fix'
  ).split(' '),
]);

const NOT_RULES = /^(?:see|join|visit|read|thank|feel|click|enjoy|let|contact|email|star|watch|check out|have fun|happy|welcome|refer)\b/i;
const HEDGE =
  /\b(?:maybe|perhaps|probably|possibly|i think|i guess|i believe|i'm not sure|not sure|might want|could try|at some point|some day|someday|for now)\b/i;
const CHIT_CHAT =
  /^(?:thanks?(?: you)?(?: so much| a lot)?|ty|thx|ok(?:ay)?|k|great|cool|nice|perfect|awesome|sounds good|looks good|lgtm|hi|hello|hey|sure|yes|yep|yeah|no|nope|no problem|np|got it|done|good|right|exactly|agreed|fine)\b[\s!.,:)-]*(?:(?:thanks?|looks good|great|lgtm)[\s!.,]*)?$/i;
const QUESTION_START =
  /^(?:(?:can|could|would|will|shall|should|may|do|does|did|is|are|was|were|have|has)\s+(?:you|we|i|it|this|that|they|there)\b|(?:what|why|how|where|when|who|whom|which|whose)(?:'s|'re|\s+(?:is|are|was|were|do|does|did|can|could|would|should|will|has|have|about|if|else|exactly)\b))/i;
const NOT_A_SUBJECT = /^(?:i|it|this|that|these|those|there|which|what|who|he|she|they|doing|using|having|here|so|then|also|and|but|or)\b/i;
const DONT_WORRY = /^(?:don'?t|do not|never)\s+(?:worry|bother|mind)\b|^never\s?mind\b/i;

const PROHIBITION_START =
  /^(?:never|do not|don'?t|must not|mustn'?t|should not|shouldn'?t|avoid|refrain from|please don'?t|please do not|stop\s+\w+ing\b|no longer)\b/i;
const RULE_START = /^(?:always|make sure|ensure|be sure to|remember to|prefer|only)\b/i;
const MODAL = String.raw`(?:must|should|shall|needs? to|ha(?:s|ve) to|(?:is|are) required to|may only|can only)`;
// "may not" and "cannot" usually state a possibility ("X may not run on Node 18"): a prohibition
// only in the passive ("cannot be") or said of people (PERSON_NEG).
const NEG_MODAL = String.raw`(?:must not|mustn'?t|must never|should not|shouldn'?t|should never|shall not|need not|are not allowed to|is not allowed to|(?:cannot|can'?t|can not|may not) be)`;
const PERSON_NEG =
  /^(?:you|we|contributors?|users?|maintainers?|developers?|agents?|nobody|no one)\s+(?:may not|cannot|can'?t|can not)\s+\w/i;
// Curly quotes as escapes: String.raw keeps them as text and RegExp reads them (the CLI's bundle is ASCII: scripts/bundle-cli.ts).
const SUBJECT = String.raw`((?:[\w\`"'\u201C\u201D./@#()+-]+\s+){0,7}?[\w\`"'\u201C\u201D./@#()+-]+)`;
const SUBJECT_PROHIBITION = new RegExp(String.raw`^${SUBJECT}\s+${NEG_MODAL}\s+\w`, 'i');
const SUBJECT_RULE = new RegExp(String.raw`^${SUBJECT}\s+${MODAL}\s+(?!not\b|never\b)\w`, 'i');
const PASSIVE_PROHIBITION = /\b(?:is|are)\s+(?:not allowed|not permitted|forbidden|prohibited|not accepted|banned)\b/i;
/** "Type hints: required on all functions" (a labelled bullet). */
const LABELLED = /^[\w`/. -]{1,40}:\s*(?:(required|mandatory)|(forbidden|prohibited|not allowed|banned|disallowed))\b/i;
const PASSIVE_RULE = /\b(?:is|are)\s+(?:required|mandatory)\b/i;
const WE_RULE = /^(?:we|you)\s+(?:always\s+\w+|use|prefer|follow|require|squash|rebase|sign|pin|format|lint)\b/i;
const WE_PROHIBITION = /^(?:we|you)\s+(?:never|don'?t|do not)\s+\w/i;
const NO_NOUN =
  /^no\s+(?!(?:one|problem|worries|idea|way|thanks|need|matter|,))[\w`-]+(?:\s+[\w`-]+){0,3}\s+(?:to|on|in|into|without|before|after|for|outside|from|unless|except)\b/i;
const CORRECTION = /^(?:use|prefer|switch to|stick (?:with|to)|go with)\b.*\b(?:instead|not|rather than|over)\b/i;
const DECISION =
  /^(?:(?:in|after|for|since|at)\b[^,]{0,80},\s*)?(?:we|the team|the maintainers|maintainers|i)(?:'ve|'d|\s+have|\s+had)?\s+(?:all\s+|finally\s+|eventually\s+)?(?:decided|chose|chosen|opted|settled on|went with|agreed (?:to|that|on)|picked|standardi[sz]ed on|switched to|migrated to|moved to)\b/i;
const DECISION_LABEL = /^(?:decision|decided|we decided)\s*[:—–-]\s*(.{8,})$/i;
const DEFINITION =
  /^(?:(?:a|an|the)\s+)?(["“`*]?[A-Za-z][\w`"“”'*./ -]{0,50}?["”`*]?)\s+(?:here\s+|in this (?:project|repo|repository|codebase|document)\s+)?(?:means|refers to|is defined as|stands for|is short for|is an? (?:abbreviation|acronym) (?:for|of)|denotes)\s+\S/i;
const BY_WE_MEAN = /^by\s+(.{1,50}?),?\s+we\s+mean\s+(.+)$/i;
const GLOSSARY_ENTRY = /^(?:\*\*([^*]{1,50})\*\*|`([^`]{1,50})`|__([^_]{1,50})__|([A-Z][\w .'-]{0,40}?))\s*(?::|—|–|\s-\s)\s*(.{3,})$/;
export const NOT_TERMS = /^(?:note|warning|tip|important|example|caution|info|tl;?dr|update|edit|status|todo|nb|ps|see also|hint)$/i;

// --------------------------------------------------------------------------- text helpers

/** Markdown inline markup off (links, emphasis, HTML), code spans kept. */
export function inline(text: string): string {
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
      if (next !== '' && !loose && !/^[A-Z`"“'([*_0-9]/.test(next)) continue;
      out.push(current.trim());
      current = '';
    }
  }
  if (current.trim()) out.push(current.trim());
  return out;
}

export function slug(heading: string): string {
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

const CAPITALIZABLE = new Set([
  ...STEP_VERBS,
  'always',
  'never',
  "don't",
  'dont',
  'do',
  'we',
  'you',
  'avoid',
  'please',
  'stop',
  'remember',
  'ensure',
  'only',
  'no',
  'by',
  'every',
  'all',
  'each',
  'any',
  'our',
  'your',
  'the',
  'a',
  'an',
  'in',
  'after',
  'for',
  'if',
  'when',
  'before',
  'once',
  'unless',
  'decision',
]);
function isCapitalizable(s: string): boolean {
  return CAPITALIZABLE.has(s.split(/\s/)[0]!.toLowerCase());
}

/** Ends with one full stop (keeps "!" and a closing code span or quote). */
function finish(s: string): string {
  const t = s.trim().replace(/[\s,;:–—-]+$/, '');
  return /[.!]$/.test(t) ? t : `${t}.`;
}

export function wordCount(s: string): number {
  return s.split(/\s+/).filter(Boolean).length;
}

// ------------------------------------------------------------------------- classification

interface Classified {
  kind: CandidateKind;
  statement: string;
}

export interface Setting {
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
const DURABLE_LEAD =
  /^(?:from now on|going forward|in the future|moving forward|for future reference|as a rule|in general|generally|in this (?:repo|repository|project|codebase)|for this (?:repo|repository|project)|remember(?: that)?|reminder|keep in mind(?: that)?|note(?: that)?|for the record|rule of thumb)\b\s*[,:]?\s*/i;

function stripLead(s: string, setting: Setting): { text: string; durable: boolean } {
  let text = s;
  let durable = false;
  for (let changed = true; changed;) {
    changed = false;
    for (const re of setting.mode === 'chat'
      ? [...CHAT_LEAD, DURABLE_LEAD]
      : [/^(?:please)\b\s*[,:]?\s*/i, /^(?:note(?: that)?|remember(?: that)?|important)\s*[,:]\s*/i]) {
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
export function classify(raw: string, setting: Setting): Classified | null {
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
  if (setting.decisions && /^we\s+(?:will|'ll|shall|use|are going to)\b/i.test(s))
    return { kind: 'decision', statement: finish(capitalize(s)) };
  const by = BY_WE_MEAN.exec(s);
  if (by) {
    const term = by[1]!.trim();
    return { kind: 'definition', statement: finish(`${/^["“`*]/.test(term) ? term : `"${term}"`} means ${by[2]!.trim()}`) };
  }
  const def = DEFINITION.exec(s);
  if (def && wordCount(def[1]!) <= 6 && !NOT_A_SUBJECT.test(def[1]!.replace(/^["“`*]/, '')))
    return { kind: 'definition', statement: finish(capitalize(s)) };
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
  if (
    /^(?:be\s+)?(?:work(?:ing)?|pass(?:ing)?|fine|ok(?:ay)?|good|done|fixed|better|ready|here|there|back)(?:\s+(?:again|too|now))?\s*[.!]?$/i.test(
      tail,
    )
  )
    return true;
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
  if (pos && !NOT_A_SUBJECT.test(pos[1]!) && !/\b(?:you can|feel free)\b/i.test(s) && !notARuleAfterModal(s.slice(pos[1]!.length)))
    return 'rule';
  if (PASSIVE_RULE.test(s) && !/^(?:if|when)\b/i.test(s) && wordCount(s) >= 4) return 'rule';
  // A bare imperative: a rule in a document; in a chat only after a durable marker.
  const first = s.split(/\s+/)[0]!.toLowerCase();
  if ((setting.mode === 'document' || durable) && RULE_VERBS.has(first) && !NOT_RULES.test(s) && !/\b(?:you can|feel free)\b/i.test(s)) {
    if (wordCount(s) >= (setting.bullet ? 3 : 4)) return 'rule';
  }
  return null;
}
