// The process's last boundary (server/last-resort.ts, installed by server/main.ts): an exception no
// entry point caught, thrown from a timer, and a rejection nobody handled are logged as `fatal` with
// a marker, and the process goes on serving.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const CHILD = `
import { createServer } from 'node:http';
import { installLastResortHandlers } from ${JSON.stringify(path.join(ROOT, 'server/last-resort.ts'))};
import { createLogger } from ${JSON.stringify(path.join(ROOT, 'server/telemetry/index.ts'))};
installLastResortHandlers(createLogger('info'));
setTimeout(() => { throw new Error('thrown in a timer'); }, 5);
setTimeout(() => void Promise.reject(new Error('rejected, unhandled')), 10);
const server = createServer((_req, res) => res.end('alive'));
server.listen(0, '127.0.0.1', () => {
  setTimeout(async () => {
    const answer = await (await fetch('http://127.0.0.1:' + server.address().port)).text();
    process.stdout.write(JSON.stringify({ answer }) + '\\n');
    server.close();
  }, 100);
});
`;

function run(): Promise<{ code: number | null; lines: Record<string, unknown>[] }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--input-type=module', '-e', CHILD], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.stderr.on('data', (d) => (out += d));
    proc.once('error', reject);
    proc.once('exit', (code) => {
      const lines = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, lines });
    });
  });
}

test('an uncaught exception and an unhandled rejection are logged and the process keeps serving', async () => {
  const { code, lines } = await run();
  expect(code).toBe(0);
  expect(lines.find((l) => l.marker === 'process.uncaught')).toMatchObject({ level: 60, err: { message: 'thrown in a timer' } });
  expect(lines.find((l) => l.marker === 'process.unhandled_rejection')).toMatchObject({ level: 60, err: { message: 'rejected, unhandled' } });
  expect(lines.find((l) => 'answer' in l)).toEqual({ answer: 'alive' });
});

test('server/main.ts installs the last boundary before it starts anything', async () => {
  const { readFile } = await import('node:fs/promises');
  const main = await readFile(path.join(ROOT, 'server/main.ts'), 'utf8');
  expect(main.indexOf('installLastResortHandlers(log)')).toBeGreaterThan(-1);
  expect(main.indexOf('installLastResortHandlers(log)')).toBeLessThan(main.indexOf('startPlatform({'));
});
