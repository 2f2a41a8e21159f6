/**
 * The OpenAPI conformance table (openapi-conformance.test.ts), the tenant API's reads: the
 * documentation and ops routes, connectors, installs, health and events, the graph and
 * dead letters, each call with the status (and §2 code) it must answer and whether the
 * document accepts it.
 */
import { bearer, UNKNOWN, type Row } from './openapi-calls.js';

export const READ_ROWS: Row[] = [
  // documentation and operations
  { name: 'the document', call: () => ({ path: '/openapi.json' }), status: 200 },
  { name: 'the page', call: () => ({ path: '/docs' }), status: 200 },
  { name: 'liveness', call: () => ({ path: '/healthz' }), status: 200 },
  { name: 'readiness', call: () => ({ path: '/readyz' }), status: 200 },
  { name: 'metrics', call: () => ({ path: '/metrics' }), status: 200 },

  // connectors
  { name: 'connectors', call: (x) => ({ path: '/api/v1/connectors', headers: bearer(x.a) }), status: 200 },
  {
    name: 'connectors without a key',
    call: () => ({ path: '/api/v1/connectors' }),
    status: 401,
    valid: false,
    code: 'unauthorized',
  },
  {
    name: 'connectors with an unknown key',
    call: () => ({ path: '/api/v1/connectors', headers: { authorization: 'Bearer not-a-key-of-anyone' } }),
    status: 401,
    code: 'unauthorized',
  },
  // installs
  { name: 'installs', call: (x) => ({ path: '/api/v1/connectors/installs', headers: bearer(x.a) }), status: 200 },
  {
    name: 'installs of one connector',
    call: (x) => ({ path: '/api/v1/connectors/installs?connector_id=codehost', headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'installs of an unknown connector',
    call: (x) => ({ path: '/api/v1/connectors/installs?connector_id=gitlab', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'installs with an unknown parameter',
    call: (x) => ({ path: '/api/v1/connectors/installs?colour=red', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'one install, with its effects',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'an unknown install',
    call: (x) => ({ path: `/api/v1/connectors/installs/${UNKNOWN}`, headers: bearer(x.a) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: "another tenant's install",
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}`, headers: bearer(x.b) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'a malformed install id',
    call: (x) => ({ path: '/api/v1/connectors/installs/not-an-id', headers: bearer(x.a) }),
    status: 404,
    valid: false,
    code: 'not_found',
  },
  {
    name: 'chat health',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/health`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'code-host health',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.code}/health`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'events',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'events at the largest limit',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events?limit=500`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'events at limit=5e1 (an integer, as JSON counts them)',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events?limit=5e1`, headers: bearer(x.a) }),
    status: 200,
  },
  ...['0', '501', 'abc', '2.5'].map((limit): Row => ({
    name: `events with limit=${limit}`,
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events?limit=${limit}`, headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  })),
  {
    name: 'events with a cursor the service never issued',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events?cursor=zzz`, headers: bearer(x.a) }),
    status: 400,
    code: 'bad_request',
  },
  // graph
  { name: 'nodes', call: (x) => ({ path: '/api/v1/graph/nodes', headers: bearer(x.a) }), status: 200 },
  {
    name: 'nodes found by text',
    call: (x) => ({ path: '/api/v1/graph/nodes?q=backfill&kind=chat.message', headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'nodes with a blank query',
    call: (x) => ({ path: '/api/v1/graph/nodes?q=%20%20', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'nodes of an unknown kind',
    call: (x) => ({ path: '/api/v1/graph/nodes?kind=chat.file', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: "nodes of another tenant's install",
    call: (x) => ({ path: `/api/v1/graph/nodes?install_id=${x.chat}`, headers: bearer(x.b) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'one node with its edges',
    call: (x) => ({ path: `/api/v1/graph/nodes/${x.node}`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'an unknown node',
    call: (x) => ({ path: `/api/v1/graph/nodes/${UNKNOWN}`, headers: bearer(x.a) }),
    status: 404,
    code: 'not_found',
  },
  // the change feed (INTERFACE §10.1)
  { name: 'changes', call: (x) => ({ path: '/api/v1/graph/changes', headers: bearer(x.a) }), status: 200 },
  {
    name: 'changes from the head, held a second',
    call: (x) => ({ path: '/api/v1/graph/changes?cursor=latest&wait=1', headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'chat message changes after cursor 0',
    call: (x) => ({ path: '/api/v1/graph/changes?cursor=0&kind=chat.message&limit=1000', headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'changes after a cursor the feed never gave',
    call: (x) => ({ path: '/api/v1/graph/changes?cursor=abc', headers: bearer(x.a) }),
    status: 400,
    code: 'bad_request',
  },
  ...['wait=31', 'limit=1001', 'kind=chat.file'].map((q): Row => ({
    name: `changes with ${q}`,
    call: (x) => ({ path: `/api/v1/graph/changes?${q}`, headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  })),
  {
    name: "changes of another tenant's install",
    call: (x) => ({ path: `/api/v1/graph/changes?install_id=${x.chat}`, headers: bearer(x.b) }),
    status: 404,
    code: 'not_found',
  },
  // dead letters
  { name: 'dead letters', call: (x) => ({ path: '/api/v1/dead-letters', headers: bearer(x.a) }), status: 200 },
  {
    name: 'dead letters with limit=0',
    call: (x) => ({ path: '/api/v1/dead-letters?limit=0', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'dead letters of a malformed install id',
    call: (x) => ({ path: '/api/v1/dead-letters?install_id=nope', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  // the export (INTERFACE §10.5)
  { name: 'export of the whole graph', call: (x) => ({ path: '/api/v1/export', headers: bearer(x.a) }), status: 200 },
  {
    name: 'export with an empty install id',
    call: (x) => ({ path: '/api/v1/export?install_id=', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  { name: 'export', call: (x) => ({ path: `/api/v1/export?install_id=${x.chat}`, headers: bearer(x.a) }), status: 200 },
  {
    name: "export of another tenant's install",
    call: (x) => ({ path: `/api/v1/export?install_id=${x.chat}`, headers: bearer(x.b) }),
    status: 404,
    code: 'not_found',
  },
  // the audit log (INTERFACE §10.5)
  { name: 'audit log', call: (x) => ({ path: '/api/v1/audit?limit=5', headers: bearer(x.a) }), status: 200 },
  {
    name: 'audit log with a cursor it never issued',
    call: (x) => ({ path: '/api/v1/audit?cursor=abc', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
];
