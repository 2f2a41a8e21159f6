/**
 * The fake Slack's world: workspaces (teams), conversations, messages with threads,
 * tokens with scopes, expiry and revocation. Shapes follow Slack's Web API objects.
 */
import { randomBytes } from 'node:crypto';

export type ChannelType = 'channel' | 'group' | 'im' | 'mpim';

export interface FakeFile {
  id: string;
  name: string;
  mimetype: string;
  size: number;
  permalink: string;
}

export interface FakeMessage {
  ts: string;
  user?: string;
  bot_id?: string;
  app_id?: string;
  text: string;
  thread_ts?: string;
  subtype?: string;
  files?: FakeFile[];
  reactions?: Array<{ name: string; users: string[] }>;
  /** Replies, oldest first (thread parents only). */
  replies?: FakeMessage[];
}

export interface FakeChannel {
  id: string;
  name: string;
  type: ChannelType;
  /** Whether the bot is a member (conversations.list `is_member`). */
  member: boolean;
  /** Oldest first, top-level messages only; replies hang off their parent. */
  messages: FakeMessage[];
  /** An error every conversations.history / .replies call answers (e.g. `not_in_channel` after a kick). */
  historyError?: string;
}

/** A workspace member as users.info answers it. */
interface FakeUser {
  id: string;
  name: string;
  real_name: string;
  is_bot?: boolean;
  /** Epoch seconds of the last profile change. */
  updated?: number;
}

export interface FakeTeam {
  id: string;
  name: string;
  botUserId: string;
  botId: string;
  channels: Map<string, FakeChannel>;
  /** Members users.info knows (others answer user_not_found). */
  users?: Map<string, FakeUser>;
  /** Scopes the next consent grants (default: all the authorize URL asked for). */
  grantScopes?: string[];
  /** With token rotation, access tokens live this long. */
  rotationExpiresInS?: number;
}

export interface FakeToken {
  token: string;
  kind: 'bot' | 'app';
  teamId: string;
  scopes: string[];
  revoked: boolean;
  /** Epoch ms; rotating tokens only. */
  expiresAt?: number;
}

let tsCounter = 0;
/** Unique, increasing Slack timestamps. */
/** A Web API call's parameters (form or JSON body, query). */
export type Params = Record<string, string>;

/** One Web API answer: Slack's `{ok:true,...}` or `{ok:false,error}`, on HTTP 200 unless `status` says otherwise. */
export interface Answer {
  status?: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

export const fail = (error: string, extra: Record<string, unknown> = {}): Answer => ({
  body: { ok: false, error, ...extra },
});
export const ok = (body: Record<string, unknown>): Answer => ({ body: { ok: true, ...body } });

/** A message the bot posted (chat.postMessage). */
export interface PostedMessage {
  teamId: string;
  channel: string;
  ts: string;
  text: string;
  thread_ts?: string;
  at: number;
}

/**
 * What the Web API methods, the Events API deliveries and the Socket Mode server read and
 * change of the fake (slack-fake.ts implements it), so they need not import the fake itself.
 */
export interface FakeSlackWorld {
  readonly appId: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly teams: Map<string, FakeTeam>;
  readonly tokens: Map<string, FakeToken>;
  readonly codes: Map<string, { teamId: string; scopes: string[]; redirectUri: string }>;
  readonly refreshTokens: Map<string, string>;
  readonly refreshes: Array<{ teamId: string; at: number }>;
  readonly posted: PostedMessage[];
  team(id: string): FakeTeam;
  socketUrl(): string;
  onPosted(team: FakeTeam, ch: FakeChannel, msg: FakeMessage): void;
}

export function nextTs(): string {
  tsCounter++;
  return `${1_700_000_000 + tsCounter}.${String(tsCounter % 1_000_000).padStart(6, '0')}`;
}

export const randomId = (prefix: string) => `${prefix}${randomBytes(5).toString('hex').toUpperCase()}`;

export function channelObject(c: FakeChannel): Record<string, unknown> {
  const base = { id: c.id, created: 1_700_000_000, is_archived: false, is_org_shared: false };
  switch (c.type) {
    case 'channel':
      return {
        ...base,
        name: c.name,
        is_channel: true,
        is_group: false,
        is_im: false,
        is_mpim: false,
        is_private: false,
        is_member: c.member,
      };
    case 'group':
      return {
        ...base,
        name: c.name,
        is_channel: false,
        is_group: true,
        is_im: false,
        is_mpim: false,
        is_private: true,
        is_member: c.member,
      };
    case 'mpim':
      return {
        ...base,
        name: c.name,
        is_channel: false,
        is_group: false,
        is_im: false,
        is_mpim: true,
        is_private: true,
        is_member: c.member,
      };
    case 'im':
      return {
        ...base,
        is_im: true,
        is_channel: false,
        is_group: false,
        is_mpim: false,
        is_private: true,
        user: 'U0FRIEND',
        is_user_deleted: false,
      };
  }
}

/** The message object Slack returns in history/replies (thread fields on parents). */
export function messageObject(m: FakeMessage, parentTs?: string): Record<string, unknown> {
  const o: Record<string, unknown> = { type: 'message', ts: m.ts, text: m.text };
  if (m.user) o.user = m.user;
  if (m.bot_id) o.bot_id = m.bot_id;
  if (m.app_id) o.app_id = m.app_id;
  if (m.subtype) o.subtype = m.subtype;
  if (m.files) o.files = m.files.map((f) => ({ ...f, url_private: `https://files.example/${f.id}` }));
  if (m.reactions) o.reactions = m.reactions.map((r) => ({ ...r, count: r.users.length }));
  if (parentTs) o.thread_ts = parentTs;
  else if (m.replies && m.replies.length > 0) {
    o.thread_ts = m.ts;
    o.reply_count = m.replies.length;
    o.latest_reply = m.replies[m.replies.length - 1]!.ts;
  }
  return o;
}

export const HISTORY_SCOPE: Record<ChannelType, string> = {
  channel: 'channels:history',
  group: 'groups:history',
  im: 'im:history',
  mpim: 'mpim:history',
};
export const READ_SCOPE: Record<string, string> = {
  public_channel: 'channels:read',
  private_channel: 'groups:read',
  im: 'im:read',
  mpim: 'mpim:read',
};
export const LIST_TYPE: Record<string, ChannelType> = {
  public_channel: 'channel',
  private_channel: 'group',
  im: 'im',
  mpim: 'mpim',
};

/** Opaque page cursors, as Slack's are. */
export const encodePage = (offset: number) => Buffer.from(`offset:${offset}`).toString('base64');
export function decodePage(cursor: unknown): number | null {
  if (cursor === undefined || cursor === '') return 0;
  const m = /^offset:(\d+)$/.exec(Buffer.from(String(cursor), 'base64').toString('utf8'));
  return m ? Number(m[1]) : null;
}
