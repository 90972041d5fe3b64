import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parse } from 'yaml';
import { OPENAPI_JSON, OPENAPI_SOURCE, OPENAPI_YAML } from '../hub/openapi/spec.js';

// Part of the build (`npm run build`): puts the hub's OpenAPI description (hub/openapi/openapi.yaml,
// the one written by hand) in dist/, where the published package has it, beside the same document
// as JSON. The hub parses the JSON when it starts: a fraction of the time YAML takes.

mkdirSync(dirname(OPENAPI_YAML), { recursive: true });
copyFileSync(OPENAPI_SOURCE, OPENAPI_YAML);
writeFileSync(OPENAPI_JSON, JSON.stringify(parse(readFileSync(OPENAPI_SOURCE, 'utf8'))));
