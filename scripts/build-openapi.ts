import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { packageRoot } from '../engine/package-info.js';
import { OPENAPI_JSON, OPENAPI_YAML } from '../hub/openapi/spec.js';

// Part of the build (`npm run build`): puts the hub's OpenAPI description (hub/openapi/openapi.yaml,
// the one written by hand) in dist/, where the published package has it, beside the same document
// as JSON. The hub parses the JSON when it starts: a fraction of the time YAML takes.

const source = join(packageRoot(), 'hub', 'openapi', 'openapi.yaml');
mkdirSync(dirname(OPENAPI_YAML), { recursive: true });
copyFileSync(source, OPENAPI_YAML);
writeFileSync(OPENAPI_JSON, JSON.stringify(parse(readFileSync(source, 'utf8'))));
