// `npm run demo` as a developer runs it (its script, scripts/demo.ts), as a child process: on ephemeral ports, against a database
// of this file's own (DATABASE_URL; the demo migrates it as npm start would), it prints every role's
// URL and `demo ready`; its bots play hands at the seeded cash table (watched here as a spectator);
// Ctrl-C (SIGINT to its process group) stands them up and stops it cleanly, the books balanced.
import { spawn } from 'node:child_process';
import { jest } from '@jest/globals';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { resultsOf, until } from '../helpers/live.ts';
import { call } from '../helpers/money.ts';
import { connect } from '../helpers/ws-client.ts';

jest.setTimeout(120_000);

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

test('npm run demo: prints its URLs, its bots play hands at demo-cash, Ctrl-C stands them up and stops it; the cage audit is empty', async () => {
  const ports = Object.fromEntries(['PORT', 'GAME_PORT', 'CAGE_PORT', 'ADMIN_PORT', 'BETTING_PORT', 'WEB_PORT'].map((k) => [k, '0']));
  // the script `npm run demo` runs (npm itself would die of the SIGINT before the demo's clean stop)
  const child = spawn(process.execPath, ['scripts/demo.ts'], {
    env: { ...process.env, ...ports, DATABASE_URL: db.url, HAND_DELAY_MS: '20', LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: SIGINT to the group is a terminal's Ctrl-C
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => void (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => void (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = Date.now();
  try {
    await until(() => out.includes('demo ready') || /demo failed/.test(out), 'demo ready', 90_000, 50);
    expect(out).toContain('demo ready');
    const url = (role: string) => new RegExp(`^${role}\\s+(http://\\S+)$`, 'm').exec(out)?.[1];
    for (const role of ['auth', 'game', 'cage', 'admin', 'betting', 'web']) expect(url(role)).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // the URL to watch it in the browser: the web client's page
    expect(out).toMatch(/the web client\s+http:\/\/127\.0\.0\.1:\d+/);
    const page = await fetch(url('web')!);
    expect([page.status, page.headers.get('content-type')]).toEqual([200, expect.stringMatching(/^text\/html/)]);
    expect(out).toMatch(/^worker\s+running/m);
    const game = url('game')!;

    // hands are played at the seeded table: a spectator sees them end
    const spectator = await connect(`${game.replace(/^http/, 'ws')}/ws/tables/demo-cash`);
    await until(() => resultsOf(spectator, 'demo-cash').length >= 3, 'three hands at demo-cash', 60_000, 20);
    // the three bots seated: one that busted in these hands sits again after its pause (2 s), so the
    // count is waited for, not read once (a bust in the first hands left two seats at the read)
    const room = await until(async () => {
      const r = await call(`${game}/api/tables/demo-cash`);
      return r.body.seats?.length === 3 && r;
    }, 'the three bots seated at demo-cash', 30_000, 50);
    expect(room.body.seats).toHaveLength(3);
    const lobby = await call(`${game}/api/tables?mode=sng`);
    expect(lobby.body.tables.find((t: { tableId: string }) => t.tableId.startsWith('demo-sng-'))).toMatchObject({ tournamentState: 'registering' });
    process.stdout.write(`demo: ready in ${Date.now() - started} ms; ${resultsOf(spectator, 'demo-cash').length} hands watched\n`);
    await spectator.close();

    process.kill(-child.pid!, 'SIGINT');
    expect(await exited).toBe(0);
  } finally {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  }
  expect(out).toMatch(/demo stopped \(\d+ hands played at demo-cash\)/);
  expect(out.match(/stood up/g)).toHaveLength(3);
  // every bot's seat closed, and the books balance
  const { rows } = await db.owner.query("select count(*)::int as n from game.table_players where table_id = 'demo-cash' and status <> 'closed'");
  expect(rows[0].n).toBe(0);
  await expectCleanAudit(db.pool('poker_cage'));
});
