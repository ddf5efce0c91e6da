-- Reads through views (issue 32): what TypeScript reads of the auth, bank, cage, claims and game
-- tables it reads through these views (or the earlier ones: cage.account_balances, game.table_records,
-- game.tournaments, game.seats), never the tables; test/platform/reads-through-views.test.ts keeps it
-- so. A view names the columns its readers use, so a table may change under it and the readers not.
--
-- Every view here is security_invoker: it reads with the rights and under the row policies of the
-- login that reads it, so it shows a login nothing that login could not already read of the tables
-- (a login granted the view and not the table reads nothing). None holds a key column but the public
-- keys the audit verifies signatures under (receipts, custody releases). The grants are in
-- db/policies/80_read_views.sql, to the logins already granted the tables.
-- A change to a view is a new migration (create or replace may add columns at the end; a column
-- renamed, retyped or removed needs a drop first).

-- auth ---------------------------------------------------------------------------------------------
-- A user's public identity: the email the dev token names (never a password or a session).
create view auth.user_records with (security_invoker = true) as
select u.id, u.email, u.created_at
  from auth.users u;

-- Every linked wallet (chain as text: 'evm' or 'solana').
create view auth.wallet_records with (security_invoker = true) as
select w.id, w.user_id, w.address, w.chain::text as chain, w.chain_id, w.is_primary, w.created_at
  from auth.wallets w;

-- bank ---------------------------------------------------------------------------------------------
-- The chain bank's deployments (the active one is the vault it pays from).
create view bank.deployment_records with (security_invoker = true) as
select d.id, d.chain_id, d.token, d.vault, d.active, d.rpc_url, d.from_block, d.activated_by, d.created_at
  from bank.deployments d;

-- Every vault deposit intent.
create view bank.deposit_records with (security_invoker = true) as
select d.idempotency_key, d.deployment_id, d.user_id, d.table_id, d.seat_index, d.wallet, d.amount, d.deadline, d.nonce,
       d.mode, d.status, d.tx_hash, d.block_number, d.error, d.credited_at, d.verified_at, d.verified_block,
       d.created_at, d.updated_at
  from bank.deposit_intents d;

-- Every withdrawal from a vault table (and the transactions tried before the current one).
create view bank.withdrawal_records with (security_invoker = true) as
select w.idempotency_key, w.deployment_id, w.user_id, w.table_id, w.player_id, w.amount, w.history_hash, w.destination,
       w.forced, w.settlement, w.status, w.tx_hash, w.block_number, w.error, w.prior_tx_hashes, w.settled_at,
       w.created_at, w.updated_at
  from bank.withdraw_intents w;

-- Every tournament payment (a payout or an entry's refund) from a vault table.
create view bank.tournament_payment_records with (security_invoker = true) as
select p.payment_key, p.kind, p.deployment_id, p.table_id, p.position, p.user_id, p.player_id, p.entry_key, p.amount,
       p.destination, p.status, p.tx_hash, p.block_number, p.error, p.prior_tx_hashes, p.submitted_at, p.confirmed_at,
       p.failed_at, p.created_at, p.updated_at
  from bank.tournament_payments p;

-- Every refund of a Deposited event no intent backs (or one never credited).
create view bank.vault_refund_records with (security_invoker = true) as
select r.refund_key, r.deployment_id, r.deposit_tx_hash, r.deposit_log_index, r.deposit_key, r.table_key, r.destination,
       r.base_units, r.status, r.tx_hash, r.block_number, r.error, r.prior_tx_hashes, r.submitted_at, r.confirmed_at,
       r.created_at, r.updated_at
  from bank.vault_refunds r;

-- cage ---------------------------------------------------------------------------------------------
-- The cage's deposit intents (a seat's funding) and withdrawal intents (a stand-up's settlement).
create view cage.deposit_records with (security_invoker = true) as
select d.ref_id, d.idempotency_key, d.user_id, d.table_id, d.seat_index, d.amount, d.money_kind::text as money_kind,
       d.status, d.error, d.credited_at, d.reversal_ref_id, d.created_at, d.updated_at
  from cage.deposit_intents d;

create view cage.withdrawal_records with (security_invoker = true) as
select w.idempotency_key, w.ledger_ref_id, w.user_id, w.table_id, w.player_id, w.amount, w.history_hash, w.settlement,
       w.forced, w.custody_entry_id, w.settled_at, w.created_at
  from cage.withdraw_intents w;

-- Every custody entry, with the position it came from (an escape's entry names it; a forced
-- withdrawal's, through its withdrawal).
create view cage.custody_entry_records with (security_invoker = true) as
select c.id, c.ref_id, c.user_id, c.table_id, c.money_kind::text as money_kind, c.chain, c.amount, c.status,
       c.source_ref_id, c.claim_ref_id, c.created_at, c.claimed_at,
       coalesce(c.player_id, (select w.player_id from cage.withdraw_intents w where w.custody_entry_id = c.id)) as player_id,
       c.escape_id, c.hold_id, c.ledger
  from cage.custody_entries c;

-- Every custody dispute (released_at: when a release freed its entry).
create view cage.custody_dispute_records with (security_invoker = true) as
select d.id, d.entry_id, d.admin_id, d.reason, d.created_at, d.released_at
  from cage.custody_disputes d;

-- Every recorded custody release with the worker's verdict on its signature (valid null: none yet).
create view cage.custody_release_records with (security_invoker = true) as
select r.id, r.dispute_id, r.entry_id, r.message, r.signature, r.public_key, r.created_at, v.valid, v.verified_at
  from cage.custody_releases r
  left join cage.custody_release_verdicts v on v.release_id = r.id;

-- Every signed receipt (the public key it names; the audit checks it against the pinned ones).
create view cage.receipt_records with (security_invoker = true) as
select r.id, r.ledger_ref_id, r.user_id, r.table_id, r.history_hash, r.payload, r.signature, r.public_key, r.created_at
  from cage.receipts r;

-- Every play-chip grant the journal recorded (a claim's mint), by its ref (the claim id).
create view cage.grant_records with (security_invoker = true) as
select e.ref_id, e.memo ->> 'user_id' as user_id, e.memo ->> 'recipient' as recipient, e.amounts[2] as amount, e.created_at
  from cage.cage_entries e
 where e.kind = 'grant';

-- Every gas withdrawal from a player's tank.
create view cage.gas_withdrawal_records with (security_invoker = true) as
select g.ref_id, g.user_id, g.money_kind::text as money_kind, g.chips, g.status, g.error, g.created_at, g.updated_at
  from cage.gas_withdrawals g;

-- A table's rake reconciliations as a hash chain, with the running total each closes.
create view cage.rake_reconciliation_records with (security_invoker = true) as
select r.id, r.table_id, r.money_kind::text as money_kind, r.amount, r.hands, r.rows_digest, r.prev_hash, r.hash, r.created_at,
       sum(r.amount) over (partition by r.table_id order by r.id) as reconciled_rake
  from cage.rake_reconciliations r;

-- claims -------------------------------------------------------------------------------------------
-- The board's sections as written per environment (claims.resolved_sections answers the live ones).
create view claims.section_records with (security_invoker = true) as
select s.id, s.environment, s.key, s.condition_key, s.kind, s.amount, s."order", s.enabled, s.cadence, s.created_at, s.updated_at
  from claims.claim_sections s;

-- game ---------------------------------------------------------------------------------------------
-- Every agent with its owner and its latest published version (null: none yet).
create view game.agent_records with (security_invoker = true) as
select a.id, a.owner_user_id, a.name, a.created_at,
       (select max(v.version) from game.agent_versions v where v.agent_id = a.id) as version
  from game.agents a;

-- Every hand's row as a listing and the dealer's chain read it: the whole history and the deal are
-- read through game.hand_for_player (redacted for the caller), never here.
create view game.hand_records with (security_invoker = true) as
select h.hand_id, h.table_id, h.hand_number, h.status, h.started_at, h.ended_at, h.agents, h.players, h.result,
       h.record_hash, h.sealed_deal
  from game.hand_histories h;
