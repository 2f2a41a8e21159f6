/**
 * The fake Slack's HTTP plumbing (slack-fake.ts): Web API parameters from a form or JSON
 * body, OAuth client credentials from HTTP Basic, secrets kept out of recorded calls, and
 * Slack's JSON replies.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Params } from './slack-model.js';

/** Form or JSON: every value as the string Slack's methods read. */
export async function readParams(req: IncomingMessage): Promise<Params> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  const type = req.headers['content-type'] ?? '';
  const out: Params = {};
  if (type.startsWith('application/json')) {
    const o = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    for (const [k, v] of Object.entries(o))
      if (v !== null && v !== undefined)
        out[k] = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  } else {
    for (const [k, v] of new URLSearchParams(raw)) out[k] = v;
  }
  return out;
}

export function splitBasic(b64: string): { id: string; secret: string } | null {
  const s = Buffer.from(b64, 'base64').toString('utf8');
  const i = s.indexOf(':');
  return i < 0 ? null : { id: s.slice(0, i), secret: s.slice(i + 1) };
}

/** Tokens and client secrets never reach the recorded calls a test reads. */
export function scrub(p: Params): Params {
  const { token: _t, client_secret: _s, ...rest } = p;
  return rest;
}

export function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
}
