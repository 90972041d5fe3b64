// HTML from tagged templates: every value put into a template is escaped, unless it is itself
// built by `html` (or marked trusted with `raw`). Arrays are joined; null, undefined and false
// write nothing, so `${cond && html`...`}` reads naturally.

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const piece = (v: unknown): string => {
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(piece).join('');
  if (v === null || v === undefined || v === false) return '';
  return escapeHtml(String(v));
};

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += piece(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Text the hub wrote itself (never anything from a request or the database). */
export const raw = (text: string): Html => new Html(text);
