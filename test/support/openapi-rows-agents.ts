/**
 * The OpenAPI conformance table (openapi-conformance.test.ts), the MCP server for agents
 * (INTERFACE §10.3): a JSON-RPC request, a notification, a tool call, and the refusals
 * before the protocol, each with the status (and §2 code) it must answer.
 */
import { bearer, type Row } from './openapi-calls.js';

const accept = { accept: 'application/json, text/event-stream' };
const rpc = (method: string, params?: Record<string, unknown>) => ({ jsonrpc: '2.0', id: 1, method, params });

export const AGENT_ROWS: Row[] = [
  {
    name: 'MCP initialize',
    call: (x) => ({
      path: '/mcp',
      headers: { ...bearer(x.a), ...accept },
      body: rpc('initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'conformance', version: '1' },
      }),
    }),
    status: 200,
  },
  {
    name: 'MCP notification',
    call: (x) => ({
      path: '/mcp',
      headers: { ...bearer(x.a), ...accept },
      body: { jsonrpc: '2.0', method: 'notifications/initialized' },
    }),
    status: 202,
  },
  {
    name: 'MCP tool call',
    call: (x) => ({
      path: '/mcp',
      headers: { ...bearer(x.a), ...accept, 'mcp-protocol-version': '2025-06-18' },
      body: rpc('tools/call', { name: 'get_node', arguments: { id: x.node } }),
    }),
    status: 200,
  },
  {
    name: 'MCP without a key',
    call: () => ({ path: '/mcp', headers: accept, body: rpc('tools/list') }),
    status: 401,
    valid: false,
    code: 'unauthorized',
  },
  {
    name: 'MCP batch',
    call: (x) => ({ path: '/mcp', headers: { ...bearer(x.a), ...accept }, body: [rpc('tools/list')] }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
];
