import type { Command } from 'commander';
import { registerRobotsCommand } from '../../robots/robots-check';
import { registerCampaignControlCommands } from './campaign-control';
import { registerCrawlCommand } from './crawl';
import { registerStackCommands } from './stack';
import { registerWorkerCommand } from './worker';

// Each command module exports one register function; the order here is the
// order of `crawler --help`.
export function registerCommands(program: Command): void {
  registerCrawlCommand(program);
  registerWorkerCommand(program);
  registerCampaignControlCommands(program);
  registerStackCommands(program);
  registerRobotsCommand(program);
}
