import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * A server process the stack started. `detached` servers outlive the CLI
 * (`crawler stack up`); attached ones are stopped by whoever started them.
 */
export class ManagedProcess {
  private exitInfo: string | null = null;
  private readonly exited: Promise<void>;

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly logFile: string,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = signal ? `signal ${signal}` : `exit code ${code}`;
        resolve();
      });
    });
  }

  static start(name: string, cmd: string, args: string[], opts: { logFile: string; detached?: boolean; cwd?: string; env?: NodeJS.ProcessEnv }): ManagedProcess {
    fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
    const fd = fs.openSync(opts.logFile, 'a');
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ['ignore', fd, fd],
      detached: opts.detached ?? false,
    });
    fs.closeSync(fd);
    if (opts.detached) child.unref();
    return new ManagedProcess(name, child, opts.logFile);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Why the process is gone, with the tail of its log; null while it runs. */
  deadReason(): string | null {
    if (this.exitInfo === null) return null;
    let tail = '';
    try {
      tail = fs.readFileSync(this.logFile, 'utf8').trim().split('\n').slice(-10).join('\n');
    } catch {
      /* no log */
    }
    return `${this.exitInfo}${tail ? `\n${tail}` : ''}`;
  }

  async stop(timeoutMs = 10_000): Promise<void> {
    if (this.exitInfo !== null) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  kill9(): void {
    this.child.kill('SIGKILL');
  }

  waitExit(): Promise<void> {
    return this.exited;
  }
}
