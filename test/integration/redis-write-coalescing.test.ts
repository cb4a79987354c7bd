// Our Redis client hands the commands of one event-loop turn to the kernel
// in one socket write (src/redis/write-coalescing.ts), against a real Redis.
// The socket's own write hooks are counted: without the coalescing, Node
// writes each command on its own, and these counts grow with the commands.
import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { createRedis } from '../../src/redis/client';

let redis: Redis;
beforeAll(async () => {
  redis = createRedis(process.env.REDIS_URL!) as Redis;
  await redis.ping();
});
afterAll(async () => {
  const keys = await redis.keys(key('*'));
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

const key = (s: string) => `coalesce-${process.pid}-${s}`;

/** Counts the socket's calls into the kernel-facing write paths (one per write, or one per batch). */
function countWrites(socket: Socket): { writes: () => number; restore: () => void } {
  const s = socket as Socket & { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
  const write = s._write;
  const writev = s._writev;
  let n = 0;
  s._write = function (this: Socket, ...a: unknown[]) {
    n++;
    return write.apply(this, a);
  };
  s._writev = function (this: Socket, ...a: unknown[]) {
    n++;
    return writev.apply(this, a);
  };
  return {
    writes: () => n,
    restore: () => {
      s._write = write;
      s._writev = writev;
    },
  };
}

const streamOf = (r: Redis) => (r as unknown as { stream: Socket }).stream;

test('200 commands issued in one turn reach the socket in one write, and every reply goes to its command', async () => {
  const counter = countWrites(streamOf(redis));
  try {
    const sets = Array.from({ length: 100 }, (_, i) => redis.set(key(`a${i}`), `v${i}`));
    const gets = Array.from({ length: 100 }, (_, i) => redis.get(key(`a${i}`)));
    expect(await Promise.all(sets)).toEqual(Array(100).fill('OK'));
    expect(await Promise.all(gets)).toEqual(Array.from({ length: 100 }, (_, i) => `v${i}`));
    expect(counter.writes()).toBe(1);
  } finally {
    counter.restore();
  }
});

test('commands issued by promise continuations of the same turn join the write; the next turn writes again', async () => {
  // The test body itself runs as a promise continuation (jest-circus calls it
  // from one), as our commands mostly are: the uncork's tick then waits for
  // the microtask queue. From the synchronous part of a timer callback, the
  // continuations' commands would be a second write (src/redis/write-coalescing.ts).
  const counter = countWrites(streamOf(redis));
  try {
    const first = redis.set(key('b'), '1');
    // Continuations run in this turn's microtask queue, before the uncork.
    const chained = Promise.resolve()
      .then(() => redis.incr(key('b')))
      .then(() => undefined);
    const second = redis.incr(key('b'));
    await Promise.all([first, chained, second]);
    expect(counter.writes()).toBe(1);
    // A later turn (after I/O) is a write of its own.
    expect(await redis.get(key('b'))).toBe('3');
    expect(counter.writes()).toBe(2);
  } finally {
    counter.restore();
  }
});

test('a reconnect opens a new socket, whose writes are coalesced too', async () => {
  const before = streamOf(redis);
  // The server drops our connection; ioredis reconnects on its own.
  const id = await redis.client('ID');
  const admin = createRedis(process.env.REDIS_URL!) as Redis;
  try {
    await admin.client('KILL', 'ID', String(id));
  } finally {
    admin.disconnect();
  }
  await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
  const after = streamOf(redis);
  expect(after).not.toBe(before);
  const counter = countWrites(after);
  try {
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => redis.set(key(`c${i}`), String(i))));
    expect(replies).toEqual(Array(50).fill('OK'));
    expect(counter.writes()).toBe(1);
  } finally {
    counter.restore();
  }
});
