/** Markers the service puts in its own comments (spec §1, §4.4, §6.3). */

/** spec §1: the auto-managed PR summary comment carries this. */
export const PR_SUMMARY_SENTINEL = '<!-- service:pr-summary -->';
/** spec §4.4: slash-command replies carry this so they never retrigger a command. */
export const SLASH_REPLY_SENTINEL = '<!-- service:slash-reply -->';

/** GitHub refuses issue and review comment bodies longer than this many characters. */
export const GITHUB_COMMENT_MAX_CHARS = 65_536;
