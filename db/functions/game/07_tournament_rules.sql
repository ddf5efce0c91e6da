-- The Sit-and-Go's rules, each defined once, here (issue 22, "Each rule once"): the lifecycle
-- states (game_private.lifecycle_states, in migration 000036: the table's checks read it), the
-- starting -> playing grace, the longest unpaid reserve, the clock factor and the prize pool's split
-- into places. The SQL of the lifecycle and of settlement calls these; TypeScript reads the
-- constants from game.tournament_rules() (generated into server/tournaments/rules.generated.ts,
-- which test/tournaments/tournament-rules.test.ts compares with this function) and a table's derived values
-- (its clock factor, level and turn lengths, place amounts) from the read view game.tournaments
-- (60_read_views.sql).

-- The starting -> playing grace, in tournament seconds (spec: Limits).
create or replace function game_private.start_grace_seconds() returns integer
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select 3
$$;

-- The longest an unpaid reserve holds its seat, in tournament seconds (spec: Limits).
create or replace function game_private.reserve_ttl_seconds() returns integer
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select 120
$$;

-- The largest clock factor table creation accepts (the test harness's acceleration).
create or replace function game_private.max_clock_factor() returns integer
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select 1000
$$;

-- The constants above as one object, for TypeScript (the names are the generated file's).
create or replace function game.tournament_rules() returns jsonb
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
    'lifecycleStates', to_jsonb(game_private.lifecycle_states()),
    'startGraceSeconds', game_private.start_grace_seconds(),
    'reserveTtlSeconds', game_private.reserve_ttl_seconds(),
    'maxClockFactor', game_private.max_clock_factor())
$$;

create or replace function game_private.sng_number(p_settings jsonb, p_key text) returns numeric
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case when jsonb_typeof(p_settings -> p_key) = 'number' then (p_settings ->> p_key)::numeric end
$$;

-- The table's clock factor: its `clockFactor` setting (set only by the test harness at creation),
-- 1 when absent or below 1, at most max_clock_factor(). Every duration of the table is divided by it.
-- (Security definer, as the other functions game.tournaments shows: its readers execute this one,
-- not the rules' parts.)
create or replace function game_private.sng_clock_factor(p_settings jsonb) returns numeric
  language sql immutable parallel safe security definer
  set search_path = pg_catalog, pg_temp
as $$
  select least(greatest(coalesce(game_private.sng_number(p_settings, 'clockFactor'), 1), 1), game_private.max_clock_factor())
$$;

-- A duration of this table's clock: p_seconds of tournament time, divided by its clock factor.
create or replace function game_private.sng_interval(p_settings jsonb, p_seconds numeric) returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select make_interval(secs => (p_seconds / game_private.sng_clock_factor(p_settings))::double precision)
$$;

-- The same duration in (fractional) milliseconds, as the room's timers take it.
create or replace function game_private.sng_ms(p_settings jsonb, p_seconds numeric) returns double precision
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select (p_seconds * 1000 / game_private.sng_clock_factor(p_settings))::double precision
$$;

-- The level duration (the resolved settings carry the effective one at the top level).
create or replace function game_private.sng_level_seconds(p_settings jsonb) returns numeric
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(game_private.sng_number(p_settings, 'levelDurationSeconds'), 600)
$$;

create or replace function game_private.sng_level_interval(p_settings jsonb) returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select game_private.sng_interval(p_settings, game_private.sng_level_seconds(p_settings))
$$;

-- A level's and a turn's length on the table's clock, in ms (the room's timers).
create or replace function game_private.sng_level_ms(p_settings jsonb) returns double precision
  language sql immutable parallel safe security definer
  set search_path = pg_catalog, pg_temp
as $$
  select game_private.sng_ms(p_settings, game_private.sng_level_seconds(p_settings))
$$;

create or replace function game_private.sng_action_ms(p_settings jsonb) returns double precision
  language sql immutable parallel safe security definer
  set search_path = pg_catalog, pg_temp
as $$
  select game_private.sng_ms(p_settings, coalesce(game_private.sng_number(p_settings, 'actionTimeoutSeconds'), 30))
$$;

-- The prize pool: (entryFee - rakeFee) x seats (the field is full when play starts).
create or replace function game_private.sng_prize_pool(p_settings jsonb) returns bigint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select (game_private.setting_bigint(p_settings, 'entryFee') - coalesce(game_private.setting_bigint(p_settings, 'rakeFee'), 0))
         * game_private.setting_bigint(p_settings, 'seats')
$$;

-- The chips of each paid place, from the stored prize structure (percent x 100 = basis points,
-- rounded): floor(pool x bp / 10000) per place, what the floors leave to 1st. Sums to the pool.
create or replace function game_private.sng_place_amounts(p_settings jsonb)
  returns table (place integer, amount bigint)
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  with bp as (
    select (e ->> 'position')::integer as place, round((e ->> 'percent')::numeric * 100)::bigint as points
      from jsonb_array_elements(p_settings -> 'prizeStructure') e
  ), floored as (
    select b.place, (game_private.sng_prize_pool(p_settings) * b.points) / 10000 as amount from bp b
  )
  select f.place, f.amount + case when f.place = 1 then game_private.sng_prize_pool(p_settings) - (select sum(x.amount) from floored x)::bigint else 0 end
    from floored f
$$;

-- The same amounts as an array, index 1 = 1st place (the read view's form).
create or replace function game_private.sng_place_amount_list(p_settings jsonb) returns bigint[]
  language sql immutable parallel safe security definer
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(array_agg(a.amount order by a.place), '{}') from game_private.sng_place_amounts(p_settings) a
$$;

-- The field's live registrations: reserved or paid positions not closed (security definer: the
-- read view game.tournaments shows it to logins that do not read the positions themselves).
create or replace function game_private.registered_count(p_table_id text) returns integer
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select count(*)::integer from game.table_players p where p.table_id = p_table_id and p.status <> 'closed'
$$;
