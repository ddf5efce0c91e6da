-- A stolen service login proves no authority (issue 18), part 1: operator acts carry a live admin
-- session, the real-money switch lives in the database, and nothing resolves a name through a
-- session's temporary schema.

-- 1. Each admin session has an unguessable handle, `sid`, carried by the access JWT minted for it
--    (GET /api/auth/token). An operator act names it; the SQL derives the operator from it
--    (auth_private.admin_of_session): the session must exist, belong to an admin, and be neither
--    signed out nor expired. No service login reads auth_private.sessions, so a login cannot find a
--    handle; the bigint id stays the table's key.
alter table auth_private.sessions add column sid uuid not null default gen_random_uuid();
alter table auth_private.sessions add constraint sessions_sid_unique unique (sid);
drop function if exists auth.create_session(uuid, bytea, integer);
drop function if exists auth.session_for(bytea);

-- 2. The operator functions take the session handle instead of an admin id (their parameter is
--    renamed, so the old forms go).
drop function if exists cage.exchange_chips(text, uuid, bigint, text, text, uuid);
drop function if exists cage.correct_books(uuid, text, text, bigint[], bigint[], text);
drop function if exists claims.set_board_settings(uuid, text, boolean, boolean);
drop function if exists claims.create_section(uuid, text, jsonb);
drop function if exists claims.patch_section(uuid, text, text, jsonb);
drop function if exists claims.delete_section(uuid, text, text);
drop function if exists claims_private.record_edit(uuid, text, text, text, jsonb);

-- 3. The platform's switches, set by operators (cage.set_switch, recorded in cage.operator_acts).
--    `real_money`: real chips come in (purchases, real deposits, real tables) only while it is on.
--    The environment (REAL_MONEY_ENABLED) seeds a switch the first time a database starts: the
--    migrator inserts the row when it is missing and never changes it after.
create table cage.switches (
  name text primary key,
  enabled boolean not null,
  updated_at timestamptz not null default now(),
  updated_by uuid,
  constraint switches_name check (name in ('real_money'))
);
comment on table cage.switches is 'Operator switches (real_money); seeded once from the environment by the migrator, then set only by cage.set_switch.';
alter table cage.switches enable row level security;

alter table cage.operator_acts drop constraint operator_acts_act;
alter table cage.operator_acts add constraint operator_acts_act check (act in ('purchase', 'redemption', 'correction', 'switch'));
alter table cage.operator_acts add column change jsonb;

-- 4. Trigger functions made by migrations pin their search_path too (db/functions pins every
--    other), with pg_temp last: a session's temporary table never shadows a name they read.
alter function auth_private.tg_users__creation_path() set search_path = pg_catalog, pg_temp;
alter function auth_private.tg_credentials__not_bridged() set search_path = pg_catalog, pg_temp;
alter function auth_private.tg_wallets__one_primary() set search_path = pg_catalog, pg_temp;
alter function cage_private.tg_refuse_change() set search_path = pg_catalog, pg_temp;
alter function cage_private.tg_cage_accounts__shape() set search_path = pg_catalog, pg_temp;
alter function game_private.tg_rake_row_claim_once() set search_path = pg_catalog, pg_temp;
