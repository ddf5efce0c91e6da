-- A bust settles in the hand's end (issue 32): the hand that leaves a cash position with no chips
-- closes it in game.end_hand's transaction (game_private.close_busts), with no round trip to a bank.
-- On a cage table the close is the cage's explicit-zero settlement: the `bust` withdraw intent, its
-- `bust_close` ledger row (zero amounts) and the position chain's last link, all written here. Its
-- receipt is signed afterwards by the cage process (the receipt key never enters the database):
-- the worker's job cage_sign_bust_receipts asks the cage (POST /settlement/sign-bust-receipts), which
-- reads cage.unsigned_bust_receipts and stores each with cage.store_receipt. The audit accepts a
-- bust whose receipt is pending for at most cage_private.bust_receipt_lag(), and names it after.

-- How long a bust's receipt may wait for its signature before the audit names it. The job runs
-- when the hand end queues it and every minute after (server/roles/worker.ts crontab).
create or replace function cage_private.bust_receipt_lag() returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select interval '5 minutes'
$$;

-- The settlement key of a bust written in SQL: SHA-256 (SQL has no keccak) of the spec's fields
-- `userId:tableId:historyHash:0`, as 0x-hex like the keccak key of a stand-up. A bust's key is never
-- sent by a client, so no caller has to compute it; one position has one settlement whatever its key.
create or replace function cage_private.bust_key(p_user_id uuid, p_table_id text, p_history_hash text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select '0x' || encode(sha256(convert_to(format('%s:%s:%s:0', p_user_id, p_table_id, p_history_hash), 'UTF8')), 'hex')
$$;

-- Closes a busted position of a cage table (seated, no chips; the caller, game_private.close_busts,
-- holds the table's lock and read it so): the explicit-zero settlement and the closed seat. A
-- position settled already (under any key) is left as it is.
create or replace function cage_private.close_bust(p_player game.table_players, p_money_kind text) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_key text := cage_private.bust_key(p_player.user_id, p_player.table_id, p_player.history_hash);
  v_ref text;
begin
  v_ref := 'bust:' || v_key;
  insert into cage.withdraw_intents as w (idempotency_key, ledger_ref_id, user_id, table_id, player_id, amount, history_hash, settlement, forced, settled_at)
  values (v_key, v_ref, p_player.user_id, p_player.table_id, p_player.id, 0, p_player.history_hash, 'bust', false, now())
  on conflict do nothing;
  if not found then
    return;
  end if;
  perform cage.post_movement(v_ref, 'bust_close', p_money_kind,
    array[cage.ensure_account('table_escrow', null, p_player.table_id, p_money_kind),
          cage.ensure_account('user', p_player.user_id, null, p_money_kind)],
    array[0::bigint, 0::bigint],
    jsonb_build_object('table_id', p_player.table_id, 'position', p_player.id, 'settlement', 'bust'));
  perform game_private.close_position(p_player, v_ref, 'bust');
end;
$$;

-- The bust settlements whose receipt the cage has not signed yet, oldest first: what the cage signs
-- (server/cage/stand-ups.ts signBustReceipts). The fields are the receipt's (seams.ts
-- settlementReceiptFields); no key or signature is read or written here.
create or replace function cage.unsigned_bust_receipts(p_limit integer)
  returns table (ledger_ref_id text, user_id uuid, table_id text, player_id bigint, amount bigint, settlement text,
                 history_hash text, money_kind text, created_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select w.ledger_ref_id, w.user_id, w.table_id, w.player_id, w.amount, w.settlement, w.history_hash, t.money_kind::text, w.created_at
    from cage.withdraw_intents w
    join game.tables t on t.table_id = w.table_id
   where w.settlement = 'bust' and w.receipt_at is null -- the unsigned busts' index (migration 000055)
     and not exists (select from cage.receipts r where r.ledger_ref_id = w.ledger_ref_id)
   order by w.created_at, w.player_id
   limit least(greatest(coalesce(p_limit, 0), 0), 1000)
$$;
