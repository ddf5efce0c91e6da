-- One table, one dealer. Every game process registers itself (game_processes) and holds a
-- session-level advisory lock for its row on a dedicated connection, so a process that dies (even
-- by kill -9) is seen as gone the moment Postgres drops its connection. A table's room runs only
-- under a lease (table_leases): taken when the room loads, renewed while it lives, released when
-- it stops, taken over when its holder is gone or let it expire. Every take bumps the epoch, and
-- the hand functions refuse an epoch that is not the current one (lease_lost).

create table game.game_processes (
  id uuid primary key default gen_random_uuid(),
  -- the second key of the process's presence lock, pg_advisory_lock(<game namespace>, lock_key)
  lock_key integer generated always as identity (minvalue 1 maxvalue 2147483647 cycle) unique,
  url text check (url is null or length(url) <= 500),
  started_at timestamptz not null default now()
);
comment on table game.game_processes is
  'The running game processes: each holds the presence lock of its row while its connection lives. Written by game.register_process only.';

create table game.table_leases (
  table_id text primary key references game.tables (table_id) on delete cascade,
  holder uuid references game.game_processes (id) on delete set null,
  epoch bigint not null default 0 check (epoch >= 0),
  taken_at timestamptz,
  expires_at timestamptz
);
comment on table game.table_leases is
  'Which game process runs each table (holder), under which tenure (epoch, bumped on every take) and until when (expires_at, renewed while the room lives).';
create index table_leases_holder_idx on game.table_leases (holder);

-- when a seat was stood up, so the cash reconciler can tell a stand-up whose settlement is
-- still in flight from one whose answer was lost
alter table game.table_players add column leaving_at timestamptz;
comment on column game.table_players.leaving_at is 'When the position was stood up (status leaving); null before.';
create index table_players_leaving_idx on game.table_players (leaving_at) where status = 'leaving';

alter table game.game_processes enable row level security;
alter table game.table_leases enable row level security;
