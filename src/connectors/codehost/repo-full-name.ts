/**
 * INTERFACE §9.3: `repo_full_name` is `owner/repo` in GitHub's alphabet (`[A-Za-z0-9-]`
 * owner, `[A-Za-z0-9._-]` repo, neither `.` nor `..`), so no value can move an upstream
 * path (`../..` would leave `CODEHOST_API_URL`'s prefix with the installation token).
 * One pattern, so the emit schema's OpenAPI document shows exactly this rule.
 */
export const REPO_FULL_NAME = /^[A-Za-z0-9-]{1,100}\/(?!\.\.?$)[A-Za-z0-9._-]{1,100}$/;

export function isRepoFullName(s: string): boolean {
  return REPO_FULL_NAME.test(s);
}
