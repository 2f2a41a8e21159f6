/**
 * The parts of GitHub's webhook payloads (as delivered, INTERFACE §4) and of the PR-diff
 * backfill event (spec §2.3) the graph reads. Objects are not strict: GitHub adds fields
 * freely, and the graph only needs these.
 */
import { z } from 'zod';

const Num = z.number().int().nonnegative();
const Text = z.string().nullish();

export const User = z.object({
  login: z.string().min(1),
  id: Num.optional(),
  type: z.string().optional(),
  html_url: z.string().optional(),
});
export type User = z.infer<typeof User>;

export const Repository = z.object({
  id: Num,
  full_name: z.string().min(1),
  html_url: z.string().optional(),
  private: z.boolean().optional(),
});
export type Repository = z.infer<typeof Repository>;

const Label = z.union([z.object({ name: z.string() }), z.string()]);

export const PullRequest = z.object({
  number: Num,
  title: z.string(),
  state: z.string(),
  body: Text,
  html_url: z.string().optional(),
  updated_at: z.string(),
  user: User.nullish(),
  head: z.object({ sha: z.string(), ref: z.string().optional() }),
  base: z.object({ ref: z.string().optional() }).optional(),
  draft: z.boolean().optional(),
  merged: z.boolean().nullish(),
  merged_at: z.string().nullish(),
  labels: z.array(Label).optional(),
});
export type PullRequest = z.infer<typeof PullRequest>;

/** Also the `issue` of an `issue_comment` on a pull request (then `pull_request` is set). */
export const Issue = z.object({
  number: Num,
  title: z.string(),
  state: z.string().optional(),
  body: Text,
  html_url: z.string().optional(),
  updated_at: z.string(),
  user: User.nullish(),
  labels: z.array(Label).optional(),
  pull_request: z.object({}).passthrough().nullish(),
});
export type Issue = z.infer<typeof Issue>;

export const Comment = z.object({
  id: Num,
  body: Text,
  html_url: z.string().optional(),
  updated_at: z.string(),
  user: User.nullish(),
  path: z.string().nullish(),
  line: Num.nullish(),
  side: z.string().nullish(),
  commit_id: z.string().nullish(),
  in_reply_to_id: Num.nullish(),
});
export type Comment = z.infer<typeof Comment>;

const Review = z.object({
  id: Num,
  state: z.string(),
  body: Text,
  html_url: z.string().optional(),
  submitted_at: z.string().nullish(),
  commit_id: z.string().nullish(),
  user: User.nullish(),
});

const Commit = z.object({
  id: z.string().min(1),
  message: z.string(),
  timestamp: z.string(),
  url: z.string().optional(),
  author: z.object({ name: z.string().optional(), username: z.string().nullish() }).optional(),
});

export const PullRequestEvent = z.object({ pull_request: PullRequest, repository: Repository });
export const IssuesEvent = z.object({ issue: Issue, repository: Repository });
/** `issues.transferred`: the issue as it was, and where it went (`changes.new_issue`, `changes.new_repository`). */
export const IssueTransferredEvent = z.object({
  issue: Issue,
  repository: Repository,
  changes: z.object({ new_issue: Issue, new_repository: Repository }),
});
export const IssueCommentEvent = z.object({ issue: Issue, comment: Comment, repository: Repository });
export const ReviewCommentEvent = z.object({ pull_request: PullRequest, comment: Comment, repository: Repository });
export const ReviewEvent = z.object({ pull_request: PullRequest, review: Review, repository: Repository });
export const PushEvent = z.object({
  ref: z.string(),
  repository: Repository.extend({ pushed_at: z.union([z.number(), z.string()]).nullish() }),
  commits: z.array(Commit),
  head_commit: Commit.nullish(),
});

/** spec §2.3 / INTERFACE §8.10: `repo_id` and `pr_number` are numbers; no `diff` when oversized. */
export const BackfillDiffEvent = z.object({
  repo_id: Num,
  repo_full_name: z.string().min(1),
  pr_number: Num,
  oversized: z.boolean(),
  diff: z.string().optional(),
});

/** INTERFACE §9.5: one PR as the backfill's pulls listing gave it (GitHub's field names). */
export const BackfillPullEvent = z.object({
  repo_id: Num,
  repo_full_name: z.string().min(1),
  pr_number: Num,
  pull_request: PullRequest,
});

export function labelNames(labels: Array<z.infer<typeof Label>> | undefined): string[] | undefined {
  return labels?.map((l) => (typeof l === 'string' ? l : l.name));
}
