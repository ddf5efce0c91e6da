-- Issue 33: the busts still to sign are found without reading every bust ever closed.
--
-- The cage's signer (cage.unsigned_bust_receipts, asked by the worker's cage_sign_bust_receipts job,
-- queued by every hand end that busts someone) read every bust intent and probed its receipt: a read
-- that grew with every bust (in the 20-minute soak of the live benchmark it was 4.6-5.3 ms and
-- 2,400-3,600 buffers a call by minute eight, called about once a bust, the first cause of Postgres's
-- CPU per hand growing over the run). A bust intent now records when its receipt was stored
-- (cage.store_receipt sets it, in the receipt's transaction), and the unsigned ones have an index of
-- their own: the signer reads only them. The receipt stays the truth (the signer still checks that
-- none exists; the audit still counts receipts, never this column).
alter table cage.withdraw_intents add column receipt_at timestamptz;
update cage.withdraw_intents w set receipt_at = r.created_at
  from cage.receipts r
 where r.ledger_ref_id = w.ledger_ref_id and w.settlement = 'bust';
create index withdraw_intents_unsigned_busts_idx on cage.withdraw_intents (created_at, player_id)
  where settlement = 'bust' and receipt_at is null;
