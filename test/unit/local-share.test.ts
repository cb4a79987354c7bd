import { CAMPAIGN_SEEN_MS, LocalSessionShare } from '../../activities/local-share';

describe('local first sessions shared between campaigns', () => {
  it('a campaign alone on the worker is deferred only past the session slots', () => {
    const share = new LocalSessionShare(4);
    for (let i = 0; i < 4; i++) expect(share.tryEnter('big', 1_000)).toBe(true);
    expect(share.tryEnter('big', 1_000)).toBe(false);
    share.leave('big');
    expect(share.tryEnter('big', 1_000)).toBe(true);
  });

  it('once a second campaign uses the worker, each holds at most its share, and all of them at most the slots', () => {
    const share = new LocalSessionShare(4);
    for (let i = 0; i < 4; i++) expect(share.tryEnter('big', 1_000)).toBe(true);
    share.touch('small', 1_100); // its dispatch ran here
    expect(share.tryEnter('big', 1_200)).toBe(false);
    expect(share.tryEnter('small', 1_200)).toBe(false); // every slot is taken: the task queue decides
    share.leave('big');
    expect(share.tryEnter('small', 1_200)).toBe(true);
    share.leave('big');
    expect(share.tryEnter('big', 1_300)).toBe(false); // 2 in flight: its share of 4 between two
    share.leave('big');
    expect(share.tryEnter('big', 1_300)).toBe(true);
  });

  it('a campaign not seen for a while no longer counts', () => {
    const share = new LocalSessionShare(4);
    share.touch('gone', 0);
    for (let i = 0; i < 2; i++) expect(share.tryEnter('big', 10)).toBe(true);
    expect(share.tryEnter('big', 20)).toBe(false);
    expect(share.tryEnter('big', CAMPAIGN_SEEN_MS + 1)).toBe(true);
  });

  it('unbounded slots defer nothing', () => {
    const share = new LocalSessionShare(null);
    share.touch('other');
    for (let i = 0; i < 5; i++) expect(share.tryEnter('big')).toBe(true);
  });
});
