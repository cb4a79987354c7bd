import { newAttemptId } from '../../activities/page';

describe('newAttemptId', () => {
  it('gives 8 base64url characters (48 bits), never the same twice across refills of its random pool', () => {
    // 5,000 ids span about ten refills of the 512-id pool.
    const ids = Array.from({ length: 5000 }, () => newAttemptId());
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{8}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
