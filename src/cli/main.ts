#!/usr/bin/env node
// Entry point of the `crawler` command. Each sub-command lives in its own
// module under ./commands and registers itself on the shared program; only
// the module of the command being run is loaded.
import { Command } from 'commander';
import { registerCommands } from './commands';

/** The program for these arguments (`argv` as process.argv: node, script, command, …). */
export async function buildProgram(argv: string[]): Promise<Command> {
  const program = new Command();
  program.name('crawler').description('Durable, workflow-orchestrated web crawler (Temporal + Redis)').showHelpAfterError().exitOverride();
  await registerCommands(
    program,
    argv.slice(2).find((a) => !a.startsWith('-')),
  );
  return program;
}

async function main(argv: string[]): Promise<void> {
  const program = await buildProgram(argv);
  try {
    await program.parseAsync(argv);
  } catch (err: unknown) {
    const code = (err as { exitCode?: number; code?: string }).exitCode;
    const commanderCode = (err as { code?: string }).code;
    if (commanderCode === 'commander.helpDisplayed' || commanderCode === 'commander.version') process.exit(0);
    if (typeof code === 'number' && commanderCode?.startsWith('commander.')) process.exit(2);
    throw err;
  }
}

if (require.main === module) {
  main(process.argv).catch((err: unknown) => {
    const e = err as { exitCode?: number; message?: string };
    process.stderr.write(`crawler: ${e.message ?? String(err)}\n`);
    process.exit(typeof e.exitCode === 'number' ? e.exitCode : 1);
  });
}
