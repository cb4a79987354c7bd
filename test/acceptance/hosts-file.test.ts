// A campaign over 3,000 hosts that only a hosts file names (test/support/hosts-file-campaign.ts).
import { hostsFileCampaign } from '../support/hosts-file-campaign';

hostsFileCampaign(3_000);
