-- Rake reconciliation (spec, Cage: "Reconciliation claims the house rows and extends the hash chain
-- without moving money"). The rake of every hand is a house row (game.rake_rows, written by
-- game.finish_hand); a reconciliation claims all unclaimed rows of one table, links a record into
-- the table's rake chain and moves the sum from the table's unreconciled to its reconciled rake.
-- The chips stay in the table's escrow: the house's cut is a ledger calculation, never a transfer.

create or replace function cage_private.rake_chain_genesis(p_table_id text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select encode(sha256(convert_to('rake:' || p_table_id, 'UTF8')), 'hex')
$$;

-- Reconciles one table's rake. Returns the new chain record, or no row when the table has no
-- unclaimed house row (nothing to do is not an error: the reconciler calls it for every table).
-- Refuses table_not_found, and rake_books_diverge when the table's unreconciled rake is not the
-- sum of its unclaimed house rows (nothing is claimed then: an operator looks first).
create or replace function cage.reconcile_rake(p_table_id text)
  returns table (reconciliation_id bigint, table_id text, money_kind text, amount bigint, hands integer,
                 rows_digest text, prev_hash text, hash text, reconciled_rake bigint, created_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_money_kind text;
  v_unreconciled bigint;
  v_reconciled bigint;
  v_amount bigint;
  v_hands integer;
  v_digest text;
  v_prev text;
  v_row cage.rake_reconciliations;
begin
  if p_table_id is null or length(p_table_id) not between 1 and 128 then
    perform cage_private.refuse('bad_request', 'a table id');
  end if;
  if not exists (select from game.tables t where t.table_id = p_table_id) then
    perform cage_private.refuse('table_not_found');
  end if;
  -- the game locks the table (ordering this against game.finish_hand and a concurrent
  -- reconciliation) and reads its unclaimed house rows
  select u.money_kind, u.unreconciled_rake, u.amount, u.hands, u.rows_digest
    into v_money_kind, v_unreconciled, v_amount, v_hands, v_digest
    from game_private.unclaimed_rake(p_table_id) u;
  if v_amount <> v_unreconciled then
    perform cage_private.refuse('rake_books_diverge',
      format('table %s: unreconciled rake %s, unclaimed house rows %s', p_table_id, v_unreconciled, v_amount));
  end if;
  if v_hands = 0 then
    return;
  end if;

  select r.hash into v_prev from cage.rake_reconciliations r where r.table_id = p_table_id order by r.id desc limit 1;
  v_prev := coalesce(v_prev, cage_private.rake_chain_genesis(p_table_id));
  insert into cage.rake_reconciliations as r (table_id, money_kind, amount, hands, rows_digest, prev_hash, hash)
  values (p_table_id, v_money_kind::cage.money_kind, v_amount, v_hands, v_digest, v_prev,
          encode(sha256(convert_to(format('%s|%s|%s|%s|%s|%s', v_prev, p_table_id, v_money_kind, v_amount, v_hands, v_digest), 'UTF8')), 'hex'))
  returning r.* into v_row;
  -- the game claims its rows and moves its rake terms
  v_reconciled := game_private.claim_rake_rows(p_table_id, v_row.id, v_amount);

  return query select v_row.id, v_row.table_id, v_row.money_kind::text, v_row.amount, v_row.hands, v_row.rows_digest,
                      v_row.prev_hash, v_row.hash, v_reconciled, v_row.created_at;
end;
$$;

-- The tables with rake to reconcile, for the reconciler (the job and the all-tables route).
create or replace function cage.tables_with_unreconciled_rake() returns setof text
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select t.table_id from game.tables t where t.unreconciled_rake > 0 order by t.table_id
$$;
