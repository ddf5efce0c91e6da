// The cage role: the bank interface, journal-native. This issue serves its health and the receipt
// key; the money routes arrive with the cash-loop issue on the same pool and signer.
import { createApp, listen } from '../http/app.ts';
import { createRolePool } from '../db/pools.ts';
import type { RoleContext, StartedRole } from '../roles/types.ts';
import { loadReceiptSigner, RECEIPT_ALGORITHM } from './receipts.ts';

export async function startCage({ config, databaseUrl, log }: RoleContext): Promise<StartedRole> {
  const roleLog = log.child({ role: 'cage' });
  const pool = createRolePool(databaseUrl, 'poker_cage', { max: 20, applicationName: 'cage' });
  try {
    const signer = await loadReceiptSigner(pool, config.CAGE_RECEIPT_KEY);
    const app = await createApp({
      log: roleLog,
      bodyLimit: config.HTTP_BODY_LIMIT,
      pool,
      routes: (app) => {
        app.get('/api/cage/receipt-key', (_req, res) => {
          res.json({ algorithm: RECEIPT_ALGORITHM, publicKey: signer.publicKeyHex });
        });
      },
    });
    const http = await listen(app, config.HOST, config.CAGE_PORT);
    roleLog.info({ url: http.url, receiptKey: signer.publicKeyHex }, 'cage listening');
    return {
      role: 'cage',
      url: http.url,
      async stop() {
        await http.close();
        await pool.end();
      },
    };
  } catch (err) {
    await pool.end(); // a failed start (port taken, database down) leaves nothing open
    throw err;
  }
}
