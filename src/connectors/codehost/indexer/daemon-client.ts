/**
 * The indexer daemon's methods (INTERFACE §6), typed: the four slash-command tools in the
 * MCP `tools/call` shape, and the index lifecycle (`index/sync`, `index/status`). Replies
 * are validated; anything off-shape is a `bad_reply` failure, never a throw.
 */
import { z } from 'zod';
import type { IndexStatus } from '../../../store/repo-index-state.js';
import { rpcCall, type RpcFailure, type RpcOptions } from './json-rpc.js';

export type ToolName = 'service_explain' | 'service_impact' | 'service_slice' | 'service_query';
/** What the daemon reports of a repo's index: the stored status, bar `pending` (never indexed yet). */
export type DaemonIndexStatus = Exclude<IndexStatus, 'pending'>;

export type DaemonOutcome<T> = ({ ok: true } & T) | { ok: false; failure: RpcFailure };

export interface SyncParams {
  repo_full_name: string;
  clone_url: string;
  /** A fresh installation token; sent, never stored outside the encrypted credentials (INTERFACE §6). */
  access_token: string;
  sha: string | null;
}

const toolResult = z.object({
  content: z.array(z.object({ type: z.string(), text: z.string().optional() }).passthrough()),
  isError: z.boolean().optional(),
});
const syncResult = z.object({ status: z.enum(['indexing', 'ready', 'failed']), sha: z.string().nullable().optional() });
const statusResult = z.object({
  status: z.enum(['indexing', 'ready', 'failed']),
  last_indexed_sha: z.string().nullable().optional(),
  progress: z.unknown().optional(),
});

export async function callTool(
  url: string,
  name: ToolName,
  args: Record<string, string>,
  opts: RpcOptions,
): Promise<DaemonOutcome<{ text: string }>> {
  const out = await rpcCall(url, 'tools/call', { name, arguments: args }, opts);
  if (!out.ok) return out;
  const r = toolResult.safeParse(out.result);
  if (!r.success) return badReply('tools/call');
  const text = r.data.content
    .flatMap((c) => (c.type === 'text' && typeof c.text === 'string' ? [c.text] : []))
    .join('\n\n');
  // MCP: a tool-level failure is a result with isError, not a JSON-RPC error.
  if (r.data.isError)
    return {
      ok: false,
      failure: { kind: 'rpc_error', message: `the indexer daemon reported an error: ${text.slice(0, 500)}` },
    };
  return { ok: true, text };
}

export async function syncIndex(
  url: string,
  params: SyncParams,
  opts: RpcOptions,
): Promise<DaemonOutcome<{ status: DaemonIndexStatus; sha: string | null }>> {
  const out = await rpcCall(url, 'index/sync', params, opts);
  if (!out.ok) return out;
  const r = syncResult.safeParse(out.result);
  if (!r.success) return badReply('index/sync');
  return { ok: true, status: r.data.status, sha: r.data.sha ?? null };
}

export async function indexStatus(
  url: string,
  opts: RpcOptions,
): Promise<DaemonOutcome<{ status: DaemonIndexStatus; lastIndexedSha: string | null; progress: unknown }>> {
  const out = await rpcCall(url, 'index/status', {}, opts);
  if (!out.ok) return out;
  const r = statusResult.safeParse(out.result);
  if (!r.success) return badReply('index/status');
  return {
    ok: true,
    status: r.data.status,
    lastIndexedSha: r.data.last_indexed_sha ?? null,
    progress: r.data.progress ?? null,
  };
}

function badReply(method: string): { ok: false; failure: RpcFailure } {
  return {
    ok: false,
    failure: { kind: 'bad_reply', message: `the indexer daemon's ${method} reply has an unexpected shape` },
  };
}
