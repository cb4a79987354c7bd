// Why a session ends under the campaign's control as it last read it
// (activities/session-control.ts): a stop (or its host given up: its
// workflow ended by hand) first, then a pause of the campaign or of the
// host, then settings newer than its own.
import { stopFor, type SessionControl } from '../../activities/session-control';

const control = (over: Partial<SessionControl> = {}): SessionControl => ({
  version: 2,
  paused: false,
  stop: null,
  minDelayMs: null,
  maxActiveHosts: null,
  hostPaused: false,
  hostDelayMs: null,
  hostRender: null,
  hostGivenUp: false,
  ...over,
});

test('a stop, then a pause (the campaign or the host), then newer settings; otherwise the session goes on', () => {
  expect(stopFor(control({ stop: 'budget', paused: true, version: 9 }), 2)).toBe('stopped');
  expect(stopFor(control({ hostGivenUp: true, paused: true, version: 9 }), 2)).toBe('stopped');
  expect(stopFor(control({ paused: true, version: 9 }), 2)).toBe('paused');
  expect(stopFor(control({ hostPaused: true }), 2)).toBe('paused');
  expect(stopFor(control({ version: 3 }), 2)).toBe('config');
  expect(stopFor(control(), 2)).toBeNull();
});
