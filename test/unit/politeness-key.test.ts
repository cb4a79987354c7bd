// --politeness-key ip: the clock key of a host is its address, and a host
// pinned with --resolve is at its pin, whatever the default port its URLs use.
import { parseResolveEntries } from '../../src/http/resolve-overrides';
import { PolitenessKeys } from '../../src/politeness/politeness-key';

test('ip: a pinned https host (443, no port in its host key) is keyed by its pin', async () => {
  const keys = new PolitenessKeys('ip', parseResolveEntries(['secure.test:443:192.0.2.7', 'plain.test:80:192.0.2.8', 'odd.test:8443:192.0.2.9']));
  expect(await keys.keyFor('secure.test')).toBe('ip:192.0.2.7');
  expect(await keys.keyFor('plain.test')).toBe('ip:192.0.2.8');
  expect(await keys.keyFor('odd.test:8443')).toBe('ip:192.0.2.9');
  // A pin is per port: another port of the host is not pinned by it.
  expect(await keys.keyFor('192.0.2.1:8443')).toBe('ip:192.0.2.1');
});

test('host and domain keys need no address', async () => {
  const none = parseResolveEntries([]);
  expect(await new PolitenessKeys('host', none).keyFor('a.example.com:8080')).toBe('a.example.com:8080');
  expect(await new PolitenessKeys('domain', none).keyFor('a.example.com')).toBe('domain:example.com');
});

test('ip: the address cache keeps the most recent hosts within its bound and drops expired ones, oldest first', async () => {
  let now = 1_000_000;
  const keys = new PolitenessKeys('ip', parseResolveEntries([]), { maxEntries: 3, now: () => now });
  const hosts = ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4', '192.0.2.5'];
  const first = hosts.map((h) => keys.keyFor(h));
  expect(await Promise.all(first)).toEqual(hosts.map((h) => `ip:${h}`));
  // Past the bound the oldest went, not all: the newest three are still cached (the same answer, not a new lookup).
  expect(keys.cachedHosts).toBe(3);
  for (const i of [2, 3, 4]) expect(keys.keyFor(hosts[i]!)).toBe(first[i]);
  expect(keys.keyFor(hosts[0]!)).not.toBe(first[0]);
  expect(keys.cachedHosts).toBe(3);
  // A minute later every entry has expired: the next lookup drops them all, and the host is looked up again.
  now += 61_000;
  const again = keys.keyFor(hosts[4]!);
  expect(again).not.toBe(first[4]);
  expect(await again).toBe('ip:192.0.2.5');
  expect(keys.cachedHosts).toBe(1);
});
