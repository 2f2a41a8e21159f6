/**
 * The fake Slack's Web API methods, answering with Slack's real shapes: `{ok:true,...}`
 * or `{ok:false,error}` on HTTP 200, `missing_scope` with `needed`/`provided`, cursor
 * pagination in `response_metadata.next_cursor`.
 */
import {
  HISTORY_SCOPE,
  LIST_TYPE,
  READ_SCOPE,
  fail,
  ok,
  type Answer,
  channelObject,
  decodePage,
  encodePage,
  messageObject,
  nextTs,
  type FakeChannel,
  type FakeMessage,
  type FakeTeam,
  type FakeSlackWorld,
  type FakeToken,
  type Params,
} from './slack-model.js';
import { oauthAccess } from './slack-token-exchange.js';

type Authed = { token: FakeToken; team: FakeTeam } | { error: Answer };

function authed(fake: FakeSlackWorld, bearer: string | null, params: Params, scope?: string): Authed {
  const raw = bearer ?? params.token ?? null;
  if (!raw) return { error: fail('not_authed') };
  const token = fake.tokens.get(raw);
  if (!token || token.kind !== 'bot') return { error: fail('invalid_auth') };
  if (token.revoked) return { error: fail('token_revoked') };
  if (token.expiresAt !== undefined && token.expiresAt <= Date.now()) return { error: fail('token_expired') };
  if (scope && !token.scopes.includes(scope))
    return { error: fail('missing_scope', { needed: scope, provided: token.scopes.join(',') }) };
  return { token, team: fake.team(token.teamId) };
}

function page<T>(items: T[], params: Params, defaultLimit: number): { items: T[]; next: string } | null {
  const offset = decodePage(params.cursor);
  if (offset === null) return null;
  const limit = Math.max(1, Math.min(1000, Number(params.limit) || defaultLimit));
  const slice = items.slice(offset, offset + limit);
  return { items: slice, next: offset + limit < items.length ? encodePage(offset + limit) : '' };
}

function channelFor(a: { team: FakeTeam; token: FakeToken }, id: string | undefined): FakeChannel | Answer {
  const ch = id ? a.team.channels.get(id) : undefined;
  if (!ch) return fail('channel_not_found');
  return ch;
}
const isAnswer = (x: unknown): x is Answer => typeof x === 'object' && x !== null && 'body' in x;

export function callMethod(
  fake: FakeSlackWorld,
  method: string,
  params: Params,
  bearer: string | null,
  basic: { id: string; secret: string } | null,
): Answer {
  switch (method) {
    case 'oauth.v2.access':
      return oauthAccess(fake, params, basic);
    case 'auth.test': {
      const a = authed(fake, bearer, params);
      if ('error' in a) return a.error;
      return ok({
        url: `https://${a.team.name}.slack.example/`,
        team: a.team.name,
        user: 'bot',
        team_id: a.team.id,
        user_id: a.team.botUserId,
        bot_id: a.team.botId,
        is_enterprise_install: false,
      });
    }
    case 'auth.revoke': {
      const a = authed(fake, bearer, params);
      if ('error' in a) return a.error;
      a.token.revoked = true;
      return ok({ revoked: true });
    }
    case 'chat.postMessage':
      return postMessage(fake, params, bearer);
    case 'reactions.add': {
      const a = authed(fake, bearer, params, 'reactions:write');
      if ('error' in a) return a.error;
      const ch = channelFor(a, params.channel);
      if (isAnswer(ch)) return ch;
      const msg = findMessage(ch, params.timestamp);
      if (!msg) return fail('message_not_found');
      if (!params.name) return fail('invalid_name');
      msg.reactions ??= [];
      let r = msg.reactions.find((x) => x.name === params.name);
      if (!r) msg.reactions.push((r = { name: params.name, users: [] }));
      if (r.users.includes(a.team.botUserId)) return fail('already_reacted');
      r.users.push(a.team.botUserId);
      return ok({});
    }
    case 'conversations.list': {
      const types = (params.types || 'public_channel').split(',').map((t) => t.trim());
      const a = authed(fake, bearer, params);
      if ('error' in a) return a.error;
      for (const t of types) {
        const scope = READ_SCOPE[t];
        if (!scope) return fail('invalid_types');
        if (!a.token.scopes.includes(scope))
          return fail('missing_scope', { needed: scope, provided: a.token.scopes.join(',') });
      }
      const wanted = new Set(types.map((t) => LIST_TYPE[t]));
      const p = page(
        [...a.team.channels.values()].filter((c) => wanted.has(c.type)),
        params,
        100,
      );
      if (!p) return fail('invalid_cursor');
      return ok({ channels: p.items.map(channelObject), response_metadata: { next_cursor: p.next } });
    }
    case 'conversations.info': {
      const a = authed(fake, bearer, params);
      if ('error' in a) return a.error;
      const ch = channelFor(a, params.channel);
      if (isAnswer(ch)) return ch;
      return ok({ channel: channelObject(ch) });
    }
    case 'users.info': {
      const a = authed(fake, bearer, params, 'users:read');
      if ('error' in a) return a.error;
      const u = a.team.users?.get(params.user ?? '');
      if (!u) return fail('user_not_found');
      return ok({
        user: {
          id: u.id,
          team_id: a.team.id,
          name: u.name,
          deleted: false,
          real_name: u.real_name,
          is_bot: u.is_bot ?? false,
          updated: u.updated ?? 1_700_000_000,
          profile: { real_name: u.real_name, display_name: u.name },
        },
      });
    }
    case 'conversations.history':
    case 'conversations.replies': {
      const a = authed(fake, bearer, params);
      if ('error' in a) return a.error;
      const ch = channelFor(a, params.channel);
      if (isAnswer(ch)) return ch;
      const scope = HISTORY_SCOPE[ch.type];
      if (!a.token.scopes.includes(scope))
        return fail('missing_scope', { needed: scope, provided: a.token.scopes.join(',') });
      if (ch.historyError) return fail(ch.historyError);
      if (!ch.member) return fail('not_in_channel');
      if (method === 'conversations.history') {
        // Newest first, like Slack, between `oldest` and `latest` (exclusive unless `inclusive`).
        const p = page([...ch.messages].reverse().filter(inWindow(params)), params, 100);
        if (!p) return fail('invalid_cursor');
        return ok({
          messages: p.items.map((m) => messageObject(m)),
          has_more: p.next !== '',
          response_metadata: { next_cursor: p.next },
        });
      }
      const parent = ch.messages.find((m) => m.ts === params.ts);
      if (!parent) return fail('thread_not_found');
      // The parent first, then its replies after `oldest` (and up to `latest`).
      const p = page([parent, ...(parent.replies ?? []).filter(inWindow(params))], params, 100);
      if (!p) return fail('invalid_cursor');
      return ok({
        messages: p.items.map((m) => (m === parent ? messageObject(m) : messageObject(m, parent.ts))),
        has_more: p.next !== '',
        response_metadata: { next_cursor: p.next },
      });
    }
    case 'apps.connections.open': {
      const raw = bearer ?? params.token;
      const t = raw ? fake.tokens.get(raw) : undefined;
      if (!t || t.kind !== 'app') return fail(raw ? 'invalid_auth' : 'not_authed');
      return ok({ url: fake.socketUrl() });
    }
    default:
      return fail('unknown_method');
  }
}

/** Slack's `oldest` / `latest` / `inclusive` on history and replies; timestamps compare as numbers. */
function inWindow(params: Params): (m: FakeMessage) => boolean {
  const oldest = params.oldest ? Number(params.oldest) : -Infinity;
  const latest = params.latest ? Number(params.latest) : Infinity;
  const inclusive = params.inclusive === 'true' || params.inclusive === '1';
  return (m) => {
    const t = Number(m.ts);
    return inclusive ? t >= oldest && t <= latest : t > oldest && t < latest;
  };
}

function findMessage(ch: FakeChannel, ts: string | undefined): FakeMessage | undefined {
  for (const m of ch.messages) {
    if (m.ts === ts) return m;
    const r = m.replies?.find((x) => x.ts === ts);
    if (r) return r;
  }
  return undefined;
}

function postMessage(fake: FakeSlackWorld, params: Params, bearer: string | null): Answer {
  const a = authed(fake, bearer, params, 'chat:write');
  if ('error' in a) return a.error;
  const ch = channelFor(a, params.channel);
  if (isAnswer(ch)) return ch;
  if (!ch.member) return fail('not_in_channel');
  if (!params.text) return fail('no_text');
  const msg: FakeMessage = {
    ts: nextTs(),
    text: params.text,
    user: a.team.botUserId,
    bot_id: a.team.botId,
    app_id: fake.appId,
  };
  if (params.thread_ts) {
    const parent = ch.messages.find((m) => m.ts === params.thread_ts);
    if (!parent) return fail('thread_not_found');
    (parent.replies ??= []).push({ ...msg, thread_ts: parent.ts });
  } else {
    ch.messages.push(msg);
  }
  fake.posted.push({
    teamId: a.team.id,
    channel: ch.id,
    ts: msg.ts,
    text: msg.text,
    thread_ts: params.thread_ts,
    at: Date.now(),
  });
  fake.onPosted(a.team, ch, { ...msg, ...(params.thread_ts ? { thread_ts: params.thread_ts } : {}) });
  return ok({
    channel: ch.id,
    ts: msg.ts,
    message: { ...messageObject(msg, params.thread_ts), bot_profile: { app_id: fake.appId } },
  });
}
