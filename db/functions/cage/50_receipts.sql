-- Receipts are signed in the cage process (server/cage/receipts.ts) over the exact payload bytes and
-- stored verbatim. One receipt per settlement: storing again for the same ledger entry returns the
-- original (a replayed settle returns the original receipt); different bytes for it are refused.
-- The receipt's user is its ledger entry's own (a settlement's position, a custody claim's entry),
-- never an id the caller names, and the payload must say the same ledger entry and user; the key
-- must be the pinned, active receipt key (cage_private.pinned_keys). SQL cannot verify ed25519: the
-- worker's audit checks every receipt's signature against its pinned key (server/cage/receipts.ts,
-- receiptViolations).
create or replace function cage.store_receipt(
  p_ledger_ref_id text, p_table_id text, p_history_hash text,
  p_payload bytea, p_signature bytea, p_public_key bytea
) returns table (receipt cage.receipts, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_receipt cage.receipts;
  v_user uuid;
  v_fields jsonb;
begin
  if p_ledger_ref_id is null or p_payload is null or length(p_payload) = 0
     or length(p_payload) > 16384 or p_signature is null or length(p_signature) <> 64
     or p_public_key is null or length(p_public_key) <> 32 then
    perform cage_private.refuse('invalid_receipt', 'ledger ref, payload (1..16384 bytes), 64-byte signature, 32-byte key');
  end if;
  if not exists (select from cage.cage_entries e where e.ref_id = p_ledger_ref_id) then
    perform cage_private.refuse('invalid_receipt', format('no ledger entry %s', p_ledger_ref_id));
  end if;
  v_user := cage_private.receipt_user(p_ledger_ref_id);
  if v_user is null then
    perform cage_private.refuse('invalid_receipt', format('ledger entry %s is not a settlement or a custody claim', p_ledger_ref_id));
  end if;
  v_fields := cage_private.receipt_fields(p_payload);
  if v_fields is null or v_fields ->> 'ledgerRefId' is distinct from p_ledger_ref_id or v_fields ->> 'userId' is distinct from v_user::text then
    perform cage_private.refuse('invalid_receipt', 'the payload must name this ledger entry and its own user');
  end if;
  if not cage_private.key_is_active('receipt', p_public_key) then
    perform cage_private.refuse('key_not_pinned', 'the receipt''s key is not the pinned, active receipt key');
  end if;
  insert into cage.receipts as r (ledger_ref_id, user_id, table_id, history_hash, payload, signature, public_key)
  values (p_ledger_ref_id, v_user, p_table_id, p_history_hash, p_payload, p_signature, p_public_key)
  on conflict on constraint receipts_one_per_settlement do nothing
  returning r.* into v_receipt;
  if v_receipt.id is not null then
    -- a bust's receipt leaves the signer's list (migration 000055: the unsigned busts' own index)
    update cage.withdraw_intents w set receipt_at = v_receipt.created_at
     where w.ledger_ref_id = p_ledger_ref_id and w.settlement = 'bust' and w.receipt_at is null;
    return query select v_receipt, false;
    return;
  end if;
  select r.* into v_receipt from cage.receipts r where r.ledger_ref_id = p_ledger_ref_id;
  return query select v_receipt, true;
end;
$$;

-- The user a receipt for this ledger entry belongs to: the settled position's (withdraw:/bust:
-- <key>: cage.withdraw_intents) or the claimed custody entry's (custody-claim:<entry ref>); null
-- for any other entry (no receipt is issued for it).
create or replace function cage_private.receipt_user(p_ledger_ref_id text) returns uuid
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(
    (select w.user_id from cage.withdraw_intents w where w.ledger_ref_id = p_ledger_ref_id),
    (select c.user_id from cage.custody_entries c
      where p_ledger_ref_id like 'custody-claim:%' and c.ref_id = substr(p_ledger_ref_id, length('custody-claim:') + 1)
        and c.claim_ref_id = p_ledger_ref_id))
$$;

-- The payload's fields when it is a UTF-8 JSON object, else null.
create or replace function cage_private.receipt_fields(p_payload bytea) returns jsonb
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v jsonb;
begin
  v := convert_from(p_payload, 'UTF8')::jsonb;
  return case when jsonb_typeof(v) = 'object' then v end;
exception when others then
  return null;
end;
$$;
