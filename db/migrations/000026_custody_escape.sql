-- The cage's escape and custody paths (issue 19, part 1): an operator empties a cash table that
-- cannot go on into custody (POST /escape/:tableId), holds are split by operators, entries are
-- disputed by operators and released by the arbiter's signature (/admin/custody/*). The rules are in
-- db/functions/cage/85_custody.sql; the audit's checks in 40_audit.sql.

-- 1. The escape's journal movement: a table's escrow emptied into custody (and its rake to the house).
alter type cage.movement_kind add value if not exists 'table_escape';

-- 2. A position the escape closed ends its chain with an `escape` link (delta: minus its stack).
alter table game.position_links drop constraint position_links_event;
alter table game.position_links add constraint position_links_event
  check (event in ('buy_in', 'top_up', 'reverted', 'hand', 'cash_out', 'custody', 'bust', 'tournament_result', 'escape'));

-- 3. One escape per table, ever: what the books said when it ran and where the escrow went.
create table cage.table_escapes (
  id bigint generated always as identity primary key,
  table_id text not null references game.tables (table_id) on delete restrict,
  money_kind cage.money_kind not null,
  -- the operator (the admin of the live session the act named) and why
  admin_id uuid not null,
  reason text not null,
  -- clean: the escrow was what the table owes (cage_private.table_books); divergent: it was not
  outcome text not null,
  -- the journal entry of the escape (kind table_escape), 'escape:' || table_id
  ref_id text not null,
  -- the books under the escrow's lock, in chips: the escrow emptied and the terms it owed
  escrow bigint not null,
  live_stacks bigint not null,
  unreconciled_rake bigint not null,
  reconciled_rake bigint not null,
  -- where the escrow went: custody (clean: the stacks; divergent: all of it, as one hold) and the house (clean: the rake)
  to_custody bigint not null,
  to_house bigint not null,
  -- deposits in flight at the escape: reversed to their depositor (or confirmed, when the game held their credit)
  settled_deposits text[] not null default '{}',
  -- the fence: the lease epoch the escape moved the table to (null: no game process ever ran it), and the hand it abandoned
  fenced_epoch bigint,
  abandoned_hand text,
  created_at timestamptz not null default now(),
  constraint table_escapes_one_per_table unique (table_id),
  constraint table_escapes_ref_unique unique (ref_id),
  constraint table_escapes_outcome check (outcome in ('clean', 'divergent')),
  constraint table_escapes_reason check (length(reason) between 1 and 500),
  constraint table_escapes_amounts check (
    escrow >= 0 and live_stacks >= 0 and unreconciled_rake >= 0 and reconciled_rake >= 0 and to_custody >= 0 and to_house >= 0
    and escrow = to_custody + to_house and (outcome = 'clean' or to_house = 0))
);
comment on table cage.table_escapes is
  'Table escapes (POST /escape/:tableId): one per table, written by cage.escape_table in the transaction of its journal entry. Append-only.';
create trigger tg_table_escapes__append_only before update or delete on cage.table_escapes
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_table_escapes__no_truncate before truncate on cage.table_escapes
  for each statement execute function cage_private.tg_refuse_change();
alter table cage.table_escapes enable row level security;

-- An escaped table stays frozen: its positions are closed and its escrow is in custody, so nothing
-- may thaw it into a table that takes money again (game.set_table_status, or anything else).
create function cage_private.tg_tables__escaped_stays_frozen() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
begin
  if exists (select from cage.table_escapes e where e.table_id = new.table_id) then
    perform cage_private.refuse('table_escaped', format('table %s was escaped: it stays frozen', new.table_id));
  end if;
  return new;
end;
$$;
create trigger tg_tables__escaped_stays_frozen before update of status on game.tables
  for each row when (old.status = 'frozen' and new.status <> 'frozen')
  execute function cage_private.tg_tables__escaped_stays_frozen();

-- 4. Custody entries: an entry has an owner; a hold (an escape of divergent books) has none and
--    carries the per-player ledger its pool is split by. A reconciled hold is split into FREE
--    entries (hold_id) that sum to its pool. Amounts stay in base units (chips x 10^6).
alter table cage.custody_entries alter column user_id drop not null;
alter table cage.custody_entries
  add column player_id bigint,
  add column escape_id bigint references cage.table_escapes (id) on delete restrict,
  add column hold_id bigint references cage.custody_entries (id) on delete restrict,
  add column ledger jsonb;
comment on column cage.custody_entries.user_id is 'The owner; null for a hold (status needs_reconciliation, then reconciled), which belongs to no one until it is split.';
comment on column cage.custody_entries.player_id is 'The position (game.table_players.id) the chips came from, for an escape''s entries and a reconciliation''s (a forced withdrawal''s entry names it through its settlement: cage.withdraw_intents.custody_entry_id).';
comment on column cage.custody_entries.escape_id is 'The escape that wrote it (a FREE entry per player, or the hold).';
comment on column cage.custody_entries.hold_id is 'The hold whose reconciliation wrote this FREE entry.';
comment on column cage.custody_entries.ledger is 'A hold''s per-player ledger: per open position, what it bought in and topped up, its stack and what its chain head says (the pro-rata weights).';
comment on table cage.custody_entries is
  'Custody held by the cage: FREE entries claimable by their owner (forced withdrawals, escapes, reconciled holds), DISPUTED ones (not claimable until the arbiter releases them), and holds needing reconciliation.';

alter table cage.custody_entries drop constraint custody_entries_status;
alter table cage.custody_entries
  add constraint custody_entries_status check (status in ('free', 'claimed', 'disputed', 'needs_reconciliation', 'reconciled')),
  add constraint custody_entries_hold_shape check (
    (user_id is null) = (status in ('needs_reconciliation', 'reconciled'))
    and (user_id is null) = (ledger is not null)
    and (ledger is null or jsonb_typeof(ledger) = 'array')
    and (hold_id is null or user_id is not null));
create index custody_entries_hold_idx on cage.custody_entries (hold_id) where hold_id is not null;
create index custody_entries_escape_idx on cage.custody_entries (escape_id) where escape_id is not null;
create index custody_entries_holds_idx on cage.custody_entries (id) where user_id is null;

-- An entry's identity and amount never change after it is written; its status moves only along
-- free -> claimed, free <-> disputed, needs_reconciliation -> reconciled; it is never deleted.
create function cage_private.tg_custody_entries__moves() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'DELETE'
     or (new.ref_id, new.user_id, new.table_id, new.money_kind, new.chain, new.amount, new.source_ref_id, new.player_id,
         new.escape_id, new.hold_id, new.ledger, new.created_at)
        is distinct from
        (old.ref_id, old.user_id, old.table_id, old.money_kind, old.chain, old.amount, old.source_ref_id, old.player_id,
         old.escape_id, old.hold_id, old.ledger, old.created_at)
     or (new.status is distinct from old.status
         and (old.status, new.status) not in (('free', 'claimed'), ('free', 'disputed'), ('disputed', 'free'), ('needs_reconciliation', 'reconciled')))
     or ((new.claim_ref_id, new.claimed_at) is distinct from (old.claim_ref_id, old.claimed_at)
         and not (old.status = 'free' and new.status = 'claimed')) then
    raise exception using errcode = 'CGIMM', message = 'journal_immutable',
      detail = format('%s on cage.custody_entries is refused: an entry''s identity is fixed and its status moves only forward (%s -> %s)',
                      tg_op, old.status, case when tg_op = 'DELETE' then null else new.status end);
  end if;
  return new;
end;
$$;
create trigger tg_custody_entries__moves before update or delete on cage.custody_entries
  for each row execute function cage_private.tg_custody_entries__moves();
create trigger tg_custody_entries__no_truncate before truncate on cage.custody_entries
  for each statement execute function cage_private.tg_refuse_change();

-- 5. Disputes: an operator marks a FREE entry DISPUTED (its owner cannot claim it) with a reason;
--    only the arbiter's signed release ends one. The release message carries the dispute's id and
--    nonce, so a signature releases this dispute once and no other.
create table cage.custody_disputes (
  id bigint generated always as identity primary key,
  entry_id bigint not null references cage.custody_entries (id) on delete restrict,
  admin_id uuid not null,
  reason text not null,
  nonce text not null default replace(gen_random_uuid()::text, '-', ''),
  created_at timestamptz not null default now(),
  released_at timestamptz,
  constraint custody_disputes_reason check (length(reason) between 1 and 500),
  constraint custody_disputes_nonce check (nonce ~ '^[0-9a-f]{32}$')
);
comment on table cage.custody_disputes is
  'Disputes of custody entries (POST /admin/custody/dispute), ended only by the arbiter''s release (released_at, cage.custody_releases).';
create unique index custody_disputes_one_open on cage.custody_disputes (entry_id) where released_at is null;
create index custody_disputes_entry_idx on cage.custody_disputes (entry_id, id);

-- a dispute is ended once: released_at goes from null to a time; nothing else changes, nothing is deleted
create function cage_private.tg_custody_disputes__release_once() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'DELETE' or old.released_at is not null or new.released_at is null
     or (new.entry_id, new.admin_id, new.reason, new.nonce, new.created_at)
        is distinct from (old.entry_id, old.admin_id, old.reason, old.nonce, old.created_at) then
    raise exception using errcode = 'CGIMM', message = 'journal_immutable',
      detail = format('%s on cage.custody_disputes is refused: a dispute is released once and never changed otherwise', tg_op);
  end if;
  return new;
end;
$$;
create trigger tg_custody_disputes__release_once before update or delete on cage.custody_disputes
  for each row execute function cage_private.tg_custody_disputes__release_once();
create trigger tg_custody_disputes__no_truncate before truncate on cage.custody_disputes
  for each statement execute function cage_private.tg_refuse_change();

-- The arbiter's releases: the exact message signed, the detached ed25519 signature and the key
-- that verified it (checked by the cage process before the release is written). One per dispute.
create table cage.custody_releases (
  id bigint generated always as identity primary key,
  dispute_id bigint not null references cage.custody_disputes (id) on delete restrict,
  entry_id bigint not null references cage.custody_entries (id) on delete restrict,
  message text not null,
  signature bytea not null,
  public_key bytea not null,
  created_at timestamptz not null default now(),
  constraint custody_releases_one_per_dispute unique (dispute_id),
  constraint custody_releases_signature check (length(signature) = 64),
  constraint custody_releases_public_key check (length(public_key) = 32)
);
comment on table cage.custody_releases is 'The arbiter''s signed releases of disputed custody entries (POST /admin/custody/release), one per dispute. Append-only.';
create trigger tg_custody_releases__append_only before update or delete on cage.custody_releases
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_custody_releases__no_truncate before truncate on cage.custody_releases
  for each statement execute function cage_private.tg_refuse_change();

alter table cage.custody_disputes enable row level security;
alter table cage.custody_releases enable row level security;

-- 6. The operator's custody acts, recorded like the others (who, why): an escape (ref: its journal
--    entry), a hold's reconciliation (ref custody-reconcile:<hold id>: one per hold) and a dispute
--    (ref custody-dispute:<dispute id>). Each needs a reason.
alter table cage.operator_acts drop constraint operator_acts_act;
alter table cage.operator_acts add constraint operator_acts_act
  check (act in ('purchase', 'redemption', 'correction', 'switch', 'escape', 'custody_reconcile', 'custody_dispute'));
alter table cage.operator_acts add constraint operator_acts_custody_reason
  check (act not in ('escape', 'custody_reconcile', 'custody_dispute') or reason is not null);
