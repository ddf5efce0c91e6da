-- Issue 32, "one intent model": every pending money step (cash buy-ins and cash-outs, tournament
-- payouts, gas withdrawals, bet stakes, the chain bank's deposits, withdrawals, tournament payments
-- and vault refunds, claims and the grants behind them) is read as one intent with one status
-- vocabulary through the view cage.intents (db/functions/cage/96_intents.sql). What the intent tables
-- do not hold themselves, the attempts of the reconcilers, is recorded here, one row per intent that
-- a reconciler (server/intents/) tried: how many attempts, the last one's time and error, since when
-- it has been failing (stuck_since) and when it is due again (next_attempt_at: its back-off). A
-- success clears the failure. Written only by cage.record_intent_attempt; read through the view.
create table cage.intent_attempts (
  kind text not null,
  intent_key text not null,
  attempts integer not null default 0 check (attempts >= 0),
  last_attempt_at timestamptz,
  last_error text check (last_error is null or length(last_error) <= 300),
  stuck_since timestamptz,
  next_attempt_at timestamptz,
  constraint intent_attempts_pkey primary key (kind, intent_key),
  constraint intent_attempts_stuck_has_reason check ((stuck_since is null) = (last_error is null))
);
alter table cage.intent_attempts enable row level security;
comment on table cage.intent_attempts is
  'The reconcilers'' attempts at each pending money step (issue 32): count, last time and error, stuck since, next due. Written by cage.record_intent_attempt only; read through cage.intents.';

-- The lists two reconcilers made of their own are the view's due intents now (cage.due_intents);
-- the payout repost is one function for both banks (cage.repost_payout, db/functions/tournaments/20_money.sql).
drop function if exists cage.stale_gas_withdrawals(integer, integer);
drop function if exists cage.payouts_to_repost(integer, integer);
