// Before the game funds a seat from a chain-bank deposit, it reads the deposit's evidence back from
// the chain itself (issue 31, class 7): the chain bank's login wrote the confirmation, so a stolen
// copy of it (with the service key to call this role) could confirm a deposit that never happened.
// The game reads the claimed transaction: mined, a Deposited event of the deposit's own deployment's
// vault, of this table, owner and amount, the permit in its calldata hashing to the deposit's key;
// then records that it did (game.record_chain_deposit), which game.credit_seat requires. The chain
// is read at EVM_RPC_URL, else where the deployment's owner said (a local anvil under `npm start`).
import type pg from 'pg';
import type { Address, Hex, PublicClient } from 'viem';
import { ApiError } from '../../http/errors.ts';
import { publicClientFor } from '../../chain/client.ts';
import { tableKey } from '../../chain/contracts.ts';
import { depositEvidence } from '../../chain/evidence.ts';
import { BASE_UNITS_PER_CHIP } from '../../chain/types.ts';

interface ToVerify {
  tx_hash: string; table_id: string; wallet: string; amount: bigint; chain_id: bigint; vault: string; rpc_url: string | null; verified: boolean;
}

const clients = new Map<string, PublicClient>();
function clientFor(rpcUrl: string, chainId: number): PublicClient {
  const key = `${chainId}:${rpcUrl}`;
  let client = clients.get(key);
  if (!client) {
    client = publicClientFor(rpcUrl, chainId);
    clients.set(key, client);
  }
  return client;
}

/**
 * Reads deposit `key`'s evidence from the chain and records it, when the key is a confirmed chain
 * deposit not yet read; any other key is left to game.credit_seat (which refuses what no deposit
 * backs). 409 credit_not_backed when the chain does not bear the deposit out; 503 when it cannot be read.
 */
export async function verifyChainDeposit(pool: pg.Pool, rpcUrl: string | undefined, key: string): Promise<void> {
  const { rows } = await pool.query<ToVerify>('select * from game.chain_deposit_to_verify($1)', [key]);
  const d = rows[0];
  if (!d || d.verified) return;
  const url = rpcUrl ?? d.rpc_url;
  if (!url) throw new ApiError(503, 'chain_not_configured');
  const client = clientFor(url, Number(d.chain_id));
  const evidence = await depositEvidence(client, d.vault as Address, d.tx_hash as Hex).catch(() => {
    throw new ApiError(503, 'chain_unavailable');
  });
  const backed = !!evidence && evidence.keys.includes(key) && evidence.tableKey === tableKey(d.table_id)
    && evidence.owner.toLowerCase() === d.wallet.toLowerCase() && evidence.amount === BigInt(d.amount) * BASE_UNITS_PER_CHIP;
  if (!backed) throw new ApiError(409, 'credit_not_backed');
  await pool.query('select game.record_chain_deposit($1, $2, $3, $4, $5)', [key, d.tx_hash, evidence.blockNumber.toString(), evidence.owner, evidence.amount.toString()]);
}
