import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

// One tool call through a real MCP client, as the stdio and HTTP suites read it: the error flag,
// the text, that text parsed as JSON when it is, and the structured content.

export interface Called {
  isError: boolean;
  text: string;
  data: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  structured: unknown;
}

export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Called> {
  const r = (await client.callTool({ name, arguments: args })) as {
    isError?: boolean;
    content: Array<{ text: string }>;
    structuredContent?: unknown;
  };
  const text = r.content[0]!.text;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  return { isError: r.isError === true, text, data, structured: r.structuredContent };
}
