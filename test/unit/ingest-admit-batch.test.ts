/** Which of a lane's taken events go into one delivery (ingest/batches.ts). */
import type { JsMsg } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { admitBatch } from '../../src/ingest/batches.js';
import type { IngestSettler, Ready, Tracked } from '../../src/ingest/settle.js';

function tracked(seq: number): Tracked {
  return { msg: { seq } as JsMsg, lane: 'i1', installId: 'i1' };
}

type Outcome = { bytes: number; tries?: number } | 'settled' | 'retry';

/** A settler whose `admit` answers per stream sequence, recording what it was asked. */
function settler(outcomes: Record<number, Outcome>): Pick<IngestSettler, 'admit'> & { asked: number[] } {
  const asked: number[] = [];
  return {
    asked,
    async admit(t) {
      asked.push(t.msg.seq);
      const o = outcomes[t.msg.seq] ?? { bytes: 10 };
      if (o === 'settled' || o === 'retry') return o;
      return { t, bytes: o.bytes, tries: o.tries ?? 1 } as Ready;
    },
  };
}

const seqs = (xs: { msg: { seq: number } }[]) => xs.map((x) => x.msg.seq);
const readySeqs = (rs: Ready[]) => rs.map((r) => r.t.msg.seq);

describe('admitBatch', () => {
  it('takes events until they reach the byte cap; the rest goes back without being admitted', async () => {
    const s = settler({ 1: { bytes: 40 }, 2: { bytes: 40 }, 3: { bytes: 40 } });
    const { ready, rest } = await admitBatch(s, [1, 2, 3, 4].map(tracked), 100);
    expect(readySeqs(ready)).toEqual([1, 2, 3]);
    expect(seqs(rest)).toEqual([4]);
    // Admitting counts an attempt: the event left out was never asked.
    expect(s.asked).toEqual([1, 2, 3]);
  });

  it('a first event over the cap still goes, alone', async () => {
    const s = settler({ 1: { bytes: 500 } });
    const { ready, rest } = await admitBatch(s, [1, 2].map(tracked), 100);
    expect([readySeqs(ready), seqs(rest)]).toEqual([[1], [2]]);
  });

  it('a settled event takes no room; an event to retry ends the batch and the events after it wait', async () => {
    const s = settler({ 2: 'settled', 3: 'retry' });
    const { ready, rest } = await admitBatch(s, [1, 2, 3, 4, 5].map(tracked), 1000);
    expect([readySeqs(ready), seqs(rest)]).toEqual([[1], [4, 5]]);
  });

  it('a suspect event (attempted more than twice) runs alone: next time when it is not first', async () => {
    const later = settler({ 2: { bytes: 10, tries: 3 } });
    const a = await admitBatch(later, [1, 2, 3].map(tracked), 1000);
    expect([readySeqs(a.ready), seqs(a.rest)]).toEqual([[1], [2, 3]]);
    const first = settler({ 1: { bytes: 10, tries: 3 } });
    const b = await admitBatch(first, [1, 2, 3].map(tracked), 1000);
    expect([readySeqs(b.ready), seqs(b.rest)]).toEqual([[1], [2, 3]]);
  });

  it('takes the whole batch when it fits', async () => {
    const { ready, rest } = await admitBatch(settler({}), [1, 2, 3].map(tracked), 1000);
    expect([readySeqs(ready), rest]).toEqual([[1, 2, 3], []]);
  });
});
