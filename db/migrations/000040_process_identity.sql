-- Issue 31, class 4: a game process is who its connection proves.
--
-- A game process's identity was its id, named by the caller: a thief of the game login could
-- unregister the real process, take its place after terminating its presence connection, or take
-- a lease under a URL of its choosing. Now a process is bound to the backend that registered it
-- (backend_pid) and to a nonce that lives only in that backend's session (presence_hash: the hash
-- of a setting SQL set there and never returned), and its presence lock must be held by that same
-- backend. The lease functions act for the calling connection's process, never an id they are
-- given. A process that lost its connection comes back under its id only with the succession
-- secret it was given at registration (succession_hash: only the hash is kept).
--
-- A process's public URL comes from a list the operators keep (game.process_urls, written by the
-- operators' functions with a live admin session, or by the owner in development), never free
-- text from the game login. Freezing a table is an operator act (game.table_status_acts records
-- who). begin_hand and finish_hand, called only by the test harness, leave the game login's grants
-- (db/policies/40_game.sql).

alter table game.game_processes
  add column backend_pid integer,
  add column presence_hash bytea,
  add column succession_hash bytea;
comment on column game.game_processes.backend_pid is 'The backend (pg_backend_pid) whose connection registered the process and holds its presence lock.';
comment on column game.game_processes.presence_hash is 'sha256 of the nonce register_process set in that backend''s session (game_private.presence); never returned to anyone.';
comment on column game.game_processes.succession_hash is 'sha256 of the secret the process was given at registration: it comes back under its id after a lost connection only with it.';
-- rows of processes registered before this migration prove nothing: they are gone
delete from game.game_processes;
-- a presence lock key is drawn at random (game_private.bind_process), not the next of a sequence a
-- thief could lock ahead of a registration
alter table game.game_processes alter column lock_key drop identity if exists;
alter table game.game_processes alter column lock_key drop not null;
alter table game.game_processes add constraint game_processes_lock_key_range check (lock_key between 1 and 2147483647);

create table game.process_urls (
  url text primary key check (length(url) <= 500 and url ~ '^https?://[^[:space:]]+$'),
  added_by uuid,
  added_at timestamptz not null default now()
);
comment on table game.process_urls is
  'The public URLs a game process may announce (clients are sent there for the tables it runs). Kept by the operators (game.allow_process_url, game.forbid_process_url: a live admin session; added_by) or, in development, by the owner (added_by null).';
alter table game.process_urls enable row level security;

create table game.table_status_acts (
  id bigint generated always as identity primary key,
  table_id text not null references game.tables (table_id) on delete cascade,
  status text not null check (status in ('active', 'frozen')),
  admin_id uuid not null,
  at timestamptz not null default now()
);
comment on table game.table_status_acts is 'Every freeze and thaw of a table by an operator (game.set_table_status with a live admin session).';
alter table game.table_status_acts enable row level security;

drop function if exists game.register_process(text, uuid);
drop function if exists game.set_process_url(uuid, text);
drop function if exists game.unregister_process(uuid);
drop function if exists game.take_lease(text, uuid, integer);
drop function if exists game.renew_leases(uuid, text[], bigint[], integer);
drop function if exists game.release_lease(text, uuid, bigint);
drop function if exists game.set_table_status(text, text);
