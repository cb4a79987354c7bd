import type { Command } from 'commander';

type Register = (program: Command) => unknown;

/**
 * Every command module, the top-level command names it registers, and how to
 * load it. Modules are imported only when one of their commands runs (or for
 * `--help`): the Temporal SDK, undici and cheerio take over a second to load,
 * which `crawler robots check` and `crawler status` should not pay.
 * The order here is the order of `crawler --help`.
 */
export const COMMAND_MODULES: { names: string[]; load: () => Promise<Register> }[] = [
  { names: ['crawl'], load: async () => (await import('./crawl')).registerCrawlCommand },
  { names: ['worker'], load: async () => (await import('./worker')).registerWorkerCommand },
  { names: ['status', 'pause', 'resume', 'cancel'], load: async () => (await import('./campaign-control')).registerCampaignControlCommands },
  { names: ['set-rate', 'set-render', 'set-concurrency', 'set-budget', 'add-seeds', 'list'], load: async () => (await import('./steer')).registerSteerCommands },
  { names: ['schedule'], load: async () => (await import('./schedule')).registerScheduleCommands },
  { names: ['purge'], load: async () => (await import('./purge')).registerPurgeCommand },
  { names: ['report'], load: async () => (await import('./report')).registerReportCommand },
  { names: ['seal'], load: async () => (await import('./seal')).registerSealCommand },
  { names: ['dataset'], load: async () => (await import('./dataset')).registerDatasetCommand },
  { names: ['cdxj', 'export', 'replay'], load: async () => (await import('./archive')).registerArchiveCommands },
  { names: ['qa'], load: async () => (await import('./qa')).registerQaCommand },
  { names: ['stack'], load: async () => (await import('./stack')).registerStackCommands },
  { names: ['cluster'], load: async () => (await import('./cluster')).registerClusterCommands },
  { names: ['robots'], load: async () => (await import('../../robots/robots-check')).registerRobotsCommand },
];

/**
 * Registers the module that owns `commandName`, or every module when the
 * name is missing or unknown (help, and commander's "unknown command" error,
 * then list them all).
 */
export async function registerCommands(program: Command, commandName?: string): Promise<void> {
  const owner = COMMAND_MODULES.find((m) => commandName !== undefined && m.names.includes(commandName));
  for (const m of owner ? [owner] : COMMAND_MODULES) (await m.load())(program);
}
