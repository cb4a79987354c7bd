import net from 'node:net';

/** A port the OS considers free right now on loopback. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** True when something accepts TCP connections on host:port. */
export function portOpen(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, isDead?: () => string | null): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    const dead = isDead?.();
    if (dead) throw new Error(`${what} exited before it was ready: ${dead}`);
    if (Date.now() > deadline) throw new Error(`${what} was not ready after ${Math.round(timeoutMs / 1000)} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
