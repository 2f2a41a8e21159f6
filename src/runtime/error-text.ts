/**
 * INTERFACE §9.4: a dead letter keeps the real cause. Kernel and boundary wrappers
 * ("Internal: internal error") say nothing, so the cause chain is followed to what threw.
 */
export function errorText(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    if (text !== 'Internal: internal error') parts.push(text);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.length > 0 ? parts.join(' <- caused by ') : 'Internal: internal error';
}
