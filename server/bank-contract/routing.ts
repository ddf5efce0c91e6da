// Which bank a call goes to: the table's own (game.tables.bank, 'cage' or 'chain'), never one bank
// per deployment, so one platform serves cage tables and chain tables side by side. The callers:
// the game role (a websocket sit, stand_up, a tournament's unregister, the sit-out timeout's forced
// withdraw: server/game/live/rooms.ts), the web role's proxy (server/web/proxy.ts) and the worker.
//   cage   BANK_URL (the game and web roles' name for it), else CAGE_URL, else the cage of this
//          process, else http://HOST:CAGE_PORT;
//   chain  CHAIN_BANK_URL, else the chain bank of this process, else http://HOST:CHAIN_BANK_PORT.
import type { Config } from '../config/index.ts';
import { createServiceClient, type ServiceClient } from '../http/service-client.ts';
import type { BankName } from './contract.ts';

/** The roles of this process, by name (server/roles/types.ts Peers). */
interface PeerUrls { get(role: 'cage' | 'chain-bank'): string | undefined }

type BankConfig = Pick<Config, 'BANK_URL' | 'CAGE_URL' | 'CHAIN_BANK_URL' | 'HOST' | 'CAGE_PORT' | 'CHAIN_BANK_PORT'>;

/** Each bank's base URL, read at call time (a peer's ephemeral port is known once it listens). */
export function bankUrls(config: BankConfig, peers: PeerUrls | undefined): Record<BankName, () => string> {
  const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  return {
    cage: () => config.BANK_URL ?? config.CAGE_URL ?? peers?.get('cage') ?? `http://${host}:${config.CAGE_PORT}`,
    chain: () => config.CHAIN_BANK_URL ?? peers?.get('chain-bank') ?? `http://${host}:${config.CHAIN_BANK_PORT}`,
  };
}

/** One service client per bank (the service key, or a player's JWT forwarded, per call). */
export type BankClients = Record<BankName, ServiceClient>;

export function bankClients(config: BankConfig & Pick<Config, 'SERVICE_KEY' | 'GAME_CALL_TIMEOUT_MS'>, peers: PeerUrls | undefined): BankClients {
  const urls = bankUrls(config, peers);
  const client = (baseUrl: () => string) => createServiceClient({ baseUrl, serviceKey: config.SERVICE_KEY, timeoutMs: config.GAME_CALL_TIMEOUT_MS });
  return { cage: client(urls.cage), chain: client(urls.chain) };
}

/** A table's bank as the database names it; anything else is no bank of the contract. */
export function isBankName(value: unknown): value is BankName {
  return value === 'cage' || value === 'chain';
}
