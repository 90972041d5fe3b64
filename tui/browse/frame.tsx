import { Text } from 'ink';
import type { FrameLine } from './frame-lines.js';
import type { KeyHelp } from './keymap.js';
import { fit } from './text.js';

// The frame's lines in Ink. Every line is cut (and padded) to the width before it is
// rendered: the layout never relies on Ink to wrap.

const BLANK: FrameLine = { text: '' };

/** Exactly `count` lines of `width` columns: `lines`, cut or padded with blank lines. */
export function Lines({ lines, width, count = lines.length }: { lines: FrameLine[]; width: number; count?: number }) {
  return (
    <>
      {Array.from({ length: count }, (_, i) => {
        const l = lines[i] ?? BLANK;
        return (
          <Text
            key={i}
            wrap="truncate-end"
            inverse={l.style === 'title' || l.style === 'selected'}
            bold={l.style === 'bold' || l.style === 'title' || l.style === 'prompt'}
            dimColor={l.style === 'dim'}
            color={l.style === 'error' ? 'red' : l.style === 'prompt' ? 'yellow' : l.style === 'accent' ? 'cyan' : undefined}
          >
            {fit(l.text, width)}
          </Text>
        );
      })}
    </>
  );
}

/** The help line: keys bold, what they do dimmed. */
export function HelpLine({ items }: { items: KeyHelp[] }) {
  return (
    <Text wrap="truncate-end">
      {items.map((k, j) => (
        <Text key={j}>
          {j ? ' ' : ''}
          <Text bold color="cyan">
            {k.keys}
          </Text>
          <Text dimColor> {k.label}</Text>
        </Text>
      ))}
    </Text>
  );
}
