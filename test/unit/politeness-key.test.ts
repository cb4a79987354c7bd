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
