-- Issue 31: the dealer's key out of the database, and the audit of causes (docs/security.md "The
-- dealer and the audit of causes").
--
-- 1. The dealer's private key leaves the database. It was readable by the game login
--    (game.dealer_private_key), so it is treated as known to whoever held that login: it is dropped,
--    not moved. The game role now signs with GAME_DEALER_KEY or, outside production, a key file of its
--    own (server/crypto/key-files.ts); the database keeps only the PINNED public halves, pinned and
--    retired by an operator's live session (game.pin_dealer_key / game.retire_dealer_key) or by the
--    owner (the development start pins its own key). The keys that signed the records stored before
--    this migration are pinned here, retired now: their hands still verify, no new hand may use them.
drop function if exists game.dealer_private_key(bytea);

create table game_private.dealer_public_keys (
  public_key text primary key check (public_key ~ '^[0-9a-f]{64}$'),
  pinned_at timestamptz not null default now(),
  -- 'owner' (a migration, the development start) or 'admin:<admin id>'
  pinned_by text not null,
  retired_at timestamptz,
  retired_by text,
  constraint dealer_public_keys_retired check ((retired_at is null) = (retired_by is null) and (retired_at is null or retired_at >= pinned_at))
);
comment on table game_private.dealer_public_keys is 'The dealer''s pinned public keys (ed25519, hex). A hand record verifies only against a key pinned when the hand ended and not retired before it. Written by operator acts and the owner only.';
alter table game_private.dealer_public_keys enable row level security;

insert into game_private.dealer_public_keys (public_key, pinned_at, pinned_by, retired_at, retired_by)
select k, '-infinity', 'owner', now(), 'owner: migration 000044 (the key was readable by the game login)'
  from (select distinct h.dealer_key as k from game.hand_histories h where h.dealer_key is not null) d
on conflict do nothing;

drop table game_private.dealer_keys;

-- 2. The audit of causes (server/audit/): per table, the last hand its hand check covered (its chain
--    head and, at a tournament table, the stacks that hand ended with); per position, the last link of
--    its chain covered. A run reads only the hands and links after these marks; a clean periodic run
--    moves them. The same per-table mark is what tournament payouts and bet settlements wait for.
create table cage_private.cause_table_marks (
  table_id text primary key references game.tables (table_id) on delete restrict,
  hand_number bigint not null,
  record_hash text,
  stacks jsonb not null default '{}',
  audited_at timestamptz not null default now()
);
create table cage_private.cause_position_marks (
  player_id bigint primary key references game.table_players (id) on delete restrict,
  seq integer not null,
  stack bigint not null
);
-- Every run of the audit: the periodic job's (which move the marks when clean) and the operators'.
-- The liveness check reads the last clean periodic one.
create table cage_private.audit_runs (
  id bigint generated always as identity primary key,
  ran_at timestamptz not null default now(),
  periodic boolean not null,
  clean boolean not null,
  violations integer not null,
  hands_read integer not null,
  links_read integer not null,
  -- where the run left the checkpoints: the cage journal's (its last covered entry), and how many
  -- tables and positions it moved the marks of
  checkpoint jsonb not null default '{}'
);
create index audit_runs_clean_periodic_idx on cage_private.audit_runs (ran_at desc) where periodic and clean;
alter table cage_private.cause_table_marks enable row level security;
alter table cage_private.cause_position_marks enable row level security;
alter table cage_private.audit_runs enable row level security;

-- Hands before the fair-deal migration (000038) carry no record: the audit covers them by the sums
-- only. The cut is when 000038 was applied here.
create table cage_private.cause_audit_settings (
  id boolean primary key default true check (id),
  records_since timestamptz not null
);
insert into cage_private.cause_audit_settings (records_since)
select coalesce((select min(m.applied_at) from poker_migrate.migrations m where m.name like '000038%'), now());
alter table cage_private.cause_audit_settings enable row level security;

-- the links of a hand end (the audit reads them by the hand's id)
create index position_links_ref_idx on game.position_links (ref_id) where event = 'hand';
