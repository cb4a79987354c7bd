import type { Socket } from 'node:net';
import type Redis from 'ioredis';
import type { Cluster } from 'ioredis';

/**
 * Sends the commands a process issues within one turn of the event loop in
 * one socket write.
 *
 * ioredis writes every command to its socket on its own, and Node tries each
 * write as a syscall at once: in a many-hosts crawl (bench scenario k, about
 * 37 commands a host from the workers) those writes were 11 % of a worker's
 * main thread. ioredis's own answer, auto-pipelining, is off
 * (src/redis/client.ts says why: it crashed workers, and on a cluster it
 * mixes slots). This only corks the socket at a turn's first write and
 * uncorks it on the next tick, so Node hands what was written meanwhile to
 * the kernel in one writev. When the first write comes from a promise
 * continuation (most of ours), that tick runs once the microtask queue has
 * drained, and every continuation of the turn joins in; when it comes from
 * the synchronous part of a timer or I/O callback, the tick runs before the
 * microtasks, and their commands go in a second write. ioredis still sends and
 * matches every command and reply as before, in order: only how the bytes
 * reach the kernel changes, and nothing waits on a timer. The price: a
 * command waits for the rest of its turn's synchronous work before it leaves.
 */
export function coalesceWrites(socket: Socket): void {
  if (coalesced.has(socket)) return;
  coalesced.add(socket);
  const write = socket.write;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    if (!corked) {
      corked = true;
      socket.cork();
      // A tick queued from a microtask runs after the microtask queue drains,
      // so commands issued by promise continuations in this turn join in.
      process.nextTick(uncork);
    }
    return write.apply(this, args);
  } as Socket['write'];
}

const coalesced = new WeakSet<Socket>();

/** Coalesces the writes of every connection the client opens: a reconnect opens a new socket, a cluster one per node. */
export function coalesceClientWrites(client: Redis | Cluster): void {
  const onRedis = (redis: Redis) => {
    const patch = () => {
      const stream = (redis as unknown as { stream?: unknown }).stream;
      // A TLS socket is a net.Socket too; anything else (a test double) is left alone.
      if (stream && typeof (stream as Socket).cork === 'function') coalesceWrites(stream as Socket);
    };
    redis.on('connect', patch);
    patch();
  };
  if ((client as Cluster).isCluster) (client as Cluster).on('+node', onRedis);
  else onRedis(client as Redis);
}
