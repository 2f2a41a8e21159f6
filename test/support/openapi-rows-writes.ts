/**
 * The OpenAPI conformance table (openapi-conformance.test.ts), the tenant API's writes:
 * emits of each connector with their refusals (bodies, Idempotency-Key, size), node
 * actions and dead-letter replay; `AFTER_UNINSTALL` runs last, once the chat install is gone.
 * Each call has the status (and §2 code) it must answer and whether the document accepts it.
 */
import { bearer, chatMessage, emit, UNKNOWN, type Row } from './openapi-calls.js';

export const WRITE_ROWS: Row[] = [
  { name: 'emit a chat message', call: (x) => emit(x, x.chat, chatMessage(x.posted)), status: 200 },
  {
    name: 'emit a chat reaction',
    call: (x) =>
      emit(x, x.chat, {
        kind: 'chatapp.reaction',
        body: { channel_id: x.reacted, timestamp: x.reactedTs, name: ':eyes:' },
      }),
    status: 200,
  },
  {
    name: 'emit a code-host comment',
    call: (x) =>
      emit(x, x.code, {
        kind: 'codehost.issue_comment',
        body: { repo_full_name: 'Codertocat/Hello-World', issue_number: 1, body: 'hello' },
      }),
    status: 200,
  },
  {
    name: 'emit an unknown kind',
    call: (x) => emit(x, x.chat, { kind: 'chatapp.poke', body: {} }),
    status: 400,
    valid: false,
    code: 'bad_config',
  },
  {
    name: 'emit a reaction without its timestamp',
    call: (x) => emit(x, x.chat, { kind: 'chatapp.reaction', body: { channel_id: x.reacted, name: 'eyes' } }),
    status: 400,
    valid: false,
    code: 'bad_config',
  },
  {
    name: "emit a code-host kind to a chat install (the install's own check)",
    call: (x) =>
      emit(x, x.chat, {
        kind: 'codehost.label',
        body: { repo_full_name: 'octo/repo', issue_number: 1, labels: ['bug'] },
      }),
    status: 400,
    code: 'bad_config',
  },
  {
    name: 'emit to an unknown install',
    call: (x) => emit(x, UNKNOWN, chatMessage(x.posted)),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'emit with an Idempotency-Key',
    call: (x) => emit(x, x.chat, chatMessage(x.keyed, 'once'), { 'idempotency-key': 'conformance-1' }),
    status: 200,
  },
  {
    name: 'emit with that key and another body',
    call: (x) => emit(x, x.chat, chatMessage(x.keyed, 'twice'), { 'idempotency-key': 'conformance-1' }),
    status: 409,
    code: 'idempotency_key_reused',
  },
  {
    name: 'emit with a malformed Idempotency-Key',
    call: (x) => emit(x, x.chat, chatMessage(x.keyed), { 'idempotency-key': 'has space' }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'emit past the body limit',
    call: (x) => emit(x, x.chat, chatMessage(x.keyed, 'x'.repeat(1024 * 1024))),
    status: 413,
    valid: false,
    code: 'payload_too_large',
  },
  {
    name: 'emit JSON that does not parse',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/emit`, headers: bearer(x.a), raw: '{"kind":' }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },

  {
    name: 'reply to a message',
    call: (x) => ({
      path: `/api/v1/graph/nodes/${x.node}/actions`,
      headers: bearer(x.a),
      body: { action: 'reply', text: 'seen' },
    }),
    status: 200,
  },
  {
    name: 'label a message (does not fit)',
    call: (x) => ({
      path: `/api/v1/graph/nodes/${x.node}/actions`,
      headers: bearer(x.a),
      body: { action: 'label', labels: ['bug'] },
    }),
    status: 400,
    code: 'bad_request',
  },
  {
    name: 'an unknown action',
    call: (x) => ({ path: `/api/v1/graph/nodes/${x.node}/actions`, headers: bearer(x.a), body: { action: 'poke' } }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },

  {
    name: "replay another tenant's dead letter",
    call: (x) => ({ method: 'POST', path: `/api/v1/dead-letters/${x.deadLetter}/replay`, headers: bearer(x.b) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'replay a dead letter',
    call: (x) => ({ method: 'POST', path: `/api/v1/dead-letters/${x.deadLetter}/replay`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'replay a malformed id',
    call: (x) => ({ method: 'POST', path: '/api/v1/dead-letters/abc/replay', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },

  // INTERFACE §10.5: a user no row writes as, so the erase changes nothing the others read.
  {
    name: 'erase a chat user',
    call: (x) => ({
      method: 'POST',
      path: '/api/v1/graph/erase',
      headers: bearer(x.a),
      body: { install_id: x.chat, user_external_id: `${x.team}:U0ERASED` },
    }),
    status: 200,
  },
  {
    name: "erase a user of another tenant's install",
    call: (x) => ({
      method: 'POST',
      path: '/api/v1/graph/erase',
      headers: bearer(x.b),
      body: { install_id: x.chat, user_external_id: `${x.team}:U0ERASED` },
    }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'erase without a user',
    call: (x) => ({ method: 'POST', path: '/api/v1/graph/erase', headers: bearer(x.a), body: { install_id: x.chat } }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
];

export const AFTER_UNINSTALL: Row[] = [
  {
    name: 'uninstall',
    call: (x) => ({ method: 'DELETE', path: `/api/v1/connectors/installs/${x.chat}`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'uninstall again',
    call: (x) => ({ method: 'DELETE', path: `/api/v1/connectors/installs/${x.chat}`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'uninstall an unknown install',
    call: (x) => ({ method: 'DELETE', path: `/api/v1/connectors/installs/${UNKNOWN}`, headers: bearer(x.a) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'health of an uninstalled install',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/health`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'emit to an uninstalled install',
    call: (x) => emit(x, x.chat, chatMessage(x.posted)),
    status: 409,
    code: 'install_not_active',
  },
];
