/**
 * Answers a slash command (spec §4.4) as a durable effect (INTERFACE §9.4) of an
 * `issue_comment.created` event (the reply is an issue comment) or a
 * `pull_request_review_comment.created` event (the reply goes in the same review thread,
 * `POST /repos/{o}/{r}/pulls/{n}/comments/{comment_id}/replies`). Once per GitHub
 * installation: only its oldest active install replies (INTERFACE §8.7), asking its own
 * indexer session for the tool call.
 *
 * Idempotent on redelivery: the reply is recorded in the emitted-event records under
 * kind `codehost.slash_reply` and provider id `slash-reply-to:{comment_id}` (review
 * comments: `slash-reply-to:review-comment:{comment_id}`), besides the comment record the
 * write itself leaves for the Tier-2 filter. A redelivery finding that record does nothing;
 * one finding no record (a crash between the POST and the record) looks for the reply's
 * hidden marker among the issue's (or PR's review) comments before posting. Daemon errors
 * and timeouts are replies that say what failed (INTERFACE §6); a GitHub refusal that
 * retrying cannot fix is logged, anything else is thrown so the event is redelivered.
 */
import type pg from 'pg';
import type { ActorAsk, IngestEvent } from '../../runtime/ports.js';
import { AppError, isRetryable } from '../../errors.js';
import { recordEmitted, wasEmittedBy } from '../../store/emitted.js';
import { findActiveInstalls } from '../../store/installs.js';
import { indexerSessionKey, type ToolAnswer } from '../../actors/codehost/indexer-protocol.js';
import type { DriverContext } from '../../connectors/driver.js';
import type { CodehostWrite } from '../../connectors/codehost/emit-schema.js';
import { installRefOf, type InstallRef } from '../../connectors/codehost/github-client.js';
import type { WriteOutcome } from '../../connectors/codehost/perform-write.js';
import { isRepoFullName } from '../../connectors/codehost/repo-full-name.js';
import { PR_SUMMARY_SENTINEL, SLASH_REPLY_SENTINEL } from '../../connectors/codehost/sentinels.js';
import type { ReplyPlace } from '../../connectors/codehost/slash/find-reply.js';
import { parseSlashCommand, type SlashVerb } from '../../connectors/codehost/slash/parse-command.js';
import { renderReply, replyMarker, type ReplyContent } from '../../connectors/codehost/slash/render-reply.js';

const SLASH_REPLY_KIND = 'codehost.slash_reply';

export interface SlashDeps {
  pool: pg.Pool;
  actors: ActorAsk;
  /** One write through the installation's write actor (paced, recorded for Tier 2). */
  write(install: InstallRef, w: CodehostWrite, signal: AbortSignal): Promise<WriteOutcome>;
  /** Whether a comment carrying `marker`, written by this App since `since`, is there already. */
  replyExists(
    install: InstallRef,
    place: ReplyPlace,
    marker: string,
    since: string | null,
    signal: AbortSignal,
  ): Promise<boolean>;
  /** How long the indexer session may take over a tool call (it times the daemon out itself). */
  toolTimeoutMs: number;
}

interface CommentPayload {
  comment?: {
    id?: unknown;
    body?: unknown;
    created_at?: unknown;
    in_reply_to_id?: unknown;
    user?: { type?: unknown } | null;
  };
  issue?: { number?: unknown };
  pull_request?: { number?: unknown };
  repository?: { id?: unknown; full_name?: unknown; clone_url?: unknown };
  sender?: { type?: unknown };
}

const TOOLS: Record<
  Exclude<SlashVerb, 'help'>,
  { name: 'service_explain' | 'service_impact' | 'service_slice' | 'service_query'; arg: string }
> = {
  explain: { name: 'service_explain', arg: 'symbol' },
  impact: { name: 'service_impact', arg: 'symbol' },
  slice: { name: 'service_slice', arg: 'path' },
  query: { name: 'service_query', arg: 'query' },
};

/** The command of a comment event we should answer, or null (not a command, a bot, one of our replies). */
export function slashCommandOf(event: IngestEvent) {
  const review = event.kind === 'pull_request_review_comment.created';
  if (event.kind !== 'issue_comment.created' && !review) return null;
  const p = event.payload as CommentPayload;
  const body = p.comment?.body;
  if (typeof body !== 'string') return null;
  // spec §6.3 Tier 1 drops these at ingest already; checked again so a reply can never answer a reply.
  if (p.sender?.type === 'Bot' || p.comment?.user?.type === 'Bot') return null;
  if (body.includes(SLASH_REPLY_SENTINEL) || body.includes(PR_SUMMARY_SENTINEL)) return null;
  const command = parseSlashCommand(body);
  const commentId = p.comment?.id;
  const number = review ? p.pull_request?.number : p.issue?.number;
  const repoId = p.repository?.id;
  const fullName = p.repository?.full_name;
  if (!command || (typeof commentId !== 'number' && typeof commentId !== 'string') || typeof number !== 'number')
    return null;
  if (typeof repoId !== 'number' || typeof fullName !== 'string' || !isRepoFullName(fullName)) return null;
  // GitHub takes replies to a thread's first comment only: a command that is itself a reply is
  // answered at its thread's root.
  const inReplyTo = p.comment?.in_reply_to_id;
  const threadRoot = !review
    ? null
    : typeof inReplyTo === 'number' && Number.isSafeInteger(inReplyTo)
      ? inReplyTo
      : typeof commentId === 'number'
        ? commentId
        : null;
  if (review && threadRoot === null) return null;
  const cloneUrl =
    typeof p.repository?.clone_url === 'string' ? p.repository.clone_url : `https://github.com/${fullName}.git`;
  const postedAt = typeof p.comment?.created_at === 'string' ? p.comment.created_at : null;
  const place: ReplyPlace = { repo_full_name: fullName, number, in: review ? 'review_comments' : 'issue' };
  return {
    command,
    commentId: String(commentId),
    threadRoot,
    place,
    postedAt,
    repo: { id: repoId, full_name: fullName, clone_url: cloneUrl },
  };
}

type Found = NonNullable<ReturnType<typeof slashCommandOf>>;

/** The reply as a write: an issue comment, or a reply in the command's review thread. */
function replyWrite(found: Found, body: string): CodehostWrite {
  return found.threadRoot === null
    ? { kind: 'codehost.issue_comment', repo_full_name: found.repo.full_name, issue_number: found.place.number, body }
    : {
        kind: 'codehost.review_comment_reply',
        repo_full_name: found.repo.full_name,
        pr_number: found.place.number,
        comment_id: found.threadRoot,
        body,
      };
}

export async function answerSlashCommand(
  deps: SlashDeps,
  ctx: DriverContext,
  event: IngestEvent,
  info: { inserted: boolean },
): Promise<void> {
  const found = slashCommandOf(event);
  if (!found) return;
  const { install, log, signal } = ctx;
  if (install.status !== 'active') return;
  const owners = await findActiveInstalls(deps.pool, 'codehost', install.external_id);
  if (owners[0]?.install_id !== install.install_id) return;

  const ref = installRefOf(install);
  const key =
    found.place.in === 'issue'
      ? `slash-reply-to:${found.commentId}`
      : `slash-reply-to:review-comment:${found.commentId}`;
  const marker = replyMarker(found.commentId);
  if (await wasEmittedBy(deps.pool, install.install_id, key)) return;
  if (!info.inserted && (await deps.replyExists(ref, found.place, marker, found.postedAt, signal))) {
    await remember(deps, install, found, key);
    return;
  }

  const content = await contentFor(deps, install.install_id, found);
  const body = renderReply(content, found.commentId);
  try {
    await deps.write(ref, replyWrite(found, body), signal);
  } catch (err) {
    if (isRetryable(err)) throw err;
    log.warn(
      { err: { message: (err as Error).message }, repo: found.repo.full_name, number: found.place.number },
      'slash-command reply not posted: GitHub refused it',
    );
    return;
  }
  await remember(deps, install, found, key).catch((err: unknown) =>
    log.error(
      { err, commentId: found.commentId },
      'slash reply posted but not recorded; a redelivery finds it by its marker',
    ),
  );
}

async function contentFor(deps: SlashDeps, installId: string, found: Found): Promise<ReplyContent> {
  const { command } = found;
  if (command.verb === 'unknown') return { type: 'help', unknownWord: command.word };
  if (command.verb === 'help') return { type: 'help' };
  if (command.argument === '') return { type: 'usage', verb: command.verb };
  const tool = TOOLS[command.verb];
  let answer: ToolAnswer;
  try {
    answer = await deps.actors.ask(
      indexerSessionKey(installId, found.repo.id),
      {
        type: 'tool',
        name: tool.name,
        arguments: { [tool.arg]: command.argument },
        repo: { full_name: found.repo.full_name, clone_url: found.repo.clone_url },
      },
      { timeoutMs: deps.toolTimeoutMs + 15_000 },
    );
  } catch (err) {
    const code = err instanceof AppError ? err.code : 'internal';
    return { type: 'failure', command, what: `the indexer session did not answer (${code})` };
  }
  if (answer.ok) return { type: 'answer', command, text: answer.text };
  if (answer.kind === 'capped' || answer.kind === 'removed') return { type: 'not_indexed', reason: answer.message };
  return { type: 'failure', command, what: answer.message };
}

async function remember(
  deps: SlashDeps,
  install: { install_id: string; tenant_id: string },
  found: Found,
  key: string,
): Promise<void> {
  await recordEmitted(deps.pool, {
    installId: install.install_id,
    tenantId: install.tenant_id,
    kind: SLASH_REPLY_KIND,
    repoFullName: found.repo.full_name,
    issueOrPrNumber: found.place.number,
    providerId: key,
  });
}
