// `npm run agent -- --table <id> [--game http://127.0.0.1:3674] [--bank http://127.0.0.1:3675]
//                   [--hands 20] [--buy-in 100] [--seat 0] [--tournament]`
// Credentials from the environment: POKER_TOKEN (the owner's access JWT), POKER_AGENT_ID (one of
// the owner's agents; created and printed when unset). Prints a line per event, then
// `hands played: N` and a `summary {...}` JSON line. Ctrl-C stands up first; a second one exits.
import { parseArgs } from 'node:util';
import { Agent, type AgentOptions } from './agent.ts';

const USAGE = 'usage: POKER_TOKEN=<jwt> [POKER_AGENT_ID=<uuid>] npm run agent -- --table <id> [--game url] [--bank url] [--hands n] [--buy-in chips] [--seat n] [--tournament]\n';

function options(): AgentOptions | null {
  const { values } = parseArgs({
    options: {
      game: { type: 'string', default: 'http://127.0.0.1:3674' },
      bank: { type: 'string', default: 'http://127.0.0.1:3675' },
      table: { type: 'string' },
      hands: { type: 'string', default: '20' },
      'buy-in': { type: 'string' },
      seat: { type: 'string' },
      tournament: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  const token = process.env.POKER_TOKEN;
  const hands = Number(values.hands);
  if (values.help || !values.table || !token || !Number.isInteger(hands) || hands < 1) return null;
  return {
    game: values.game, bank: values.bank, tableId: values.table, hands, token,
    agentId: process.env.POKER_AGENT_ID || undefined,
    buyIn: values['buy-in'] ? BigInt(values['buy-in']) : undefined,
    seat: values.seat !== undefined ? Number(values.seat) : undefined,
    tournament: values.tournament,
  };
}

async function main(): Promise<number> {
  let o: AgentOptions | null;
  try {
    o = options();
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    o = null;
  }
  if (!o) {
    process.stderr.write(USAGE);
    return 2;
  }
  const agent = new Agent(o);
  let interrupted = false;
  const onSignal = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    process.stdout.write('[agent] standing up (Ctrl-C again to exit now)\n');
    agent.standUp();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const summary = await agent.run();
    process.stdout.write(`hands played: ${summary.hands}\n`);
    process.stdout.write(`summary ${JSON.stringify(summary)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`[agent] stopped: ${(err as Error).message}\n`);
    process.stdout.write(`summary ${JSON.stringify(agent.summary)}\n`);
    return 1;
  }
}

process.exit(await main());
