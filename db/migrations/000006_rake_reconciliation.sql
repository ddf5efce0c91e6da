-- Rake reconciliation (spec, Cage: "Rake: recorded as a negative term. Reconciliation claims the
-- house rows and extends the hash chain without moving money").
--
-- The house rows: one per hand that took rake, written by game.finish_hand in the hand's own
-- transaction. A reconciliation (cage.reconcile_rake) claims every unclaimed row of a table at
-- once, links a record into the table's rake hash chain, and moves the amount from the table's
-- unreconciled rake to its reconciled rake. No chip moves: the rake stays in the table's escrow,
-- and the audit's invariant 4 counts both terms.

create table game.rake_rows (
  hand_id text primary key,
  table_id text not null references game.tables (table_id) on delete restrict,
  amount bigint not null,
  -- the reconciliation that claimed the row; null until then
  reconciliation_id bigint,
  created_at timestamptz not null default now(),
  constraint rake_rows_amount_positive check (amount > 0)
);
create index rake_rows_unclaimed_idx on game.rake_rows (table_id) where reconciliation_id is null;
comment on table game.rake_rows is 'The house rows: the rake of each hand that took some, written at the hand''s end (game.finish_hand); claimed once by a rake reconciliation.';

create table cage.rake_reconciliations (
  id bigint generated always as identity primary key,
  table_id text not null references game.tables (table_id) on delete restrict,
  money_kind cage.money_kind not null,
  amount bigint not null,
  hands integer not null,
  -- sha256 over the claimed rows (`hand_id=amount`, by hand id, comma-separated), hex
  rows_digest text not null,
  -- the table's rake chain: hash = sha256(prev_hash|table_id|money_kind|amount|hands|rows_digest);
  -- the first prev_hash is sha256('rake:' || table_id)
  prev_hash text not null,
  hash text not null,
  created_at timestamptz not null default now(),
  constraint rake_reconciliations_amount_positive check (amount > 0),
  constraint rake_reconciliations_hands_positive check (hands > 0),
  constraint rake_reconciliations_hash_unique unique (hash),
  constraint rake_reconciliations_chain_unique unique (table_id, prev_hash)
);
create index rake_reconciliations_table_idx on cage.rake_reconciliations (table_id, id desc);
comment on table cage.rake_reconciliations is 'The cage''s claims of the house rows of a table, a hash chain per table; append-only. No money moves.';

alter table game.rake_rows
  add constraint rake_rows_reconciliation_fk foreign key (reconciliation_id)
  references cage.rake_reconciliations (id) on delete restrict;

alter table game.tables add column reconciled_rake bigint not null default 0;
alter table game.tables add constraint tables_reconciled_rake_nonnegative check (reconciled_rake >= 0);

-- Rake taken before this migration has no hand rows: one row per table carries it, so every
-- unreconciled chip has a house row to claim.
insert into game.rake_rows (hand_id, table_id, amount)
select 'before-rake-rows:' || t.table_id, t.table_id, t.unreconciled_rake
  from game.tables t where t.unreconciled_rake > 0;

create trigger tg_rake_reconciliations__append_only before update or delete on cage.rake_reconciliations
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_rake_reconciliations__no_truncate before truncate on cage.rake_reconciliations
  for each statement execute function cage_private.tg_refuse_change();

-- A house row is claimed once: only its reconciliation id changes, from null; it is never deleted.
create function game_private.tg_rake_row_claim_once() returns trigger
  language plpgsql as $$
begin
  if tg_op = 'DELETE' or old.reconciliation_id is not null or new.reconciliation_id is null
     or new.hand_id <> old.hand_id or new.table_id <> old.table_id or new.amount <> old.amount
     or new.created_at <> old.created_at then
    raise exception using errcode = 'CGIMM', message = 'journal_immutable',
      detail = format('%s on game.rake_rows is refused: a house row is claimed once and never changed otherwise', tg_op);
  end if;
  return new;
end;
$$;
create trigger tg_rake_rows__claim_once before update or delete on game.rake_rows
  for each row execute function game_private.tg_rake_row_claim_once();
create trigger tg_rake_rows__no_truncate before truncate on game.rake_rows
  for each statement execute function cage_private.tg_refuse_change();

alter table game.rake_rows enable row level security;
alter table cage.rake_reconciliations enable row level security;
