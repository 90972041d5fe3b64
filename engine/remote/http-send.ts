import { readFileSync } from 'node:fs';
import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';

// One HTTP exchange with a deadline, on node:http(s). The hub is asked from commands and hooks
// that run on every prompt: the global fetch loads undici on first use, which cost a whole
// process more than node:http did (bench team: ~300 ms against ~45 ms on a loaded 2-core
// machine). Redirects are not followed: a hub address that redirects is a wrong address, and
// the caller says so.

export interface HttpAnswer {
  status: number;
  text: string;
  /** The Location header of a redirect. */
  location?: string;
}

/** Why no answer came: `timeout` after `timeoutMs`, else the socket's error (ECONNREFUSED, a TLS failure…). */
export class HttpSendError extends Error {
  override name = 'HttpSendError';
  constructor(
    readonly reason: 'timeout' | 'network',
    message: string,
  ) {
    super(message);
  }
}

export interface HttpSendOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** The whole exchange, connect to the last byte. */
  timeoutMs: number;
  /** Called once the request is written to the socket (the server has it; its answer may follow). */
  onSent?: () => void;
}

export async function httpSend(url: string, opts: HttpSendOptions): Promise<HttpAnswer> {
  const u = new URL(url);
  // TLS costs its import only for https addresses.
  const https = u.protocol === 'https:';
  const { request } = https ? await import('node:https') : await import('node:http');
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
  const ca = https ? await extraTrust() : undefined;
  const options: RequestOptions & { ca?: string[] } = { method: opts.method ?? 'GET', headers, ...(ca && { ca }) };
  return new Promise<HttpAnswer>((resolve, reject) => {
    let req: ClientRequest | undefined = undefined;
    const timer = setTimeout(() => {
      req?.destroy(new HttpSendError('timeout', `no answer within ${opts.timeoutMs / 1000} s`));
    }, opts.timeoutMs);
    const fail = (err: Error): void => {
      clearTimeout(timer);
      reject(err instanceof HttpSendError ? err : new HttpSendError('network', networkReason(err)));
    };
    req = request(u, options, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
        const location = res.headers.location;
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ...(location ? { location } : {}) });
      });
    });
    req.on('error', fail);
    if (opts.onSent) req.once('finish', opts.onSent);
    req.end(opts.body);
  });
}

/** The socket's reason in a line: OpenSSL's messages carry a file path and a hex code. */
function networkReason(err: Error): string {
  const ssl = /SSL routines:[^:]*:([^:]+)/.exec(err.message);
  return ssl ? `TLS failed: ${ssl[1]}` : err.message.split('\n')[0]!;
}

/**
 * The certificates an https request trusts when SVC_EXTRA_CA_CERTS names a PEM file: Node's own
 * roots, that file's, and NODE_EXTRA_CA_CERTS's if it is set too (an explicit list replaces the
 * default one). The hook shim moves NODE_EXTRA_CA_CERTS here for hooks: Node 20 reads that file
 * and builds its whole certificate store when a process starts, TLS or not (0.1 s with a system
 * bundle, on every prompt), where this reads it only for a request that needs it, once a process.
 */
let trusted: { files: string; ca: string[] } | undefined;

async function extraTrust(): Promise<string[] | undefined> {
  if (!process.env.SVC_EXTRA_CA_CERTS) return undefined;
  const named = (['SVC_EXTRA_CA_CERTS', 'NODE_EXTRA_CA_CERTS'] as const).flatMap((name) => {
    const file = process.env[name];
    return file ? [{ name, file }] : [];
  });
  const files = named.map((n) => n.file).join('\n');
  if (trusted?.files === files) return trusted.ca;
  const { rootCertificates } = await import('node:tls');
  const pems = named.map(({ name, file }) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new HttpSendError('network', `${name} names ${file}, which cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  });
  trusted = { files, ca: [...rootCertificates, ...pems] };
  return trusted.ca;
}
