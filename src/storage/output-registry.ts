// One WARC writer and one index writer per output folder per process:
// activities of many campaigns share a worker, each campaign its own folder.
import path from 'node:path';
import { IndexWriter } from './index-writer';
import { WarcWriter } from './warc-writer';

export interface CampaignOutput {
  warc: WarcWriter;
  index: IndexWriter;
}

export class OutputRegistry {
  private readonly outputs = new Map<string, Promise<CampaignOutput>>();

  get(dir: string, campaignId: string): Promise<CampaignOutput> {
    const key = path.resolve(dir);
    let out = this.outputs.get(key);
    if (!out) {
      out = (async () => ({
        warc: await WarcWriter.open({ dir: path.join(key, 'warc'), prefix: campaignId, isPartOf: campaignId }),
        index: await IndexWriter.open({ dir: path.join(key, 'index') }),
      }))();
      out.catch(() => this.outputs.delete(key));
      this.outputs.set(key, out);
    }
    return out;
  }

  async closeAll(): Promise<void> {
    const all = [...this.outputs.values()];
    this.outputs.clear();
    await Promise.all(
      all.map(async (p) => {
        const o = await p.catch(() => null);
        if (o) await Promise.all([o.warc.close(), o.index.close()]);
      }),
    );
  }
}
