/**
 * "Does this dependency still answer?" asked on behalf of many waiters at once (INTERFACE
 * §9.3), and `whileDependenciesAnswer`, which the router wraps around each ask on a request's
 * path so a silent NATS or Postgres ends it with 503. Every request awaiting an actor's answer checks
 * NATS and Postgres every 250 ms; a node with a thousand emits in flight must not put a
 * thousand PINGs or `SELECT 1`s on the wire, so a check already under way is joined rather
 * than repeated, and its outcome stands for the waiters that ask within REUSE_MS of it: their
 * rounds are not in step, and a check that takes a millisecond would otherwise be made again
 * for nearly each of them (or, with the server refusing, a connection tried for each). A check
 * that fails (the connection is being re-established, the server refused) is not an answer:
 * the waiter checks again after its pause, and only its time left since the last answer
 * decides, as for a check that hangs.
 */
import { budgetSpent, currentWaitBudget } from '../wait-budget.js';

/** How long a settled check's outcome stands for the waiters that ask after it. */
export const REUSE_MS = 100;

export class LivenessProbe {
  private inFlight: Promise<boolean> | null = null;
  private last: { at: number; ok: boolean } | null = null;
  private readonly now: () => number;

  /** `what` names the dependency in the 503 (`"Postgres did not answer within …"`). */
  constructor(
    readonly what: string,
    private readonly check: () => Promise<unknown>,
    opts: { now?: () => number } = {},
  ) {
    this.now = opts.now ?? (() => performance.now());
  }

  /** True when the dependency answered, false when the check failed; unsettled while it hangs. */
  answered(): Promise<boolean> {
    if (this.inFlight) return this.inFlight;
    const last = this.last;
    if (last !== null && this.now() - last.at < REUSE_MS) return Promise.resolve(last.ok);
    const settled = (ok: boolean) => {
      this.inFlight = null;
      this.last = { at: this.now(), ok };
      return ok;
    };
    this.inFlight = this.check().then(
      () => settled(true),
      () => settled(false),
    );
    return this.inFlight;
  }
}

/** Between checks that NATS and Postgres still answer, while an ask on a request's path awaits its answer. */
const PROBE_MS = 250;

/**
 * INTERFACE §9.3 on a request's path (a wait budget is running, src/wait-budget.ts): while the
 * actor's answer is awaited, NATS (PING, PONG) and Postgres (`SELECT 1`) are asked at once
 * and every 250 ms. One of them silent for what the request has left ends the ask with 503
 * `unavailable`, within the request's 2 s: so does a Postgres stall that begins inside the
 * actor's own work, after the route's reads. A refused check (a connection being
 * re-established) is silence too, but is tried again after the pause: one that answers before
 * the time is up ends the silence, so a dependency back within it costs the request nothing.
 * The actor is not stopped: what it wrote upstream it records once Postgres answers again, and
 * an `Idempotency-Key` retry gets that receipt (edge/idempotency.ts keeps the claim after a
 * 503). An actor that takes long (an upstream call, a rate bucket) while both answer is waited
 * for up to the ask's own timeout. An answer spends nothing: an emit waiting 10 s for its
 * workspace token checks 40 times, and a loaded event loop must not turn those into a spent
 * budget. Silence does: what a dependency has not answered for when the ask ends is spent, so
 * an attempt resent after it (an idempotent ask's window) has only the rest. Outside a
 * request, only the ask's own timeout.
 */
export async function whileDependenciesAnswer<T>(dependencies: LivenessProbe[], asked: Promise<T>): Promise<T> {
  const budget = currentWaitBudget();
  if (!budget) return asked;
  let timer: NodeJS.Timeout | undefined;
  let over = false;
  // Per dependency, since when it has not answered (a check hung or refused); null once it answers.
  const silentSince: Array<number | null> = dependencies.map(() => null);
  // Silence spends the budget (an answer does not): an idempotent ask resent after its
  // attempt window must not get the request's 2 s again while NATS still says nothing.
  let silenceSpent = false;
  const spendSilence = () => {
    if (silenceSpent) return;
    silenceSpent = true;
    const now = performance.now();
    budget.spend(Math.max(0, ...silentSince.map((t) => (t === null ? 0 : now - t))));
  };
  // The 503, once the silence is spent: its `waited_ms` counts it.
  const spent = (what: string) => (spendSilence(), budgetSpent(what, budget));
  const silent = new Promise<never>((_, reject) => {
    /** The one silent longest among `among` (indexes of dependencies). */
    const longestSilent = (among: number[]) =>
      dependencies[among.sort((a, b) => (silentSince[a] ?? Infinity) - (silentSince[b] ?? Infinity))[0] ?? 0]!;
    const probe = async () => {
      const start = performance.now();
      for (const i of silentSince.keys()) silentSince[i] ??= start;
      const longest = Math.min(...silentSince.map((t) => t ?? start));
      const leftMs = budget.leftMs() - (start - longest);
      // Refused until its time was up (a refusal settles before any timer could).
      if (leftMs <= 0) return reject(spent(longestSilent([...dependencies.keys()]).what));
      let cut: NodeJS.Timeout | undefined;
      const timeLeft = new Promise<false>((r) => (cut = setTimeout(() => r(false), leftMs)));
      const answered = dependencies.map(() => false);
      const silentOne = await Promise.race([
        Promise.all(dependencies.map((d, i) => d.answered().then((ok) => (answered[i] = ok)))).then(() => null),
        timeLeft.then(() => longestSilent([...dependencies.keys()].filter((i) => !answered[i]))),
      ]);
      clearTimeout(cut);
      if (over) return;
      if (silentOne) return reject(spent(silentOne.what));
      // A refused check is checked again after the pause (no later than its time is up), its silence still counting.
      for (const [i, ok] of answered.entries()) if (ok) silentSince[i] = null;
      const pause = answered.every(Boolean) ? PROBE_MS : Math.min(PROBE_MS, leftMs - (performance.now() - start));
      timer = setTimeout(() => void probe(), Math.max(0, pause));
    };
    void probe();
  });
  try {
    return await Promise.race([asked, silent]);
  } finally {
    over = true;
    clearTimeout(timer);
    spendSilence();
    // An ask given up on may still settle; nobody waits for it any more.
    asked.catch(() => undefined);
  }
}
