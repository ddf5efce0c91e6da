// The audit: ONE list of checks, run alike by the worker's periodic job (tasks/cage_audit.ts) and by
// an operator's `npm run ops -- audit` (the admin role's GET /api/audit), so both give one verdict.
// Each check answers violations in one shape ({ invariant, subject, detail }). Add a check here and
// both run it.
import { chainIntentViolations } from '../bank/chain-audit.ts';
import { auditOn, auditSinceCheckpoint } from '../cage/ledger.ts';
import { releaseViolations } from '../cage/custody.ts';
import { receiptViolations } from '../cage/receipts.ts';
import { handCauses } from './hands.ts';
import { stackLinks } from './links.ts';
import { tournamentStacks } from './tournaments.ts';
import type { AuditCheck } from './types.ts';

/** The cage's sums (cage.audit()): the periodic run reads the journal since its own checkpoint. */
const cageSums: AuditCheck = {
  name: 'cage_sums',
  run: (client, scope) => (scope.mode === 'periodic' ? auditSinceCheckpoint(client) : auditOn(client)),
};

/** Every recorded custody release against the pinned arbiter keys (SQL cannot verify ed25519). */
const custodyReleases: AuditCheck = {
  name: 'custody_releases',
  run: (client) => releaseViolations(client),
};

/**
 * Every receipt's signature against the pinned receipt keys. Receipts are append-only: a run reads
 * those after the last one this process found clean (from the first in a full run).
 */
let receiptsCleanThrough = 0n;
const receipts: AuditCheck = {
  name: 'receipts',
  run: async (client, scope) => {
    const found = await receiptViolations(client, { afterId: scope.mode === 'full' ? 0n : receiptsCleanThrough });
    if (found.violations.length === 0 && scope.mode !== 'full') receiptsCleanThrough = found.lastId;
    return found.violations;
  },
};

/**
 * The active deployment's chain intents against its vault's events (server/bank/chain-audit.ts):
 * from the block after the last clean scan of this process (the deployment's first in a full run).
 */
let chainMark: { fromBlock: bigint; since: Date } | undefined;
const chainIntents: AuditCheck = {
  name: 'chain_intents',
  run: async (client, scope) => {
    const started = new Date();
    const found = await chainIntentViolations(client, {}, scope.mode === 'full' ? {} : chainMark ?? {});
    if (found.violations.length === 0 && found.scannedTo !== null && scope.mode !== 'full') chainMark = { fromBlock: found.scannedTo + 1n, since: started };
    return found.violations.map((v) => ({ ...v, detail: typeof v.detail === 'string' ? { reason: v.detail } : v.detail }));
  },
};

export const AUDIT_CHECKS: readonly AuditCheck[] = [
  cageSums,
  custodyReleases,
  receipts,
  chainIntents,
  handCauses,
  stackLinks,
  tournamentStacks,
];
