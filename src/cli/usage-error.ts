/** Bad arguments: the `connectors` command prints the message and exits 2 (INTERFACE §1). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
