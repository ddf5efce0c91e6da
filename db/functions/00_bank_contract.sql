-- The bank contract's constants (server/bank-contract/contract.ts), defined once for both banks: the
-- cage (db/functions/cage) and the chain bank (db/functions/bank) read them, never a copy.

-- How long after a settlement a repeated withdraw (its seat now empty) answers that settlement as
-- a replay (spec: "Withdraw (bank)", the replay of a withdrawal under its key). After it the seat is
-- simply empty: 404 not_at_table. Both banks' replay lookups compare created_at with it.
create or replace function cage.withdraw_replay_window() returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select interval '15 minutes'
$$;
