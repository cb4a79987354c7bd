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

/**
 * Runs `crawler` on these arguments (`argv` as process.argv) in this process,
 * as the command line does: the exit code the process must end with when the
 * command stopped early (0 after help or the version, 2 for a usage error,
 * a typed error's own code or 1, its message on stderr), or undefined when
 * the command ran to its end and the process ends when its work is done.
 * Exported so that tests can run a command through the real program without
 * paying a process for it.
 */
export async function runCrawler(argv: string[]): Promise<number | undefined> {
  try {
    const program = await buildProgram(argv);
    try {
      await program.parseAsync(argv);
    } catch (err: unknown) {
      const code = (err as { exitCode?: number; code?: string }).exitCode;
      const commanderCode = (err as { code?: string }).code;
      if (commanderCode === 'commander.helpDisplayed' || commanderCode === 'commander.version') return 0;
      // Commander has printed the problem already.
      if (typeof code === 'number' && commanderCode?.startsWith('commander.')) return 2;
      throw err;
    }
    return undefined;
  } catch (err: unknown) {
    const e = err as { exitCode?: number; message?: string };
    process.stderr.write(`crawler: ${e.message ?? String(err)}\n`);
    return typeof e.exitCode === 'number' ? e.exitCode : 1;
  }
}

if (require.main === module) {
  void runCrawler(process.argv).then((code) => {
    if (code !== undefined) process.exit(code);
  });
}
