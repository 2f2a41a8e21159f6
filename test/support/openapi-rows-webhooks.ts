/**
 * The OpenAPI conformance table (openapi-conformance.test.ts), webhooks (INTERFACE §10.2):
 * every route, valid and invalid calls, the 204 of a delete (an answer without a body) among
 * them. The node allows http and loopback URLs (its env), so a webhook can be made without a
 * public host; the webhooks the rows read or change are made first, straight on the node.
 */
import { bearer, UNKNOWN, type Ctx, type Row } from './openapi-calls.js';

const RECEIVER = 'http://127.0.0.1:9/hooks';

/** A fresh webhook of tenant a, made on the node itself (not through the proxy). */
async function webhookOf(x: Ctx): Promise<string> {
  const res = await fetch(`${x.h.node.url}/api/v1/webhooks`, {
    method: 'POST',
    headers: { ...bearer(x.a), 'content-type': 'application/json' },
    body: JSON.stringify({ url: RECEIVER }),
  });
  if (res.status !== 201) throw new Error(`webhook not made: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

export const WEBHOOK_ROWS: Row[] = [
  {
    name: 'create a webhook',
    call: (x) => ({
      path: '/api/v1/webhooks',
      headers: bearer(x.a),
      body: { url: RECEIVER, kinds: ['chat.message'], description: 'conformance' },
    }),
    status: 201,
  },
  {
    name: 'create a webhook to an ftp URL',
    call: (x) => ({ path: '/api/v1/webhooks', headers: bearer(x.a), body: { url: 'ftp://127.0.0.1/' } }),
    status: 400,
    code: 'bad_config',
  },
  {
    name: 'create a webhook of an unknown kind',
    call: (x) => ({ path: '/api/v1/webhooks', headers: bearer(x.a), body: { url: RECEIVER, kinds: ['chat.file'] } }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  { name: 'webhooks', call: (x) => ({ path: '/api/v1/webhooks', headers: bearer(x.a) }), status: 200 },
  {
    name: 'one webhook',
    call: async (x) => ({ path: `/api/v1/webhooks/${await webhookOf(x)}`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: "another tenant's webhook",
    call: async (x) => ({ path: `/api/v1/webhooks/${await webhookOf(x)}`, headers: bearer(x.b) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'an unknown webhook',
    call: (x) => ({ path: `/api/v1/webhooks/${UNKNOWN}`, headers: bearer(x.a) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'disable a webhook',
    call: async (x) => ({
      method: 'PATCH',
      path: `/api/v1/webhooks/${await webhookOf(x)}`,
      headers: bearer(x.a),
      body: { status: 'disabled', description: null },
    }),
    status: 200,
  },
  {
    name: 'a webhook patched to status failing',
    call: async (x) => ({
      method: 'PATCH',
      path: `/api/v1/webhooks/${await webhookOf(x)}`,
      headers: bearer(x.a),
      body: { status: 'failing' },
    }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'rotate a webhook secret',
    call: async (x) => ({
      method: 'POST',
      path: `/api/v1/webhooks/${await webhookOf(x)}/rotate-secret`,
      headers: bearer(x.a),
    }),
    status: 200,
  },
  {
    name: "a webhook's deliveries",
    call: async (x) => ({ path: `/api/v1/webhooks/${await webhookOf(x)}/deliveries?limit=5`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'deliveries with limit=0',
    call: async (x) => ({ path: `/api/v1/webhooks/${await webhookOf(x)}/deliveries?limit=0`, headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'delete a webhook',
    call: async (x) => ({ method: 'DELETE', path: `/api/v1/webhooks/${await webhookOf(x)}`, headers: bearer(x.a) }),
    status: 204,
  },
  {
    name: 'delete an unknown webhook',
    call: (x) => ({ method: 'DELETE', path: `/api/v1/webhooks/${UNKNOWN}`, headers: bearer(x.a) }),
    status: 404,
    code: 'not_found',
  },
];
