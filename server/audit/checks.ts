// The audit: ONE list of checks, run alike by the worker's periodic job (tasks/cage_audit.ts) and by
// an operator's `npm run ops -- audit` (the admin role's GET /api/audit), so both give one verdict.
// Each check answers violations in one shape ({ invariant, subject, detail }). Add a check here and
// both run it.
import { auditOn, auditSinceCheckpoint } from '../cage/ledger.ts';
import { unverifiedReleases } from '../cage/custody.ts';
import { handCauses } from './hands.ts';
import { stackLinks } from './links.ts';
import { tournamentStacks } from './tournaments.ts';
import type { AuditCheck } from './types.ts';

/** The cage's sums (cage.audit()): the periodic run reads the journal since its own checkpoint. */
const cageSums: AuditCheck = {
  name: 'cage_sums',
  run: (client, scope) => (scope.mode === 'periodic' ? auditSinceCheckpoint(client) : auditOn(client)),
};

/** Every recorded custody release against the arbiter's key (SQL cannot verify ed25519). */
const custodyReleases: AuditCheck = {
  name: 'custody_releases',
  run: (client, scope) => unverifiedReleases(client, scope.arbiterPublicKey),
};

export const AUDIT_CHECKS: readonly AuditCheck[] = [
  cageSums,
  custodyReleases,
  handCauses,
  stackLinks,
  tournamentStacks,
];
