// Markdown (or plain text) as blocks for ingest: headings, paragraphs and list items, each with
// the line it starts on; fenced and indented code, tables, HTML, comments and front matter are
// dropped. The document extractor (ingest-extract.ts) reads statements from these blocks.

import { inline } from './classify.js';

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
export function lineOf(sentence: string, block: Block): number {
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
export function parseBlocks(text: string): Block[] {
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
