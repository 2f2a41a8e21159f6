/**
 * The body of `POST .../installs/{install_id}/emit` (INTERFACE §3, spec §4.1-4.2): one of
 * the emit kinds with its fields, from the zod schemas the connectors validate with, so
 * the OpenAPI document shows each kind's fields (a reaction's `timestamp`, a label's
 * `labels`) and the route refuses what they refuse (400 `bad_config`) before any actor is
 * asked. Whether the kind belongs to the install's connector is the install's own check.
 */
import { z } from 'zod';
import { MessageBody, ReactionBody } from '../connectors/chatapp/emit.js';
import { CODEHOST_EMIT_BODIES, CODEHOST_EMIT_KINDS } from '../connectors/codehost/emit-schema.js';
import type { ErrorCase } from './operation.js';

export const EMIT_KINDS = ['chatapp.message', 'chatapp.reaction', ...CODEHOST_EMIT_KINDS] as const;
export type EmitKind = (typeof EMIT_KINDS)[number];

const BODIES = {
  'chatapp.message': { schema: MessageBody, says: 'Post a message (`thread_ts`: reply in that thread)' },
  'chatapp.reaction': { schema: ReactionBody, says: 'Add a reaction to the message at `timestamp`' },
  'codehost.pr_summary_comment': {
    schema: CODEHOST_EMIT_BODIES['codehost.pr_summary_comment'],
    says: "Create or update the service's summary comment on a pull request",
  },
  'codehost.issue_comment': {
    schema: CODEHOST_EMIT_BODIES['codehost.issue_comment'],
    says: 'Comment on an issue or pull request',
  },
  'codehost.review_comment': {
    schema: CODEHOST_EMIT_BODIES['codehost.review_comment'],
    says: 'Comment on a line of a pull request diff',
  },
  'codehost.label': { schema: CODEHOST_EMIT_BODIES['codehost.label'], says: 'Add labels to an issue or pull request' },
  'codehost.commit_status': {
    schema: CODEHOST_EMIT_BODIES['codehost.commit_status'],
    says: 'Set a commit status',
  },
} satisfies Record<EmitKind, { schema: z.ZodType; says: string }>;

const variant = <K extends EmitKind>(kind: K) =>
  z
    .object({ kind: z.literal(kind), body: BODIES[kind].schema })
    .strict()
    .meta({ title: kind, description: BODIES[kind].says });

export const EmitRequest = z.discriminatedUnion(
  'kind',
  [
    variant('chatapp.message'),
    variant('chatapp.reaction'),
    variant('codehost.pr_summary_comment'),
    variant('codehost.issue_comment'),
    variant('codehost.review_comment'),
    variant('codehost.label'),
    variant('codehost.commit_status'),
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? `must be one of ${EMIT_KINDS.join(', ')}` : undefined) },
);
export type EmitRequest = z.output<typeof EmitRequest>;

/**
 * What an emit can answer besides its receipt (INTERFACE §3), on the emit route and on a
 * node action, which is an emit: the install's checks, the Idempotency-Key's, upstream's.
 */
export const EMIT_ERRORS = [
  'not_found',
  'bad_config',
  'install_not_active',
  'idempotency_key_reused',
  'upstream_error',
  'credentials_unreadable',
] as const satisfies readonly ErrorCase[];

/**
 * INTERFACE §8.24: an ask from a tenant's request to an actor whose shard no node holds (its
 * owner just died, the lease not yet expired) answers 503 with `Retry-After` after this long,
 * rather than holding the request until its timeout: the client retries within its own budget.
 */
export const UNOWNED_MS = 5_000;
