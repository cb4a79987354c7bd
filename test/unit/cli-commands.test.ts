// main.ts loads only the module that owns the command being run, by the
// names in COMMAND_MODULES: a name missing there would make its command
// "unknown" whenever it is run on its own.
import { Command } from 'commander';
import { COMMAND_MODULES, registerCommands } from '../../src/cli/commands';

test.each(COMMAND_MODULES.map((m) => [m.names.join(', '), m] as const))('the table lists exactly what the module registers: %s', async (_names, m) => {
  const program = new Command();
  (await m.load())(program);
  expect(program.commands.map((c) => c.name()).sort()).toEqual([...m.names].sort());
});

test('a known command registers its own module only; no or an unknown name registers all', async () => {
  const only = new Command();
  await registerCommands(only, 'set-rate');
  expect(only.commands.map((c) => c.name())).toEqual(['set-rate', 'set-concurrency', 'set-budget', 'add-seeds', 'list']);

  const all = COMMAND_MODULES.flatMap((m) => m.names);
  for (const name of [undefined, 'help', 'no-such-command']) {
    const p = new Command();
    await registerCommands(p, name);
    expect(p.commands.map((c) => c.name())).toEqual(all);
  }
});
