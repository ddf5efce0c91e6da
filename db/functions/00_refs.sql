-- The ledger refs more than one place spells, each spelled once here: the journal's ref_id of a
-- movement (cage.cage_entries.ref_id, unique, so a ref is also the movement's replay key) and the
-- closing ref of a position. The SQL that writes or matches a ref calls these; TypeScript that needs
-- one asks the database (the cage's deposit read) or reads a view column that says what the ref
-- means (game.seats.refunded, game.seats.in_final_standings). This file sorts before the domain
-- folders, so the SQL functions there find these when they are created.

-- A deposit's (a cash buy-in's or a tournament entry's) ref: `deposit:{userId}:{idempotencyKey}`. The
-- key is the caller's own namespace: another user's deposit under the same key is another ref.
create or replace function cage.deposit_ref(p_user_id uuid, p_idempotency_key text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select format('deposit:%s:%s', p_user_id, p_idempotency_key)
$$;

-- A tournament entry's refund: `tournament-refund:{the entry's ref}` (the cage's deposit ref, or the
-- chain bank's deposit key).
create or replace function cage.tournament_refund_ref(p_entry_ref text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select 'tournament-refund:' || p_entry_ref
$$;

-- Whether a ref is a tournament refund's (the admin's registration history reads it).
create or replace function cage.is_tournament_refund_ref(p_ref text) returns boolean
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(starts_with(p_ref, 'tournament-refund:'), false)
$$;

-- The closing ref of every position that played a tournament to its end (settlement's):
-- `tournament:{tableId}`.
create or replace function cage.tournament_ref(p_table_id text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select format('tournament:%s', p_table_id)
$$;

-- A tournament place's payout: `payout:{tableId}:{position}` (also its payout job's key,
-- game_private.payout_job_key, and the chain bank's payment key).
create or replace function cage.payout_ref(p_table_id text, p_position integer) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select format('payout:%s:%s', p_table_id, p_position)
$$;

-- A settled market's payout to one user: `bet-claim:{marketId}:{userId}`.
create or replace function cage.bet_claim_ref(p_market_id text, p_user_id uuid) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select format('bet-claim:%s:%s', p_market_id, p_user_id)
$$;
