/**
 * "Does this dependency still answer?" asked on behalf of many waiters at once (INTERFACE
 * §9.3, router.ts `whileDependenciesAnswer`). Every request awaiting an actor's answer checks
 * NATS and Postgres every 250 ms; a node with a thousand emits in flight must not put a
 * thousand PINGs or `SELECT 1`s on the wire, so a check already under way is joined rather
 * than repeated. A check that fails (the connection is being re-established, the server
 * refused) is not an answer: the waiter checks again after its pause, and only its time left
 * since the last answer decides, as for a check that hangs.
 */
export class LivenessProbe {
  private inFlight: Promise<boolean> | null = null;

  /** `what` names the dependency in the 503 (`"Postgres did not answer within …"`). */
  constructor(
    readonly what: string,
    private readonly check: () => Promise<unknown>,
  ) {}

  /** True when the dependency answered, false when the check failed; unsettled while it hangs. */
  answered(): Promise<boolean> {
    this.inFlight ??= this.check().then(
      () => {
        this.inFlight = null;
        return true;
      },
      () => {
        this.inFlight = null;
        return false;
      },
    );
    return this.inFlight;
  }
}
