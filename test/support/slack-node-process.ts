/** Starts `slack-node-child.ts` as a separate process and waits for its URL; `kill()` is SIGKILL. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./slack-node-child.ts', import.meta.url));

export interface NodeProcess {
  url: string;
  kill(): Promise<void>;
}

export function startNodeProcess(env: Record<string, string>, timeoutMs = 30_000): Promise<NodeProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`node process did not start: ${stderr}`));
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      const { url } = JSON.parse(out.slice(0, nl)) as { url: string };
      resolve({
        url,
        async kill() {
          child.kill('SIGKILL');
          await exited;
          process.removeListener('exit', killOnExit);
        },
      });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`node process exited (${code}): ${stderr}`));
    });
  });
}
