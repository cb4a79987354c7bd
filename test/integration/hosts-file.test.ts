// A campaign over hosts that only a hosts file names (test/support/hosts-file-campaign.ts);
// the acceptance suite runs it over 3,000 (test/acceptance/hosts-file.test.ts).
import { hostsFileCampaign } from '../support/hosts-file-campaign';

hostsFileCampaign(40);
