/**
 * What the repo indexer session (`indexer-session.ts`) is asked and answers (INTERFACE §6,
 * spec §8): its key, its messages and their answers, apart from the implementation so
 * callers (push sync, slash commands, wiring) depend on the contract only.
 */
import type { KeyOf } from '../../runtime/ports.js';
import type { ToolName } from '../../connectors/codehost/indexer/daemon-client.js';
import type { RpcFailureKind } from '../../connectors/codehost/indexer/json-rpc.js';

export const INDEXER_SESSION_KIND = 'indexer';

/** Where the repo is, when the caller knows (a webhook payload); otherwise the backfill's registry. */
export interface RepoHint {
  full_name: string;
  clone_url: string;
}

export type SyncAnswer =
  | { status: 'indexing' | 'ready' | 'failed'; error?: string }
  | { status: 'unchanged' | 'inactive' | 'removed' }
  | { status: 'capped'; used: number; cap: number };

export type ToolAnswer =
  | { ok: true; text: string }
  | { ok: false; kind: RpcFailureKind | 'capped' | 'removed' | 'no_daemon' | 'inactive'; message: string };

/**
 * `sync` indexes a sha (null: the default branch head); `tool` answers a slash command
 * through the daemon; `tick` (its own ticker) does due work; `resume` after a shard move.
 */
export type IndexerSessionProtocol = {
  sync: { msg: { sha?: string | null; repo?: RepoHint }; answer: SyncAnswer };
  tool: { msg: { name: ToolName; arguments: Record<string, string>; repo?: RepoHint }; answer: ToolAnswer };
  tick: { msg: object; answer: object };
  resume: { msg: object; answer: { ok: true } };
};

export function indexerSessionKey(installId: string, repoId: number): KeyOf<IndexerSessionProtocol> {
  return { kind: INDEXER_SESSION_KIND, id: [installId, String(repoId)] };
}
