/**
 * A strict OpenAPI validating proxy in front of a node: every request through it is judged
 * against the document (express-openapi-validator: OpenAPI 3.1 with Ajv's 2020-12 dialect,
 * security, unknown query parameters refused), sent on to the node byte for byte whatever
 * the verdict (signatures hold), and the node's answer is judged too: its status must be
 * documented, its JSON body must match that status's schema, and the headers the document
 * requires must be there. Verdicts are kept per exchange for the test to assert on.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';

export interface Exchange {
  method: string;
  url: string;
  /** The request's own X-Request-Id, so a test finds the exchange of its call. */
  requestId: string | null;
  /** The operation the document matched, if any. */
  operationId: string | null;
  status: number;
  requestViolations: string[];
  responseViolations: string[];
}

interface ResponseDoc {
  headers?: Record<string, { required?: boolean; schema?: { type?: string; pattern?: string; minimum?: number } }>;
  content?: Record<string, unknown>;
}
interface OperationDoc {
  operationId?: string;
  responses?: Record<string, ResponseDoc>;
}

export interface ValidatingProxy {
  url: string;
  exchanges: Exchange[];
  close(): Promise<void>;
}

/** Headers that belong to one hop (RFC 9110 §7.6.1) or that fetch recomputes. */
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host', 'content-encoding']);
/** The order in which the validator's middlewares run here: the response check is armed before the request is judged. */
const ORDER = [
  'pathParamsMiddleware',
  'metadataMiddleware',
  'responseMiddleware',
  'securityMiddleware',
  'requestMiddleware',
];

const describe = (err: unknown): string[] => {
  const e = err as { status?: number; message?: string; errors?: Array<{ path?: string; message?: string }> };
  const items = (e.errors ?? []).map((i) => `${i.path ?? ''} ${i.message ?? ''}`.trim());
  return items.length > 0 ? items.map((i) => `${e.status ?? ''} ${i}`.trim()) : [`${e.status ?? ''} ${e.message}`];
};

export async function startValidatingProxy(upstream: string, spec: object): Promise<ValidatingProxy> {
  const exchanges: Exchange[] = [];
  const exchangeOf = (res: Response) => res.locals.exchange as Exchange;
  const middlewares = OpenApiValidator.middleware({
    apiSpec: spec as Parameters<typeof OpenApiValidator.middleware>[0]['apiSpec'],
    validateApiSpec: true,
    validateRequests: { allowUnknownQueryParameters: false, allErrors: true },
    validateResponses: {
      allErrors: true,
      onError: (err, _body, req) => exchangeOf(req.res!).responseViolations.push(...describe(err)),
    },
    validateSecurity: true,
    validateFormats: true,
  });
  const byName = new Map(middlewares.map((m) => [m.name, m]));
  if (ORDER.some((name) => !byName.has(name))) {
    throw new Error(`express-openapi-validator's middlewares changed: ${[...byName.keys()].join(', ')}`);
  }

  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'extended');
  app.use(express.raw({ type: () => true, limit: '64mb' }));
  app.use((req: Request, res: Response, next: NextFunction) => {
    const raw: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    res.locals.raw = raw;
    const exchange: Exchange = {
      method: req.method,
      url: req.originalUrl,
      requestId: typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : null,
      operationId: null,
      status: 0,
      requestViolations: [],
      responseViolations: [],
    };
    res.locals.exchange = exchange;
    exchanges.push(exchange);
    // The validator judges the parsed body; the node gets the bytes as sent.
    req.body = undefined;
    if (raw.length > 0 && /json/.test(req.headers['content-type'] ?? '')) {
      try {
        req.body = JSON.parse(raw.toString('utf8'));
      } catch {
        req.body = raw.toString('utf8');
      }
    }
    next();
  });
  for (const name of ORDER) app.use(byName.get(name)!);
  app.use((req: Request, res: Response, next: NextFunction) => {
    forward(req, res).catch(next);
  });
  app.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    const exchange = exchangeOf(res);
    if (exchange.status !== 0 || res.headersSent) return next(err);
    exchange.requestViolations.push(...describe(err));
    forward(req, res).catch(next);
  });

  async function forward(req: Request, res: Response): Promise<void> {
    const exchange = exchangeOf(res);
    const operation = (req as Request & { openapi?: { schema?: OperationDoc } }).openapi?.schema;
    exchange.operationId = operation?.operationId ?? null;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (!HOP.has(k) && v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    const raw = res.locals.raw as Buffer;
    const answer = await fetch(`${upstream}${req.originalUrl}`, {
      method: req.method,
      headers,
      body: raw.length > 0 ? raw : undefined,
      redirect: 'manual',
    });
    const body = Buffer.from(await answer.arrayBuffer());
    exchange.status = answer.status;
    res.status(answer.status);
    for (const [k, v] of answer.headers) if (!HOP.has(k)) res.setHeader(k, v);
    checkStatusAndHeaders(exchange, operation, answer);
    const type = answer.headers.get('content-type') ?? '';
    // JSON, not NDJSON (the export): a stream of documents is not one to validate.
    if (/[/+]json\b/.test(type) && body.length > 0) {
      // res.json runs the validator's response check (schema of this status) before sending.
      res.json(JSON.parse(body.toString('utf8')));
    } else {
      res.send(body);
    }
  }

  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}

/** What the validator checks only for JSON bodies, for every answer: a documented status, its media type, its headers. */
function checkStatusAndHeaders(exchange: Exchange, operation: OperationDoc | undefined, answer: globalThis.Response) {
  if (!operation) return;
  const documented = operation.responses?.[String(answer.status)];
  if (!documented) {
    exchange.responseViolations.push(`status ${answer.status} is not documented`);
    return;
  }
  const type = (answer.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (documented.content && !(type in documented.content)) {
    exchange.responseViolations.push(`content-type ${type} is not documented for ${answer.status}`);
  }
  for (const [name, header] of Object.entries(documented.headers ?? {})) {
    const value = answer.headers.get(name);
    if (value === null) {
      if (header.required) exchange.responseViolations.push(`header ${name} is missing`);
    } else if (!headerMatches(value, header.schema ?? {})) {
      exchange.responseViolations.push(`header ${name}: ${value} does not match ${JSON.stringify(header.schema)}`);
    }
  }
}

function headerMatches(value: string, schema: { type?: string; pattern?: string; minimum?: number }): boolean {
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) return false;
  if (schema.type === 'integer') {
    if (!/^-?\d+$/.test(value)) return false;
    if (schema.minimum !== undefined && Number(value) < schema.minimum) return false;
  }
  return true;
}
