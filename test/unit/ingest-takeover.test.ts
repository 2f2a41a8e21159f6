/**
 * unit: which of a dead owner's unsettled events hold their install's lane at takeover
 * (src/ingest/takeover.ts), with an in-memory store; and how an unsettled event's
 * key is read from its Nats-Msg-Id.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { decideTakeover, type UnsettledEvent } from '../../src/ingest/takeover.js';
import { eventIdOfMsgId, ingestMsgId } from '../../src/ingest/message.js';
import type { StoredEventKey, StoredEventsPort } from '../../src/runtime/ports.js';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';

function unsettled(seq: number, installId: string | null, eventId: string | null): UnsettledEvent {
  return { seq, subject: `ns.ingest.0.chatapp.${installId ?? 'bad.subject'}`, installId, eventId };
}

/** The events table as a set of `install:id`; records what it was asked. */
function memoryStore(stored: string[]): StoredEventsPort & { asked: StoredEventKey[][] } {
  const rows = new Set(stored);
  const asked: StoredEventKey[][] = [];
  return {
    asked,
    whichStored: async (keys) => {
      asked.push([...keys]);
      return keys.map((k) => rows.has(`${k.installId}:${k.id}`));
    },
  };
}

function logs() {
  const capture = new LogCapture();
  return { capture, log: createLogger({ level: 'debug', node: 'test' }, capture.stream) };
}

const seqs = (us: UnsettledEvent[]) => us.map((u) => u.seq);

describe('unit: takeover of unsettled ingest events', () => {
  it('only events the store does not hold block; stored ones of the same install do not', async () => {
    const { log } = logs();
    const store = memoryStore(['ia:a1', 'ia:a2', 'ib:b1']);
    const d = await decideTakeover(
      [unsettled(1, 'ia', 'a1'), unsettled(2, 'ib', 'b1'), unsettled(3, 'ia', 'a2'), unsettled(4, 'ib', 'b2')],
      store,
      log,
    );
    expect(seqs(d.stored)).toEqual([1, 2, 3]);
    expect(seqs(d.block)).toEqual([4]);
    // One lookup for the lot.
    expect(store.asked).toHaveLength(1);
  });

  it('an event whose key its message does not show always blocks, and is not asked about', async () => {
    const { log } = logs();
    const store = memoryStore(['ia:a1']);
    const d = await decideTakeover(
      [unsettled(1, 'ia', null), unsettled(2, null, null), unsettled(3, 'ia', 'a1')],
      store,
      log,
    );
    expect(seqs(d.block)).toEqual([1, 2]);
    expect(seqs(d.stored)).toEqual([3]);
    expect(store.asked).toEqual([[{ installId: 'ia', id: 'a1' }]]);
  });

  it('without a store, every unsettled event blocks (the behaviour before the lookup)', async () => {
    const { log } = logs();
    const d = await decideTakeover([unsettled(1, 'ia', 'a1'), unsettled(2, 'ia', 'a2')], null, log);
    expect(seqs(d.block)).toEqual([1, 2]);
    expect(d.stored).toEqual([]);
  });

  it('a store that fails makes every unsettled event block, with a warning', async () => {
    const { log, capture } = logs();
    const failing: StoredEventsPort = { whichStored: () => Promise.reject(new Error('connection refused')) };
    const d = await decideTakeover([unsettled(1, 'ia', 'a1'), unsettled(2, 'ib', 'b1')], failing, log);
    expect(seqs(d.block)).toEqual([1, 2]);
    expect(capture.find('could not tell which unsettled ingest events are stored', LOG_LEVEL.warn)).toHaveLength(1);
  });

  it('a store that does not answer in time makes every unsettled event block, with a warning', async () => {
    const { log, capture } = logs();
    let late!: (v: boolean[]) => void;
    const hanging: StoredEventsPort = { whichStored: () => new Promise((r) => (late = r)) };
    const d = await decideTakeover([unsettled(1, 'ia', 'a1'), unsettled(2, 'ia', 'a2')], hanging, log, 50);
    expect(seqs(d.block)).toEqual([1, 2]);
    const [line] = capture.find('could not tell which unsettled ingest events are stored', LOG_LEVEL.warn);
    expect(JSON.stringify(line?.err)).toMatch(/took over 50 ms/);
    // The answer arriving afterwards changes nothing.
    late([true, true]);
  });

  it('an answer of the wrong length is not trusted: every event blocks', async () => {
    const { log } = logs();
    const short: StoredEventsPort = { whichStored: async () => [true] };
    const d = await decideTakeover([unsettled(1, 'ia', 'a1'), unsettled(2, 'ia', 'a2')], short, log);
    expect(seqs(d.block)).toEqual([1, 2]);
  });

  it("reads the event id from the publisher's Nats-Msg-Id, and nothing from a digested or foreign one", () => {
    const install = '0b9f5a52-6f0e-4a53-9a49-3c2d3c1e9a11';
    expect(eventIdOfMsgId(install, ingestMsgId(install, 'message:C1:1.0'))).toBe('message:C1:1.0');
    // An event id may itself hold ':'; only the install prefix is cut.
    expect(eventIdOfMsgId(install, ingestMsgId(install, 'a:b:c'))).toBe('a:b:c');
    // Long ids are digested (no ':'): unreadable, so the event keeps blocking.
    expect(eventIdOfMsgId(install, ingestMsgId(install, 'x'.repeat(400)))).toBeNull();
    expect(eventIdOfMsgId(install, `other-install:e1`)).toBeNull();
    expect(eventIdOfMsgId(install, 'replay:ns:42')).toBeNull();
    expect(eventIdOfMsgId(install, null)).toBeNull();
    expect(eventIdOfMsgId(null, `${install}:e1`)).toBeNull();
  });
});
