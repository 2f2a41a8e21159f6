/**
 * The OpenAPI 3.1 document (INTERFACE §9.3): `GET /openapi.json` and a page rendering it
 * at `GET /docs`, both without auth. The document is generated from the routes' own zod
 * schemas (fastify-type-provider-zod turns them into JSON Schema for @fastify/swagger);
 * this file adds what every route shares: the §2 error body as the default response,
 * the request id header, and Bearer security on tenant routes.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { createJsonSchemaTransform, jsonSchemaTransformObject, validatorCompiler } from 'fastify-type-provider-zod';
import { isDocumentationOnly } from './doc-only-schema.js';
import { ErrorBody } from './schemas.js';

export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';

/**
 * A route's `validatorCompiler` when its request schema only documents (the webhook
 * receivers check the signature on the raw bytes before anything else, and read their
 * headers themselves): nothing is validated per request, the schema still reaches the
 * OpenAPI document (issue 12: zod off the webhook hot path).
 */
export const DOCUMENTATION_ONLY = () => () => true;

/** Tenant routes that a tenant's key does not guard: the browser, Slack and GitHub reach them. */
const NO_BEARER = new Set([
  '/api/v1/connectors/oauth/callback',
  '/api/v1/connectors/chatapp/events',
  '/api/v1/connectors/codehost/webhooks',
]);

const zodTransform = createJsonSchemaTransform({ skipList: [] });

const errorResponse = {
  description: 'Error (INTERFACE §2): `{"error": {"code", "message", "request_id", ...}}`',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
};
const requestIdHeader = {
  'X-Request-Id': {
    description: "This request's id: the caller's own X-Request-Id when well-formed, else a generated one",
    schema: { type: 'string' },
  },
};

/** A route as registered (the OpenAPI test checks that every one is documented). */
export interface RegisteredRoute {
  method: string;
  url: string;
  hidden: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    registeredRoutes: RegisteredRoute[];
  }
}

export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  const routes: RegisteredRoute[] = [];
  app.decorate('registeredRoutes', routes);
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) {
      routes.push({ method, url: r.url, hidden: (r.schema as { hide?: boolean } | undefined)?.hide === true });
    }
  });
  // Request schemas validate (routes opt into `attachValidation` to choose the error code
  // and order themselves, see params.ts `validInput`); responses are documented, not enforced.
  // A documentation-only schema (the signed webhook bodies) compiles to a pass-through.
  app.setValidatorCompiler((route) =>
    isDocumentationOnly(route.schema)
      ? passThrough
      : validatorCompiler(route as Parameters<typeof validatorCompiler>[0]),
  );
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // Registered under its id by `.meta()`; referenced from every operation's default response.
  void ErrorBody;

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'connector-service',
        version,
        description:
          'Keeps a knowledge graph in two-way sync with Slack workspaces (`chatapp`) and GitHub App ' +
          'installations (`codehost`). Every response carries `X-Request-Id`; emits and node actions ' +
          'take an `Idempotency-Key` (INTERFACE §9.3).',
      },
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'the tenant API key' },
          adminToken: { type: 'apiKey', in: 'header', name: 'X-Service-Admin-Token' },
        },
      },
    },
    transform: (doc) => {
      const out = zodTransform(doc);
      // A route registered without a schema is still listed (and the OpenAPI test names it).
      const schema = (out.schema ?? {}) as Record<string, unknown>;
      out.schema = schema;
      if (schema.hide) return out;
      const response = (schema.response ?? {}) as Record<string, unknown>;
      schema.response = { ...response, default: errorResponse };
      if (schema.security === undefined && doc.url.startsWith('/api/')) {
        schema.security = NO_BEARER.has(doc.url) ? [] : [{ bearerAuth: [] }];
      }
      return out;
    },
    transformObject: (doc) => {
      const out = jsonSchemaTransformObject(doc) as { paths?: Record<string, Record<string, OperationLike>> };
      // Every operation answers with X-Request-Id (INTERFACE §9.3).
      for (const ops of Object.values(out.paths ?? {})) {
        for (const op of Object.values(ops)) {
          for (const r of Object.values(op.responses ?? {})) r.headers = { ...requestIdHeader, ...r.headers };
        }
      }
      return out as ReturnType<typeof jsonSchemaTransformObject>;
    },
  });
  await app.register(swaggerUi, { routePrefix: DOCS_PATH });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect(DOCS_PATH));
}

const passThrough = () => true;

interface OperationLike {
  responses?: Record<string, { headers?: Record<string, unknown> }>;
}
