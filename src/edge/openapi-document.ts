/**
 * What the OpenAPI document (INTERFACE §9.3) adds to each route's own schemas: the
 * errors the route answers (operation.ts) as responses with the §2 body, each status with
 * its codes; `X-Request-Id` on every response and `Retry-After` where the status carries
 * it; the request body's size limit; the tags; and no component nothing refers to.
 */
import { statusOf, TAGS, type ErrorCase } from './operation.js';

interface Header {
  description: string;
  required?: boolean;
  schema: Record<string, unknown>;
}
interface Response {
  description: string;
  headers?: Record<string, Header>;
  content?: Record<string, { schema: unknown }>;
}
interface Operation {
  requestBody?: { description?: string };
  responses?: Record<string, Response>;
}
export interface OpenApiDocument {
  tags?: Array<{ name: string; description: string }>;
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown> };
}

const ERROR_REF = '#/components/schemas/Error';
const REASONS: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Payload too large',
  429: 'Too many requests',
  500: 'Internal error',
  501: 'Not configured',
  502: 'Upstream error',
  503: 'Unavailable',
};

/** The route's error answers, by status: the §2 body whose `code` is one of the route's codes at that status. */
export function errorResponses(errors: readonly ErrorCase[]): Record<number, Response> {
  const codes = new Map<number, string[]>();
  for (const e of errors) {
    const code = typeof e === 'string' ? e : e.code;
    const status = statusOf(e);
    codes.set(status, [...(codes.get(status) ?? []), code]);
  }
  const out: Record<number, Response> = {};
  for (const status of [...codes.keys()].sort((a, b) => a - b)) {
    const list = codes.get(status)!;
    out[status] = {
      description: `${REASONS[status] ?? 'Error'} (INTERFACE §2): ${list.map((c) => `\`${c}\``).join(', ')}`,
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: ERROR_REF },
              { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: list } } } } },
            ],
          },
        },
      },
    };
  }
  return out;
}

const REQUEST_ID: Header = {
  description:
    "This request's id: the caller's own X-Request-Id when it is 1-128 characters of `[A-Za-z0-9._:-]`, " +
    'else a generated one (INTERFACE §9.3)',
  required: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
};
const RETRY_AFTER: Header = {
  description: 'Whole seconds to wait before trying again (at least 1)',
  schema: { type: 'integer', minimum: 1 },
};

const MIB = 1024 * 1024;
const size = (bytes: number) => (bytes % MIB === 0 ? `${bytes / MIB} MiB` : `${bytes} bytes`);

/**
 * The whole document once every route is in: headers on every response, body limits
 * (`bodyLimits`, bytes by `METHOD path`), tags, and unused components removed (the
 * type provider names every registered schema twice, for input and output).
 */
export function finishDocument<D extends OpenApiDocument>(doc: D, bodyLimits: ReadonlyMap<string, number>): D {
  for (const [path, ops] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(ops)) {
      const limit = bodyLimits.get(`${method.toUpperCase()} ${path}`);
      if (op.requestBody && limit !== undefined) {
        op.requestBody.description = `JSON, at most ${size(limit)} (413 \`payload_too_large\` past it)`;
      }
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        r.headers = { 'X-Request-Id': REQUEST_ID, ...r.headers };
        if (status === '429') r.headers['Retry-After'] = { ...RETRY_AFTER, required: true };
        if (status === '503') r.headers['Retry-After'] = RETRY_AFTER;
      }
    }
  }
  doc.tags = Object.entries(TAGS).map(([name, description]) => ({ name, description }));
  pruneComponents(doc);
  return doc;
}

function pruneComponents(doc: OpenApiDocument): void {
  const schemas = doc.components?.schemas;
  if (!schemas) return;
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) {
        const name = v.slice('#/components/schemas/'.length);
        if (!used.has(name)) {
          used.add(name);
          visit(schemas[name]);
        }
      } else visit(v);
    }
  };
  visit(doc.paths);
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name];
}
