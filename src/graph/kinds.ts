/** Node kinds and edge types of the knowledge graph (INTERFACE §5, §8.14). */

export const NODE_KINDS = [
  'chat.channel',
  'chat.user',
  'chat.message',
  'codehost.repository',
  'codehost.pull_request',
  'codehost.issue',
  'codehost.comment',
  'codehost.review',
  'codehost.commit',
  'codehost.user',
] as const;
export type NodeKind = (typeof NODE_KINDS)[number];

/**
 * Directions (INTERFACE §8.14): `in_channel` message → channel; `authored_by`
 * message/PR/issue/comment/review/commit → user; `reply_to` reply → parent; `reacted`
 * user → message; `in_repo` PR/issue → repository; `comment_on` comment → PR/issue;
 * `review_of` review → PR; `pushed_to` commit → repository.
 */
export const EDGE_TYPES = [
  'in_channel',
  'authored_by',
  'reply_to',
  'reacted',
  'in_repo',
  'comment_on',
  'review_of',
  'pushed_to',
] as const;
export type EdgeType = (typeof EDGE_TYPES)[number];
