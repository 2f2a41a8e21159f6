/**
 * A Server-Sent Events client for tests, over fetch: the events of a stream in arrival order
 * (`id`, `event`, `data`), and the comment lines counted apart. Parsing as the WHATWG
 * EventSource does: blocks end at a blank line, `:` lines are comments.
 */
interface SseEvent {
  id: string | null;
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: Headers;
  events: SseEvent[];
  comments: number;
  /** Resolves when the server ended the stream (or close() was called). */
  ended: Promise<void>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const ctl = new AbortController();
  const res = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: ctl.signal });
  const stream: SseStream = {
    status: res.status,
    headers: res.headers,
    events: [],
    comments: 0,
    ended: Promise.resolve(),
    close: () => ctl.abort(),
  };
  if (!res.body || !res.headers.get('content-type')?.startsWith('text/event-stream')) return stream;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  stream.ended = (async () => {
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        let end: number;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          parseBlock(block, stream);
        }
      }
    } catch {
      // Aborted by close(), or the server went away.
    }
  })();
  return stream;
}

function parseBlock(block: string, stream: SseStream): void {
  let id: string | null = null;
  let event = 'message';
  const data: string[] = [];
  let any = false;
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      stream.comments++;
      continue;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    any = true;
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (any) stream.events.push({ id, event, data: data.join('\n') });
}
