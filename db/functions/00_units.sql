-- Chip units and their conversions, defined once (issue 32): one chip is 10^6 base units, the base
-- unit of the chip token (a 6-decimal ERC-20) and of custody entries and gas micro-units alike. The
-- SQL that converts calls cage_private.base_units(); TypeScript imports the constants generated from
-- cage.chip_units() (server/units.generated.ts, which test/platform/units.test.ts compares with this
-- function; UNITS_WRITE=1 with that test writes it again). This file sorts before the domain folders,
-- so the functions there find these when they are created.

-- The base units of one chip (spec: custody entries carry base units; readers divide by 10^6).
create or replace function cage_private.base_units() returns bigint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$ select 1000000::bigint $$;

-- The decimals of the chip token: base_units() = 10^decimals.
create or replace function cage_private.token_decimals() returns integer
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$ select 6 $$;

-- The constants above as one object, for TypeScript (the names are the generated file's) and for
-- the readers of views that convert (security definer: they execute this, not the private parts).
create or replace function cage.chip_units() returns jsonb
  language sql immutable parallel safe security definer
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object('baseUnitsPerChip', cage_private.base_units(), 'tokenDecimals', cage_private.token_decimals())
$$;
