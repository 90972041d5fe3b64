// Chat transcripts for ingest: tells a "user: ..." / "assistant: ..." transcript (or one with
// named speakers) from a document and splits it into turns, each marked human or machine. The
// chat extractor (ingest-extract.ts) reads only the human turns.

import { NOT_TERMS, wordCount } from './classify.js';

/** Human speakers vs. the machine in a transcript. */
const MACHINE = /^(?:assistant|ai|bot|agent|claude|chatgpt|gpt(?:-?\d.*)?|copilot|model|system|cursor|gemini|llm|tool)$/i;
const KNOWN_ROLES =
  /^(?:user|human|me|you|developer|dev|assistant|ai|bot|agent|claude|chatgpt|gpt(?:-?\d.*)?|copilot|model|system|cursor|gemini|llm|tool)$/i;
const SPEAKER_LINE =
  /^\s*(?:\[[^\]\n]{1,40}\]\s*|\(?\d{1,2}:\d{2}(?::\d{2})?\s*(?:[AaPp][Mm])?\)?\s*[-–]?\s*)?(?:\*\*|__)?(?:>\s*)?([A-Za-z][\w .'-]{0,30}?)(?:\*\*|__)?\s*:(?:\*\*|__)?\s+(.*)$/;

export interface Turn {
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
