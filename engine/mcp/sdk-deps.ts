// What svc's MCP server runs on from outside the project: the MCP SDK's parts it uses and zod
// (the tools' argument schemas). svc's own modules import these from here and not from the
// packages, so that the CLI can load them all from one code-cached bundle (scripts/bundle-cli.ts,
// dist/bin/mcp-deps.cjs) rather than as some two hundred files read and compiled by every
// `svc mcp`. In the hub and the tests, this module is what it reads as: the packages' own files.
// Types may still be imported from the packages directly: they are erased.

export { Server } from '@modelcontextprotocol/sdk/server/index.js';
export { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
export { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
export { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
export { z } from 'zod/v4';
