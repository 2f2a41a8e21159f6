/**
 * The webhook routes the bench drives (`--route github,slack`; issue 12 sets its targets
 * per route): where requests go, how one is built and signed, and how a run's events are
 * found in Postgres afterwards. GitHub: `issues.opened` deliveries (webhook-request.ts),
 * ids = the run's prefix + a uuid. Slack: `event_callback` channel messages
 * (slack-request.ts), ids = `message:C<run tag>…`.
 */
import { EVENTS_PATH } from '../../src/edge/routes/chatapp/events.js';
import { CODEHOST_WEBHOOK_PATH } from '../../src/edge/routes/codehost/webhooks.js';
import { signedSlackEvent, slackIdPrefix } from './slack-request.js';
import { signedDelivery, type SignedDelivery } from './webhook-request.js';

const ROUTES = ['github', 'slack'] as const;
export type Route = (typeof ROUTES)[number];

export interface RouteTraffic {
  route: Route;
  path: string;
  /** The connector the route's events are stored under. */
  connector: 'codehost' | 'chatapp';
  /** The `i`-th request of the run whose events' ids start with `idPrefix(prefix)`. */
  request(i: number, prefix: string): SignedDelivery;
  idPrefix(prefix: string): string;
  /** Installs the load spreads over, in order (GitHub installation ids or Slack team ids). */
  installs: number;
}

/** `--route github,slack` → the routes in the order given; unknown names are an error. */
export function parseRoutes(arg: string): Route[] {
  const routes = arg.split(',').map((r) => r.trim());
  const bad = routes.filter((r) => !(ROUTES as readonly string[]).includes(r));
  if (routes.length === 0 || bad.length > 0) throw new Error(`--route takes ${ROUTES.join(',')}, not ${arg}`);
  return [...new Set(routes)] as Route[];
}

function githubTraffic(secret: string, installationIds: number[]): RouteTraffic {
  return {
    route: 'github',
    path: CODEHOST_WEBHOOK_PATH,
    connector: 'codehost',
    installs: installationIds.length,
    request: (i, prefix) =>
      signedDelivery({
        secret,
        installationId: installationIds[i % installationIds.length]!,
        n: i,
        deliveryPrefix: prefix,
      }),
    idPrefix: (prefix) => prefix,
  };
}

export function slackTraffic(signingSecret: string, teamIds: string[]): RouteTraffic {
  return {
    route: 'slack',
    path: EVENTS_PATH,
    connector: 'chatapp',
    installs: teamIds.length,
    request: (i, prefix) => signedSlackEvent({ signingSecret, teamId: teamIds[i % teamIds.length]!, n: i, prefix }),
    idPrefix: slackIdPrefix,
  };
}

/** The same traffic over the first `n` installs only. */
export function trafficFor(
  route: Route,
  secrets: { github: string; slack: string },
  installs: {
    github: number[];
    slack: string[];
  },
  n: number,
): RouteTraffic {
  return route === 'github'
    ? githubTraffic(secrets.github, installs.github.slice(0, n))
    : slackTraffic(secrets.slack, installs.slack.slice(0, n));
}
