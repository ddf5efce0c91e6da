-- Who sat out, in SQL (issue 18): a seated player the dealer has sat out (turn timeouts, or their
-- own sit_out) carries the time it began, and the house's idle time is the database's. A forced
-- stand-up (the spec's sit-out timeout) is accepted only for a position sat out that long, so no
-- service login can remove a player who is playing; a voluntary one is the player's own grant.
alter table game.table_players add column sat_out_at timestamptz;
comment on column game.table_players.sat_out_at is
  'When the dealer sat this seated position out (game.set_sitting_out, under the table''s lease); null while dealt in.';

-- The house rules the game's SQL enforces: one row, set by the operators' deployment (the migrator
-- seeds it from IDLE_KICK_SECONDS on every start); no service login may write it.
create table game.house_rules (
  singleton boolean primary key default true constraint house_rules_singleton check (singleton),
  idle_kick_seconds integer not null default 300 constraint house_rules_idle check (idle_kick_seconds between 0 and 86400),
  updated_at timestamptz not null default now()
);
insert into game.house_rules default values;
comment on table game.house_rules is 'The deployment''s game rules enforced in SQL: how long a sat-out player keeps the seat (idle_kick_seconds).';

-- the stand-up is split by its authority (db/functions/game/20_seats.sql)
drop function if exists game.stand_up(text, uuid, boolean);
