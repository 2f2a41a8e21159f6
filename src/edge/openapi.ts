/**
 * The OpenAPI 3.1 document (INTERFACE §9.3): `GET /openapi.json` and a page rendering it
 * at `GET /docs`, both without auth. Every route is defined with `operation()`
 * (operation.ts) from the zod schemas it validates requests with and serializes its
 * answers through, so the document says what the server does: fastify-type-provider-zod
 * turns the schemas into JSON Schema for @fastify/swagger, and openapi-document.ts adds
 * the error responses, headers and tags. A route registered without `operation()` is a
 * startup error.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  createJsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { z } from 'zod';
import { isDocumentationOnly } from './doc-only-schema.js';
import { errorResponses, finishDocument, type OpenApiDocument } from './openapi-document.js';
import { errorsOfSchema, operation } from './operation.js';
import { numericKeys, withNumbers } from './query-numbers.js';
import { ErrorBody } from './schemas.js';

const OPENAPI_PATH = '/openapi.json';
const DOCS_PATH = '/docs';

/**
 * A route's `validatorCompiler` when its request schema only documents (the webhook
 * receivers check the signature on the raw bytes before anything else, and read their
 * headers themselves): nothing is validated per request, the schema still reaches the
 * OpenAPI document (issue 12: zod off the webhook hot path).
 */
export const DOCUMENTATION_ONLY = () => () => true;

const OPENAPI_OPERATION = operation({
  operationId: 'getOpenApiDocument',
  tag: 'documentation',
  summary: 'This document (OpenAPI 3.1)',
  description: '`servers` names this service as the request reached it (`X-Forwarded-Proto` and `-Host` honoured).',
  auth: 'public',
  responses: {
    200: {
      description: 'The OpenAPI document',
      schema: z.object({ openapi: z.string() }).catchall(z.unknown()),
    },
  },
  errors: [],
});
const DOCS_OPERATION = operation({
  operationId: 'getDocs',
  tag: 'documentation',
  summary: 'This document as a page (Swagger UI)',
  auth: 'public',
  responses: {
    200: { description: 'An HTML page rendering the document', schema: z.string(), contentType: 'text/html' },
  },
  errors: [],
});

/** A route as registered (the OpenAPI test checks that every one is documented). */
interface RegisteredRoute {
  method: string;
  url: string;
  hidden: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    registeredRoutes: RegisteredRoute[];
  }
}

const zodTransform = createJsonSchemaTransform({ skipList: [] });

export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  const routes: RegisteredRoute[] = [];
  app.decorate('registeredRoutes', routes);
  app.addHook('onRoute', (r) => {
    const hidden = (r.schema as { hide?: boolean } | undefined)?.hide === true;
    for (const method of [r.method].flat()) {
      routes.push({ method, url: r.url, hidden });
      if (!hidden && method !== 'HEAD' && errorsOfSchema(r.schema) === undefined) {
        throw new Error(`${method} ${r.url}: define its schema with operation() (src/edge/operation.ts)`);
      }
    }
  });
  // Requests: routes opt into `attachValidation` to choose the error code and order
  // themselves (params.ts `validInput`); a documentation-only schema (the signed webhook
  // bodies) compiles to a pass-through; numbers in queries and paths are read first.
  app.setValidatorCompiler((route) => {
    if (isDocumentationOnly(route.schema)) return passThrough;
    const validate = validatorCompiler(route as Parameters<typeof validatorCompiler>[0]);
    const numbers = route.httpPart === 'querystring' || route.httpPart === 'params' ? numericKeys(route.schema) : null;
    return numbers?.size ? (data: unknown) => validate(withNumbers(data, numbers)) : validate;
  });
  // Answers: a success body leaves through its zod schema, so it holds what the document
  // says and nothing else (a field the schema does not name is not sent; a value it
  // refuses is a 500 `internal`, logged, instead of a body that breaks the document).
  app.setSerializerCompiler(serializerCompiler);
  // Registered under its id by `.meta()`; referenced from every error response.
  void ErrorBody;

  const bodyLimits = new Map<string, number>();
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'connector-service',
        version,
        description:
          'Keeps a knowledge graph in two-way sync with Slack workspaces (`chatapp`) and GitHub App ' +
          'installations (`codehost`). Every response carries `X-Request-Id`; every error has the body ' +
          '`{"error": {"code", "message", "request_id"}}`; emits and node actions take an `Idempotency-Key` ' +
          '(INTERFACE §2, §9.3).',
      },
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: "A tenant's API key" },
          adminToken: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Service-Admin-Token',
            description: 'The operator-set SERVICE_ADMIN_API_TOKEN (admin endpoints only)',
          },
        },
      },
    },
    transform: (doc) => {
      const method = [doc.route.method].flat()[0]!;
      // The page's route belongs to @fastify/swagger-ui, which hides it; it is documented here.
      const page = doc.url === `${DOCS_PATH}/` && method === 'GET';
      const schema = page ? DOCS_OPERATION : doc.schema;
      const errors = errorsOfSchema(schema);
      const out = zodTransform({ ...doc, schema, url: page ? DOCS_PATH : doc.url });
      if (errors === undefined || out.schema.hide) return out;
      const response = (out.schema.response ?? {}) as Record<string, unknown>;
      out.schema = { ...out.schema, response: { ...response, ...errorResponses(errors) } };
      if (out.schema.body !== undefined) {
        bodyLimits.set(`${method} ${toOpenApiPath(doc.url)}`, doc.route.bodyLimit ?? app.initialConfig.bodyLimit!);
      }
      return out;
    },
    transformObject: (doc) => finishDocument(jsonSchemaTransformObject(doc) as OpenApiDocument, bodyLimits),
  });
  const withServers = (spec: Readonly<Record<string, unknown>>, req: FastifyRequest) =>
    withServersOf(spec, req, () => app.listeningOrigin);
  await app.register(swaggerUi, { routePrefix: DOCS_PATH, transformSpecification: withServers });
  app.withTypeProvider<ZodTypeProvider>().get(OPENAPI_PATH, { schema: OPENAPI_OPERATION }, async (req, reply) => {
    // The document names the host it was asked through: a cache must not hand it to another.
    reply.header('vary', 'host, x-forwarded-host, x-forwarded-proto');
    return withServers(app.swagger() as unknown as Readonly<Record<string, unknown>>, req);
  });
  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect(DOCS_PATH));
}

const passThrough = () => true;

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

const HOST = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * `servers`: this service as the request reached it. Behind a proxy that is the public
 * URL (the edge trusts `X-Forwarded-Proto` and `X-Forwarded-Host`), so a client generated
 * from the document calls what its author called; direct, the listen address. A request
 * without a usable Host gets the listen address.
 */
function withServersOf(
  spec: Readonly<Record<string, unknown>>,
  req: FastifyRequest,
  listening: () => string,
): { openapi: string; [field: string]: unknown } {
  const { openapi, info, ...rest } = spec as { openapi: string; info: unknown };
  let url: string | null = HOST.test(req.host) ? `${req.protocol}://${req.host}` : null;
  try {
    url ??= listening();
  } catch {
    // Not listening (a test's inject): no server to name.
  }
  const servers = url === null ? {} : { servers: [{ url, description: 'This service, as this request reached it' }] };
  return { openapi, info, ...servers, ...rest };
}
