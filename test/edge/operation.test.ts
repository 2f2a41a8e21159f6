/**
 * The route-definition shape (src/edge/operation.ts): a route without it does not start, a
 * route's errors come with those of its kind, a status is either an answer or an error,
 * and what a route answers leaves through its schema (no field the schema does not name,
 * a value it refuses is a 500 `internal`, never a body the document does not describe).
 */
import Fastify from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sendError } from '../../src/edge/error-map.js';
import { registerOpenApi } from '../../src/edge/openapi.js';
import { errorsOf, operation } from '../../src/edge/operation.js';

const apps: Array<ReturnType<typeof Fastify>> = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

async function app() {
  const a = Fastify({ logger: false });
  apps.push(a);
  a.setErrorHandler((err, _req, reply) => sendError(reply, err));
  await registerOpenApi(a, '0.0.0');
  return a;
}

const THING = operation({
  operationId: 'getThing',
  tag: 'graph',
  summary: 'A thing',
  auth: 'public',
  responses: { 200: { description: 'The thing', schema: z.object({ id: z.uuid(), name: z.string() }) } },
  errors: ['not_found'],
});

describe('operation()', () => {
  it('is required: a route registered without it stops the edge at start, naming the route', async () => {
    const a = await app();
    expect(() => a.get('/bare', async () => ({ ok: true }))).toThrow(/GET \/bare: define its schema with operation/);
    expect(() => a.get('/hidden', { schema: { hide: true } }, async () => ({ ok: true }))).not.toThrow();
  });

  it("adds the errors of the route's kind to its own", () => {
    expect(errorsOf({ auth: 'public', errors: ['not_found'] })).toEqual(['not_found', 'internal']);
    expect(errorsOf({ auth: 'bearer', body: z.object({}), errors: ['bad_request'] })).toEqual([
      'bad_request',
      'internal',
      'unauthorized',
      'rate_limited',
      'unavailable',
      'payload_too_large',
    ]);
  });

  it('refuses a status that is both an answer and an error', () => {
    expect(() =>
      operation({
        operationId: 'clash',
        tag: 'graph',
        summary: 'x',
        auth: 'public',
        responses: { 404: { description: 'x', schema: z.object({}) } },
        errors: ['not_found'],
      }),
    ).toThrow(/404 is both an answer and an error/);
  });

  it('sends an answer through its schema: unnamed fields stay home, a refused value is a 500', async () => {
    const a = await app();
    let answer: Record<string, unknown> = {};
    a.withTypeProvider<ZodTypeProvider>().get('/thing', { schema: THING }, async () => answer as never);
    await a.ready();
    answer = { id: '0b0e8a4e-8f4d-4a53-9a51-8a0c1c2d3e4f', name: 'x', tenant_id: 'secret-ish' };
    const ok = await a.inject({ url: '/thing' });
    expect(ok.json()).toEqual({ id: '0b0e8a4e-8f4d-4a53-9a51-8a0c1c2d3e4f', name: 'x' });
    answer = { id: 'not-a-uuid', name: 'x' };
    const bad = await a.inject({ url: '/thing' });
    expect(bad.statusCode).toBe(500);
    expect(bad.json().error.code).toBe('internal');
  });
});
