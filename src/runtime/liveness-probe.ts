/**
 * "Does this dependency still answer?" asked on behalf of many waiters at once (INTERFACE
 * §9.3, router.ts `whileDependenciesAnswer`). Every request awaiting an actor's answer checks
 * NATS and Postgres every 250 ms; a node with a thousand emits in flight must not put a
 * thousand PINGs or `SELECT 1`s on the wire, so a check already under way is joined rather
 * than repeated, and its outcome stands for the waiters that ask within REUSE_MS of it: their
 * rounds are not in step, and a check that takes a millisecond would otherwise be made again
 * for nearly each of them (or, with the server refusing, a connection tried for each). A check
 * that fails (the connection is being re-established, the server refused) is not an answer:
 * the waiter checks again after its pause, and only its time left since the last answer
 * decides, as for a check that hangs.
 */

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
