// Workers of one pool share a machine: a fixed metrics port must become one
// port per worker, or every worker but the first fails to bind.
import { spreadPorts } from '../../src/worker/worker-pool';

test('a fixed port becomes port + slot; 0 (any free port), unset and invalid values are left alone', () => {
  const env = { CRAWLER_METRICS_PORT: '9464', CRAWLER_SDK_METRICS_PORT: '9500', OTHER: '7' };
  expect(spreadPorts(env, 0)).toEqual(env);
  expect(spreadPorts(env, 2)).toEqual({ CRAWLER_METRICS_PORT: '9466', CRAWLER_SDK_METRICS_PORT: '9502', OTHER: '7' });
  expect(spreadPorts({ CRAWLER_METRICS_PORT: '0' }, 3)).toEqual({ CRAWLER_METRICS_PORT: '0' });
  expect(spreadPorts({}, 3)).toEqual({});
  // Left for the worker's own validation to reject with a message.
  expect(spreadPorts({ CRAWLER_SDK_METRICS_PORT: 'abc' }, 1)).toEqual({ CRAWLER_SDK_METRICS_PORT: 'abc' });
});

test('the input is not modified', () => {
  const env = { CRAWLER_METRICS_PORT: '9464' };
  spreadPorts(env, 1);
  expect(env).toEqual({ CRAWLER_METRICS_PORT: '9464' });
});
