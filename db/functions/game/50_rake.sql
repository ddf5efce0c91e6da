-- The game's side of the rake reconciliation (cage.reconcile_rake, db/functions/cage/80_rake.sql):
-- the house rows and the table's rake terms are the game's, so only these functions write them.

-- Locks the table row (ordering the reconciliation against game.finish_hand, which adds rake and
-- house rows under the same lock, and against a concurrent reconciliation of the table) and reads
-- its unclaimed house rows: their sum, their count and their digest (sha256 over `hand_id=amount`,
-- by hand id, comma-separated, hex).
create or replace function game_private.unclaimed_rake(p_table_id text)
  returns table (money_kind text, unreconciled_rake bigint, amount bigint, hands integer, rows_digest text)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  v_table := game_private.lock_table(p_table_id);
  return query
  select v_table.money_kind::text, v_table.unreconciled_rake, coalesce(sum(r.amount), 0)::bigint, count(*)::integer,
         encode(sha256(convert_to(coalesce(string_agg(r.hand_id || '=' || r.amount, ',' order by r.hand_id), ''), 'UTF8')), 'hex')
    from game.rake_rows r where r.table_id = p_table_id and r.reconciliation_id is null;
end;
$$;

-- Claims the table's unclaimed house rows for a reconciliation and moves their sum from the
-- table's unreconciled to its reconciled rake. The caller holds the table lock (unclaimed_rake, in
-- the same transaction). Returns the table's reconciled rake after.
create or replace function game_private.claim_rake_rows(p_table_id text, p_reconciliation_id bigint, p_amount bigint)
  returns bigint
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_reconciled bigint;
begin
  update game.rake_rows r set reconciliation_id = p_reconciliation_id where r.table_id = p_table_id and r.reconciliation_id is null;
  update game.tables t set unreconciled_rake = 0, reconciled_rake = t.reconciled_rake + p_amount
   where t.table_id = p_table_id
  returning t.reconciled_rake into v_reconciled;
  return v_reconciled;
end;
$$;
