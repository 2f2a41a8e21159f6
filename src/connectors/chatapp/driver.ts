/**
 * The chat driver the install actor calls (connectors/driver.ts): emit, health, the
 * upstream and local halves of an uninstall, and the self-emit filter inside the ingest
 * transaction. It runs inside the install's single activation, so its writes for one
 * install never race each other (an emit's record is written before the echo of that
 * emit can be ingested).
 */
import type pg from 'pg';
import type { Config } from '../../config.js';
import { AppError, ErrorCodes, Unavailable, UpstreamError } from '../../errors.js';
import type { ConnectorDriver, DriverContext, SelfEmitDrop } from '../driver.js';
import { getBotIdentity, releaseClaim, type BotIdentity } from '../../store/chat-claims.js';
import type { Queryable } from '../../store/db.js';
import { recordEmitted } from '../../store/emitted.js';
import type { BotCredentials } from './bot-token.js';
import { forgetDeleted, withoutForgotten } from './forget-deleted.js';
import { parseEmit, performEmit, type EmitPermits } from './emit.js';
import { selfEmitVerdicts, type Judged } from './self-emit-filter.js';
import { namedIds, type NamedIds } from './named-ids.js';
import { slackClient } from './slack-client.js';
import { DEAD_TOKEN_ERRORS, isDeadToken, toSlackAppError } from './slack-errors.js';

export interface ChatDriverDeps {
  config: Readonly<Config>;
  pool: pg.Pool;
  credentials: BotCredentials;
  permits: EmitPermits;
  /** INTERFACE §9.5: hands ids an event named to the install's name lookups (never awaited by ingest). */
  wantNames?(installId: string, ids: NamedIds): Promise<unknown>;
}

/** Ids already handed to the name lookups by this process: spares an actor request per message. */
const NAMES_SENT_MAX = 50_000;

const CHAT_KINDS = new Set(['message', 'message_changed', 'message_deleted', 'reaction_added', 'reaction_removed']);
/** Bot identities never change for an install; a small cache spares a query per event. */
const IDENTITY_CACHE_MAX = 10_000;

export function chatDriver(deps: ChatDriverDeps): ConnectorDriver {
  const apiUrl = deps.config.chatapp.apiUrl;
  const identities = new Map<string, BotIdentity>();
  const namesSent = new Set<string>();

  const identityOf = async (q: Queryable, installId: string): Promise<BotIdentity | null> => {
    const hit = identities.get(installId);
    if (hit) return hit;
    const found = await getBotIdentity(q, installId);
    if (found) {
      if (identities.size >= IDENTITY_CACHE_MAX) identities.delete(identities.keys().next().value as string);
      identities.set(installId, found);
    }
    return found;
  };

  return {
    id: 'chatapp',

    async emit(ctx: DriverContext, kind, body) {
      const emit = parseEmit(kind, body);
      const { install } = ctx;
      // Read before the permit, so a granted write goes out at once and posts stay 1 s apart upstream.
      const secret = await deps.credentials.get(install, ctx.signal);
      const done = await performEmit(
        {
          apiUrl,
          teamId: install.external_id,
          token: secret.bot_token,
          signal: ctx.signal,
          log: ctx.log,
          permits: deps.permits,
        },
        emit,
      );
      try {
        // spec §4.2: the record feeds Tier 2; failing to write it never undoes the post.
        await recordEmitted(deps.pool, {
          installId: install.install_id,
          tenantId: install.tenant_id,
          kind,
          repoFullName: done.channel_id,
          providerId: done.provider_id,
          byActorLogin: secret.bot_user_id,
          idempotencyKey: ctx.idempotencyKey,
        });
      } catch (err) {
        ctx.log.error({ err, kind, providerId: done.provider_id }, 'emitted record not written; the post stands');
      }
      return { provider_id: done.provider_id };
    },

    // INTERFACE §10.5: a deleted message is forgotten in the transaction that stores its deletion.
    withoutForgotten: (tx, batches) =>
      withoutForgotten(
        tx,
        batches.map((b) => ({ install: b.ctx.install, events: b.events })),
      ),
    forget: (tx, batches) =>
      forgetDeleted(
        tx,
        batches.map((b) => ({ install: b.ctx.install, events: b.events })),
      ),

    /** INTERFACE §3: `auth.test` round trip; any failure is 503 with Slack's message. */
    async health(ctx) {
      try {
        const secret = await deps.credentials.get(ctx.install, ctx.signal);
        const res = await slackClient({
          apiUrl,
          log: ctx.log,
          token: secret.bot_token,
          signal: ctx.signal,
        }).auth.test();
        return {
          status: 'healthy',
          team_id: res.team_id ?? ctx.install.external_id,
          team: res.team ?? null,
          bot_user_id: res.user_id ?? null,
        };
      } catch (err) {
        const e = err instanceof AppError ? err : toSlackAppError(err, 'auth.test', ctx.signal);
        throw new Unavailable(`chat workspace unreachable: ${e.message}`, { cause: err, details: e.details });
      }
    },

    /** spec §3.1: `auth.revoke` first; a token that is already dead counts as revoked (INTERFACE §8.3). */
    async revokeUpstream(ctx) {
      let token: string;
      try {
        // With rotation, an expired token cannot revoke anything: refresh first, so the
        // app's access really ends upstream.
        token = (await deps.credentials.get(ctx.install, ctx.signal)).bot_token;
      } catch (err) {
        if (err instanceof AppError && err.code === ErrorCodes.installNotActive) return;
        const upstream = err instanceof AppError ? err.details?.upstream_error : undefined;
        if (typeof upstream === 'string' && (DEAD_TOKEN_ERRORS.has(upstream) || upstream === 'invalid_refresh_token')) {
          ctx.log.info({ upstream }, 'bot token cannot be refreshed: already dead upstream; uninstalling locally');
          return;
        }
        throw err;
      }
      try {
        await slackClient({ apiUrl, log: ctx.log, token, signal: ctx.signal }).auth.revoke();
      } catch (err) {
        if (isDeadToken(err)) {
          ctx.log.info('bot token was already dead upstream; uninstalling locally');
          return;
        }
        // INTERFACE §3 DELETE: any other refusal (a 429 included) is 502 and nothing changes locally.
        const e = toSlackAppError(err, 'auth.revoke', ctx.signal);
        if (e.kind === 'UpstreamError' || e.kind === 'DeadlineExceeded') throw e;
        throw new UpstreamError(e.message, {
          cause: err,
          details: { ...e.details, ...(e.retryAfterS ? { retry_after_s: e.retryAfterS } : {}) },
        });
      }
    },

    /** spec §3.1: the claim goes in the same transaction as the status and credentials. */
    async uninstallLocally(tx, ctx) {
      await releaseClaim(tx, ctx.install.install_id);
    },

    /**
     * INTERFACE §9.5: the users and channels this event named go to the install's name
     * lookups. Fire and forget: ingest of the install's next events never waits on it, and
     * a lost request is made again at the id's next mention (the graph is the cache).
     */
    afterStored(ctx, event) {
      if (!deps.wantNames) return;
      const ids = namedIds(event.kind, event.payload);
      const fresh = (type: string) => (id: string) => {
        const k = `${ctx.install.install_id}:${type}:${id}`;
        if (namesSent.has(k)) return false;
        if (namesSent.size >= NAMES_SENT_MAX) namesSent.clear();
        namesSent.add(k);
        return true;
      };
      const want = { users: ids.users.filter(fresh('u')), channels: ids.channels.filter(fresh('c')) };
      if (want.users.length === 0 && want.channels.length === 0) return;
      deps.wantNames(ctx.install.install_id, want).catch((err: unknown) => {
        for (const id of want.users) namesSent.delete(`${ctx.install.install_id}:u:${id}`);
        for (const id of want.channels) namesSent.delete(`${ctx.install.install_id}:c:${id}`);
        ctx.log.debug({ err }, 'name lookup request not delivered; the next mention asks again');
      });
    },

    async selfEmitFilter(tx, batches) {
      // Every install's events that the filter reads, with its bot; one Tier-2 lookup for all.
      const asked: Array<Judged & { batch: number; index: number }> = [];
      for (const [b, { ctx, events }] of batches.entries()) {
        const filtered = events.map(
          (e) => CHAT_KINDS.has(e.kind) && typeof e.payload === 'object' && e.payload !== null,
        );
        if (!filtered.some(Boolean)) continue;
        const installId = ctx.install.install_id;
        const bot = await identityOf(tx, installId);
        if (!bot) {
          ctx.log.warn({ events: events.length }, 'no bot identity for this install; the self-emit filter cannot run');
          continue;
        }
        for (const [i, e] of events.entries()) {
          if (filtered[i])
            asked.push({ installId, bot, kind: e.kind, payload: e.payload as Judged['payload'], batch: b, index: i });
        }
      }
      const out = batches.map(({ events }) => events.map((): SelfEmitDrop | null => null));
      if (asked.length === 0) return out;
      const verdicts = await selfEmitVerdicts(tx, asked);
      for (const [k, a] of asked.entries()) {
        const verdict = verdicts[k]!;
        if (verdict === 'keep') continue;
        const { ctx, events } = batches[a.batch]!;
        ctx.log.debug({ eventId: events[a.index]!.id, verdict }, 'self-emit filter dropped our own write');
        out[a.batch]![a.index] = { tier: verdict === 'own_author' ? 1 : 2, reason: verdict };
      }
      return out;
    },
  };
}
