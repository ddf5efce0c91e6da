-- The read views of issue 32 (db/migrations/000051_reads_through_views.sql): each granted to the
-- logins that read it, each of which is already granted the tables under it. The views are
-- security_invoker, so the tables' grants and row policies still decide what a login reads: a view
-- widens nothing. Kept in one file after every domain's `revoke all on all tables` (which takes the
-- views' grants too) so that each re-apply grants them again.

-- auth: the auth role's token claims, wallet routes and dev token
grant select on auth.user_records, auth.wallet_records to poker_auth;

-- bank: the chain bank reads its own intents (its routes, the earlier-payment check); the worker's
-- reconciler and an operator's audit (poker_admin, under a live admin session) check them against
-- the vault's events (server/bank/chain-audit.ts)
grant select on bank.deployment_records, bank.deposit_records, bank.withdrawal_records, bank.tournament_payment_records,
  bank.vault_refund_records
  to poker_bank, poker_worker, poker_admin;

-- cage: the cage's routes read its intents, custody, grants, gas and rake; the worker reads the cash
-- intents it reconciles; the audit (the worker's periodic run, an operator's through the admin role)
-- reads the receipts and the custody releases it verifies. The admin GraphQL's anonymous role gets
-- the admin's grants where it holds those of the tables (RLS shows it nothing): not the releases,
-- whose verdicts it is not granted.
grant select on cage.deposit_records, cage.withdrawal_records to poker_cage, poker_worker;
grant select on cage.custody_entry_records, cage.grant_records, cage.gas_withdrawal_records, cage.rake_reconciliation_records to poker_cage;
grant select on cage.receipt_records, cage.custody_dispute_records to poker_cage, poker_worker, poker_admin, poker_anonymous;
grant select on cage.custody_release_records to poker_cage, poker_worker, poker_admin;

-- claims and game: the game role's claim board, agent registry, tournaments and hands
grant select on claims.section_records to poker_game;
grant select on game.agent_records, game.hand_records to poker_game;
