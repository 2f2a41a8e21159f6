/**
 * Chat write-back (spec §4.1, INTERFACE §3 emit, §8.4–§8.6): `chatapp.message` through
 * `chat.postMessage` (receipt = the posted ts) and `chatapp.reaction` through
 * `reactions.add` (`already_reacted` is success; receipt = `{channel}:{ts}:{name}`).
 * Every write first takes a permit from the channel bucket, which charges the workspace
 * bucket only once the channel allows (spec §8); Slack's own 429 holds that channel
 * for its Retry-After (INTERFACE §8.26).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { BadConfig, DeadlineExceeded, RateLimited, UpstreamError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { platformError, rateLimitedFor, toSlackAppError } from './slack-errors.js';
import { slackClient } from './slack-client.js';

const ChannelId = z.string().regex(/^[A-Z0-9]{2,40}$/, { message: 'must be a Slack conversation id' });
const NAME = "[a-z0-9_+'-]{1,100}(?:::skin-tone-[2-6])?";
const REACTION_NAME = new RegExp(`^\\s*(?::${NAME}:|${NAME})\\s*$`);
const Ts = z.string().regex(/^\d{1,12}\.\d{1,9}$/, { message: 'must be a Slack message timestamp' });

export const MessageBody = z
  .object({
    channel_id: ChannelId,
    text: z.string().max(40_000).regex(/\S/, { message: 'must not be blank' }),
    thread_ts: Ts.optional(),
  })
  .strict();
export const ReactionBody = z
  .object({
    channel_id: ChannelId,
    timestamp: Ts,
    // Slack names carry no colons (`thumbsup`, `+1`, `thumbsup::skin-tone-2`); `:thumbsup:` is accepted too,
    // and surrounding blanks: the pattern says exactly that (the OpenAPI document shows it), then they go.
    name: z
      .string()
      .regex(REACTION_NAME, { message: 'must be a reaction name' })
      .transform((s) => s.trim().replace(/^:(.*):$/, '$1')),
  })
  .strict();

export type ChatEmit =
  | { kind: 'chatapp.message'; body: z.infer<typeof MessageBody> }
  | { kind: 'chatapp.reaction'; body: z.infer<typeof ReactionBody> };

/** The chat emit kinds (spec §4.1) and their bodies. */
const schemas = { 'chatapp.message': MessageBody, 'chatapp.reaction': ReactionBody } as const;
export const CHAT_EMIT_KINDS = Object.keys(schemas) as ChatEmit['kind'][];

/** Validates synchronously, before any bucket or upstream call (a bad payload is `bad_config`). */
export function parseEmit(kind: string, body: Record<string, unknown>): ChatEmit {
  const schema = Object.hasOwn(schemas, kind) ? schemas[kind as ChatEmit['kind']] : null;
  if (schema === null) throw new BadConfig(`unknown chat emit kind ${JSON.stringify(kind)}`);
  const r = schema.safeParse(body);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new BadConfig(`${kind}: ${issue.path.join('.') || 'body'}: ${issue.message}`);
  }
  return { kind, body: r.data } as ChatEmit;
}

export type Permit =
  { ok: true; waitMs: number } | { ok: false; retryAfterMs: number; reason: 'channel' | 'workspace' | 'held' };

/** The bucket actors, as the emit path sees them. */
export interface EmitPermits {
  /** `takeId` makes a resent take answer its first permit instead of charging again. */
  take(teamId: string, channelId: string, takeId: string): Promise<Permit>;
  /** The write of `takeId` did not go out: the channel gets its token back. */
  refund(teamId: string, channelId: string, takeId: string): Promise<void>;
  /** Slack answered 429 for this channel: refuse its emits until `retryAfterMs` passed. */
  hold(teamId: string, channelId: string, retryAfterMs: number): Promise<void>;
}

export interface EmitContext {
  apiUrl: string;
  teamId: string;
  token: string;
  signal: AbortSignal;
  log: Logger;
  permits: EmitPermits;
}

export async function performEmit(
  ctx: EmitContext,
  emit: ChatEmit,
): Promise<{ provider_id: string; channel_id: string }> {
  const channel = emit.body.channel_id;
  const takeId = randomUUID();
  const permit = await ctx.permits.take(ctx.teamId, channel, takeId);
  if (!permit.ok) {
    const why = permit.reason === 'workspace' ? 'the workspace write budget is spent' : 'the channel is throttled';
    throw new RateLimited(`${why}; retry later`, permit.retryAfterMs / 1000, { details: { throttle: permit.reason } });
  }
  // A throttle must mean a write really went out (INTERFACE §8.5): one that never left is refunded.
  const refund = () =>
    ctx.permits
      .refund(ctx.teamId, channel, takeId)
      .catch((e: unknown) => ctx.log.warn({ err: e, channel }, 'channel token not refunded'));
  if (permit.waitMs > 0) {
    try {
      await sleep(permit.waitMs, undefined, { signal: ctx.signal });
    } catch (err) {
      await refund();
      throw new DeadlineExceeded('the emit deadline passed while waiting for a workspace token', { cause: err });
    }
  }
  const client = slackClient({ apiUrl: ctx.apiUrl, log: ctx.log, token: ctx.token, signal: ctx.signal });
  const method = emit.kind === 'chatapp.message' ? 'chat.postMessage' : 'reactions.add';
  try {
    if (emit.kind === 'chatapp.message') {
      const { text, thread_ts } = emit.body;
      const res = await client.chat.postMessage({ channel, text, ...(thread_ts ? { thread_ts } : {}) });
      if (typeof res.ts !== 'string') throw new UpstreamError('chat.postMessage answered without a ts');
      return { provider_id: res.ts, channel_id: channel };
    }
    const { timestamp, name } = emit.body;
    await client.reactions.add({ channel, timestamp, name });
    return { provider_id: reactionProviderId(channel, timestamp, name), channel_id: channel };
  } catch (err) {
    if (emit.kind === 'chatapp.reaction' && platformError(err) === 'already_reacted') {
      return { provider_id: reactionProviderId(channel, emit.body.timestamp, emit.body.name), channel_id: channel };
    }
    const retryAfterS = rateLimitedFor(err);
    if (retryAfterS === null && postedNothing(err)) await refund();
    if (retryAfterS !== null) {
      // INTERFACE §8.4: no retry before it; the hold outlives this call in the channel's actor.
      await ctx.permits
        .hold(ctx.teamId, channel, retryAfterS * 1000)
        .catch((e: unknown) => ctx.log.warn({ err: e, channel }, 'could not record the upstream hold'));
    }
    throw toSlackAppError(err, method, ctx.signal);
  }
}

/**
 * Slack answered `ok: false` (`channel_not_found`, `not_in_channel`, ...): nothing was
 * posted. A network error or an HTTP 5xx may have posted, so its token stays spent.
 */
function postedNothing(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'slack_webapi_platform_error';
}

/** INTERFACE §8.6: a reaction's receipt. */
function reactionProviderId(channelId: string, timestamp: string, name: string): string {
  return `${channelId}:${timestamp}:${name}`;
}
