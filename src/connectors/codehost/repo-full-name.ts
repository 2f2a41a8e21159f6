/**
 * INTERFACE §9.3: `repo_full_name` is `owner/repo` in GitHub's alphabet (`[A-Za-z0-9-]`
 * owner, `[A-Za-z0-9._-]` repo, neither `.` nor `..`), so no value can move an upstream
 * path (`../..` would leave `CODEHOST_API_URL`'s prefix with the installation token).
 */
const OWNER = /^[A-Za-z0-9-]{1,100}$/;
const REPO = /^[A-Za-z0-9._-]{1,100}$/;

export function isRepoFullName(s: string): boolean {
  const parts = s.split('/');
  if (parts.length !== 2) return false;
  const [owner, repo] = parts as [string, string];
  return OWNER.test(owner) && REPO.test(repo) && repo !== '.' && repo !== '..';
}
