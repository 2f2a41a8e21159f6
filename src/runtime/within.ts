/**
 * A bound on one wait (every wait on another system is bounded): `p`, or an `Error` naming
 * `what` once `ms` have passed. `p` itself is not cancelled; its late result is dropped.
 */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
