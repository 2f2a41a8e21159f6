/**
 * The indexer daemon URL of one `(install, repo)` (spec §4.4, INTERFACE §6): built from
 * `SERVICE_INDEXER_DAEMON_URL_TEMPLATE` by substituting `{install}` (the install id) and
 * `{repo}` (the numeric repo id).
 *
 * Refused (a value, never a throw), before any request:
 * - ids that are not a canonical install id (lowercase uuid) or a positive integer repo id;
 * - a template where `{install}` or `{repo}` is not exactly once in the host or the path,
 *   or where both land in the same DNS label or the same path segment (one daemon per
 *   `(install, repo)`: two ids sharing a label could make two pairs share a daemon);
 * - a result with a DNS label over 63 characters or a host over 253 (RFC 1035 §2.3.4).
 */

export type DaemonUrl = { ok: true; url: string } | { ok: false; reason: string };

const INSTALL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const REPO_ID = /^[1-9][0-9]{0,15}$/;
const MAX_LABEL = 63;
const MAX_HOST = 253;
/** Stand-ins that survive URL parsing unchanged (lowercase letters only), to see where each id lands. */
const PROBE = { install: 'qqinstallprobeqq', repo: 'qqrepoprobeqq' } as const;

type Place = { in: 'host'; index: number } | { in: 'path'; index: number };

export function daemonUrl(template: string, installId: string, repoId: number | string): DaemonUrl {
  const repo = String(repoId);
  if (!INSTALL_ID.test(installId)) return { ok: false, reason: 'install id is not a canonical uuid' };
  if (!REPO_ID.test(repo) || !Number.isSafeInteger(Number(repo)))
    return { ok: false, reason: 'repo id is not a positive integer' };
  const shape = checkTemplate(template);
  if (!shape.ok) return shape;

  const raw = template.split('{install}').join(installId).split('{repo}').join(repo);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'the substituted template is not a URL' };
  }
  const host = url.hostname;
  if (host.length > MAX_HOST) return { ok: false, reason: `host is longer than ${MAX_HOST} characters` };
  if (!host.startsWith('[')) {
    for (const label of host.split('.')) {
      if (label.length > MAX_LABEL)
        return { ok: false, reason: `DNS label "${label.slice(0, 20)}…" is longer than ${MAX_LABEL} characters` };
      if (label.startsWith('-') || label.endsWith('-'))
        return { ok: false, reason: 'a DNS label starts or ends with "-"' };
    }
  }
  return { ok: true, url: url.toString() };
}

/** The template's shape alone (also checked once at start, so a bad setting is named early). */
export function checkTemplate(template: string): { ok: true } | { ok: false; reason: string } {
  for (const name of ['install', 'repo'] as const) {
    const n = template.split(`{${name}}`).length - 1;
    if (n !== 1) return { ok: false, reason: `{${name}} must appear exactly once (found ${n})` };
  }
  let url: URL;
  try {
    url = new URL(template.replace('{install}', PROBE.install).replace('{repo}', PROBE.repo));
  } catch {
    return { ok: false, reason: 'template is not an absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'template must be http(s)' };
  const install = placeOf(url, PROBE.install);
  const repo = placeOf(url, PROBE.repo);
  if (install === null) return { ok: false, reason: '{install} must be inside a DNS label or a path segment' };
  if (repo === null) return { ok: false, reason: '{repo} must be inside a DNS label or a path segment' };
  if (install.in === repo.in && install.index === repo.index) {
    return {
      ok: false,
      reason: `{install} and {repo} must land in separate ${install.in === 'host' ? 'DNS labels' : 'path segments'}`,
    };
  }
  return { ok: true };
}

function placeOf(url: URL, probe: string): Place | null {
  // Anywhere else (userinfo, port, query, fragment) is refused: those do not address a daemon.
  for (const part of [url.username, url.password, url.search, url.hash]) if (part.includes(probe)) return null;
  const labels = url.hostname.split('.');
  const label = labels.findIndex((l) => l.includes(probe));
  if (label >= 0) return { in: 'host', index: label };
  const segments = url.pathname.split('/');
  const segment = segments.findIndex((s) => s.includes(probe));
  return segment >= 0 ? { in: 'path', index: segment } : null;
}
