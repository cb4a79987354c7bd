// The line a worker prints on stdout once it polls its task queue. A module of
// its own so the worker bundle does not pull in WorkerPool (and its bundler).
export const WORKER_READY_LINE = 'crawler worker ready';
