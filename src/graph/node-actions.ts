/**
 * Acting on a node: the graph's write-back (INTERFACE §3 `POST /api/v1/graph/nodes/{id}/actions`).
 * An action is turned into the emit of the node's connector, with the coordinates read
 * from the node, and then runs exactly as `POST .../installs/{install_id}/emit` does
 * (same install actor, same validation, same errors).
 *
 * | node kind               | action           | emit                                                  |
 * |-------------------------|------------------|-------------------------------------------------------|
 * | `chat.message`          | `reply {text}`   | `chatapp.message {channel_id, text, thread_ts}`: in   |
 * |                         |                  | the message's thread (its `thread_ts` if a reply,     |
 * |                         |                  | else its own `ts`)                                    |
 * | `chat.message`          | `react {name}`   | `chatapp.reaction {channel_id, timestamp: ts, name}`  |
 * | `codehost.pull_request` | `reply {text}`   | `codehost.issue_comment {repo_full_name,              |
 * |                         |                  | issue_number, body: text}`                            |
 * | `codehost.issue`        | `reply {text}`   | same                                                  |
 * | `codehost.pull_request` | `label {labels}` | `codehost.label {repo_full_name, issue_number,        |
 * |                         |                  | labels}`                                              |
 * | `codehost.issue`        | `label {labels}` | same                                                  |
 *
 * Any other pair is a `bad_request` (an action that does not fit the node's kind).
 */
import { z } from 'zod';
import { BadRequest } from '../errors.js';
import type { GraphNode } from './queries.js';

export const ReplyAction = z.object({ action: z.literal('reply'), text: z.string().min(1).max(100_000) }).strict();
export const ReactAction = z.object({ action: z.literal('react'), name: z.string().min(1).max(100) }).strict();
export const LabelAction = z
  .object({ action: z.literal('label'), labels: z.array(z.string().max(100)).min(1).max(100) })
  .strict();
export const NodeAction = z.discriminatedUnion('action', [ReplyAction, ReactAction, LabelAction]);
export type NodeAction = z.infer<typeof NodeAction>;

export interface EmitRequest {
  kind: string;
  body: Record<string, unknown>;
}

export function emitForAction(
  // Any kind: the ones that take no action are refused here.
  node: Pick<GraphNode, 'external_id' | 'props'> & { kind: string },
  action: NodeAction,
): EmitRequest {
  const misfit = () =>
    new BadRequest(`action ${action.action} does not fit a ${node.kind} node`, { details: { node_kind: node.kind } });
  switch (node.kind) {
    case 'chat.message': {
      const { channelId, ts, threadTs } = chatCoordinates(node);
      if (action.action === 'reply')
        return {
          kind: 'chatapp.message',
          body: { channel_id: channelId, text: action.text, thread_ts: threadTs ?? ts },
        };
      if (action.action === 'react')
        return { kind: 'chatapp.reaction', body: { channel_id: channelId, timestamp: ts, name: action.name } };
      throw misfit();
    }
    case 'codehost.pull_request':
    case 'codehost.issue': {
      const { repoFullName, number } = codehostCoordinates(node);
      if (action.action === 'reply')
        return {
          kind: 'codehost.issue_comment',
          body: { repo_full_name: repoFullName, issue_number: number, body: action.text },
        };
      if (action.action === 'label')
        return {
          kind: 'codehost.label',
          body: { repo_full_name: repoFullName, issue_number: number, labels: action.labels },
        };
      throw misfit();
    }
    default:
      throw misfit();
  }
}

/** `{team_id}:{channel_id}:{ts}` (INTERFACE §5); props win when present. */
function chatCoordinates(node: Pick<GraphNode, 'external_id' | 'props'>): {
  channelId: string;
  ts: string;
  threadTs: string | null;
} {
  const parts = node.external_id.split(':');
  const channelId = str(node.props.channel_id) ?? parts[1];
  const ts = str(node.props.ts) ?? parts[2];
  if (!channelId || !ts) throw new BadRequest('this chat message has no channel and timestamp to act on');
  return { channelId, ts, threadTs: str(node.props.thread_ts) };
}

/** `{repo_full_name}#{number}` (INTERFACE §5); props win when present. */
function codehostCoordinates(node: Pick<GraphNode, 'external_id' | 'props'>): { repoFullName: string; number: number } {
  const hash = node.external_id.lastIndexOf('#');
  const repoFullName = str(node.props.repo_full_name) ?? (hash > 0 ? node.external_id.slice(0, hash) : null);
  const fromProps = node.props.number;
  const number = typeof fromProps === 'number' ? fromProps : Number(node.external_id.slice(hash + 1));
  if (!repoFullName || !Number.isSafeInteger(number) || number < 1)
    throw new BadRequest('this node has no repository and number to act on');
  return { repoFullName, number };
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 ? v : null;
}
