-- The cage: a double-entry journal of chips. Writes happen only through the functions in
-- db/functions/cage/; these tables are the storage, not the API.

create schema cage;
create schema cage_private;

create type cage.money_kind as enum ('play', 'real');

-- Counterparts of every movement. The unbounded ones (outside world, grant source, house) may go
-- negative or grow without limit; their balance is derived from the journal, never kept on a row,
-- so they never become a hot row that serialises the ledger.
create type cage.account_type as enum (
  'user', 'outside', 'grant_source', 'table_escrow', 'custody', 'tournament_pool', 'betting', 'gas_tank', 'house'
);

create type cage.movement_kind as enum (
  'purchase', 'grant', 'claim', 'table_buy_in', 'table_cash_out', 'bust_close', 'custody_claim',
  'tournament_entry', 'tournament_payout', 'bet_stake', 'bet_payout', 'gas_deposit', 'gas_withdraw', 'adjustment'
);

create table cage.cage_accounts (
  id bigint generated always as identity primary key,
  account_type cage.account_type not null,
  user_id uuid,
  scope text,
  money_kind cage.money_kind not null,
  -- set from the type when the account is created (tg_cage_accounts__shape), never changed
  bounded boolean not null,
  balance bigint not null default 0,
  version bigint not null default 0,
  created_at timestamptz not null default now(),
  -- The only CHECK: PostgreSQL evaluates every CHECK of a table on every UPDATE, and balances are
  -- updated on every posting. The identity rules below are enforced once, at insert, by a trigger.
  constraint cage_accounts_balance_nonnegative check (balance >= 0),
  constraint cage_accounts_identity unique nulls not distinct (account_type, user_id, scope, money_kind)
) with (fillfactor = 70); -- room on each page, so a balance update stays a HOT update (no index writes)
comment on table cage.cage_accounts is
  'The (owner, money kind) projection of the journal. balance/version are kept for bounded accounts only; rebuildable by cage.rebuild_projection().';
create index cage_accounts_user_idx on cage.cage_accounts (user_id) where user_id is not null;

-- One row per journal transaction: the ref_id is claimed here, once.
create table cage.cage_entries (
  id bigint generated always as identity primary key,
  ref_id text not null,
  kind cage.movement_kind not null,
  money_kind cage.money_kind not null,
  accounts bigint[] not null,
  amounts bigint[] not null,
  memo jsonb not null default '{}',
  created_at timestamptz not null default now(),
  constraint cage_entries_ref_id_unique unique (ref_id),
  constraint cage_entries_ref_id_shape check (length(ref_id) between 1 and 200),
  constraint cage_entries_legs check (cardinality(accounts) = cardinality(amounts) and cardinality(accounts) >= 2)
);
comment on table cage.cage_entries is 'Journal transactions (movements). Append-only. ref_id is replay-once.';

-- The journal lines: one signed posting per account per movement.
-- Keyed by (entry, account): an account appears at most once per movement. No foreign key to the
-- entry: only cage.post_movement(s) write here, in the entry's own transaction, and the audit checks
-- every posting has its entry; a foreign key would lock the entry row and write WAL for each posting.
create table cage.cage_ledger (
  id bigint generated always as identity,
  entry_id bigint not null,
  account_id bigint not null,
  money_kind cage.money_kind not null,
  kind cage.movement_kind not null,
  ref_id text not null,
  amount bigint not null,
  balance_after bigint,
  account_version bigint,
  created_at timestamptz not null default now(),
  constraint cage_ledger_pkey primary key (entry_id, account_id)
);
comment on table cage.cage_ledger is
  'Append-only postings (signed amounts). balance_after/account_version are set for bounded accounts only.';
create index cage_ledger_account_idx on cage.cage_ledger (account_id, id);

-- One movement of a batch as cage.post_movements carries it between its set-based steps.
create type cage_private.batch_item as (
  i int,
  ref_id text,
  kind text,
  money_kind text,
  accounts bigint[],
  amounts bigint[],
  memo jsonb,
  code text,
  entry_id bigint,
  replay_of int
);

-- Hand-boundary books of a table, reported by the game side through the cage: the escrow of a
-- table must equal its live stacks plus the rake not yet reconciled (invariant 4).
create table cage.table_books (
  table_id text not null,
  money_kind cage.money_kind not null,
  live_stacks bigint not null check (live_stacks >= 0),
  unreconciled_rake bigint not null check (unreconciled_rake >= 0),
  hand_id text,
  updated_at timestamptz not null default now(),
  primary key (table_id, money_kind)
);

-- Signed settlement receipts: the payload bytes exactly as signed.
create table cage.receipts (
  id bigint generated always as identity primary key,
  ledger_ref_id text not null references cage.cage_entries (ref_id) on delete restrict,
  user_id uuid not null,
  table_id text,
  history_hash text,
  payload bytea not null,
  signature bytea not null check (length(signature) = 64),
  public_key bytea not null check (length(public_key) = 32),
  created_at timestamptz not null default now(),
  constraint receipts_one_per_settlement unique (ledger_ref_id)
);
create index receipts_user_idx on cage.receipts (user_id, id);

-- The cage's receipt signing key when CAGE_RECEIPT_KEY is not configured: generated once, kept.
create table cage_private.receipt_keys (
  id boolean primary key default true check (id),
  private_key bytea not null check (length(private_key) = 32),
  created_at timestamptz not null default now()
);

-- Append-only, enforced by the database itself.
create function cage_private.tg_refuse_change() returns trigger
  language plpgsql as $$
begin
  raise exception using errcode = 'CGIMM', message = 'journal_immutable',
    detail = format('%s on %s.%s is refused: the journal is append-only', tg_op, tg_table_schema, tg_table_name);
end;
$$;

-- An account's identity is fixed at creation: its shape is checked once, there.
create function cage_private.tg_cage_accounts__shape() returns trigger
  language plpgsql as $$
declare
  v_ok boolean;
begin
  v_ok := case
            when new.account_type = 'user' then new.user_id is not null and new.scope is null
            when new.account_type in ('table_escrow', 'tournament_pool') then new.user_id is null and new.scope is not null
            else new.user_id is null
          end;
  if not v_ok or (new.scope is not null and length(new.scope) not between 1 and 128) then
    raise exception using errcode = 'CGACS', message = 'invalid_account',
      detail = 'user accounts need a user id and no scope; table_escrow and tournament_pool need a scope (1..128 chars)';
  end if;
  new.bounded := new.account_type not in ('outside', 'grant_source', 'house');
  new.balance := 0;
  new.version := 0;
  return new;
end;
$$;
create trigger tg_cage_accounts__shape before insert on cage.cage_accounts
  for each row execute function cage_private.tg_cage_accounts__shape();
create trigger tg_cage_accounts__identity_fixed before update of account_type, user_id, scope, money_kind, bounded
  on cage.cage_accounts
  for each row when (old.account_type is distinct from new.account_type or old.user_id is distinct from new.user_id
                     or old.scope is distinct from new.scope or old.money_kind is distinct from new.money_kind
                     or old.bounded is distinct from new.bounded)
  execute function cage_private.tg_refuse_change();

create trigger tg_cage_ledger__append_only before update or delete on cage.cage_ledger
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_cage_ledger__no_truncate before truncate on cage.cage_ledger
  for each statement execute function cage_private.tg_refuse_change();
create trigger tg_cage_entries__append_only before update or delete on cage.cage_entries
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_cage_entries__no_truncate before truncate on cage.cage_entries
  for each statement execute function cage_private.tg_refuse_change();
create trigger tg_receipts__append_only before update or delete on cage.receipts
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_receipts__no_truncate before truncate on cage.receipts
  for each statement execute function cage_private.tg_refuse_change();
-- Accounts are never deleted (their postings would dangle); balances change only through postings.
create trigger tg_cage_accounts__no_delete before delete on cage.cage_accounts
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_cage_accounts__no_truncate before truncate on cage.cage_accounts
  for each statement execute function cage_private.tg_refuse_change();

alter table cage.cage_accounts enable row level security;
alter table cage.cage_entries enable row level security;
alter table cage.cage_ledger enable row level security;
alter table cage.table_books enable row level security;
alter table cage.receipts enable row level security;
alter table cage_private.receipt_keys enable row level security;
