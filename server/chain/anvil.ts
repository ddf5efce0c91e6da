// anvil (npm @foundry-rs/anvil) on an ephemeral port: the local chain of `npm start` (server/chain/local.ts)
// and of the tests (test/helpers/anvil.ts re-exports it). Its well-known development keys are funded
// with 10,000 ETH on every anvil chain; they are public, for a local chain only.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Hex } from 'viem';
import { foundry } from 'viem/chains';

const ROOT = path.resolve(import.meta.dirname, '../..');
const START_TIMEOUT_MS = 30_000;

/** anvil's first development keys (the default mnemonic's accounts 0..2). */
export const ANVIL_DEV_KEYS: readonly Hex[] = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
];

export interface Anvil {
  url: string;
  chainId: number;
  stop(): Promise<void>;
}

/**
 * The anvil binary of this platform's package (@foundry-rs/anvil-<os>-<arch>), run directly: the
 * npm wrapper (node_modules/.bin/anvil) is a node process that does not pass SIGTERM on, so
 * stopping it would leave the chain running. The wrapper only where no platform package is found.
 */
function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const direct = path.join(ROOT, 'node_modules/@foundry-rs', `anvil-${process.platform}-${arch}`, 'bin', 'anvil');
  return existsSync(direct) ? direct : path.join(ROOT, 'node_modules/.bin/anvil');
}

/** Starts anvil on 127.0.0.1 and a free port; resolves once it listens. `port` pins one (a restart). */
export async function startAnvil(options: { port?: number } = {}): Promise<Anvil> {
  const args = ['--host', '127.0.0.1', '--port', String(options.port ?? 0), '--chain-id', String(foundry.id)];
  // anvil runs under a shell that holds our end of a pipe: when this process closes it (stop) or
  // dies (even SIGKILL: the kernel closes the pipe), the shell's read returns and it stops anvil,
  // so a chain never outlives the process that started it
  const child: ChildProcess = spawn('/bin/sh', ['-c', '"$0" "$@" </dev/null & pid=$!; read _; kill $pid 2>/dev/null; wait $pid', anvilBinary(), ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => {
      child.stdin!.end();
      reject(new Error(`anvil did not start: ${seen.slice(-500)}`));
    }, START_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`anvil exited (${code}): ${seen.slice(-500)}`));
    });
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const m = /Listening on ([\d.]+:\d+)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(`http://${m[1]}`);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => { seen += c.toString(); });
  });
  return {
    url,
    chainId: foundry.id,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin!.end();
      }),
  };
}
