/**
 * Shutdown on SIGINT/SIGTERM. The handlers go in before anything starts, so a signal that
 * arrives while the node is still starting (or in the gap right after it printed its
 * address) ends in the same orderly stop instead of Node's default of dying on the spot
 * and leaving child servers behind. A second signal exits at once.
 */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const first = (sig: NodeJS.Signals) => {
      process.removeListener('SIGINT', first);
      process.removeListener('SIGTERM', first);
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
      resolve(sig);
    };
    process.on('SIGINT', first);
    process.on('SIGTERM', first);
  });
}
