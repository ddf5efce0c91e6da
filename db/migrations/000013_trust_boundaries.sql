-- Trust boundaries in SQL (issue 11): the records that bind one role's step to the step that
-- justifies it, and the operator's own acts.

-- A claim begun in this transaction (claims.begin_claim writes it, claims.finish_claim reads and
-- deletes it). Keyed by the transaction id, so a finish in another transaction, for another
-- period or amount, or without a begin finds nothing: only begin_claim can write it (the game
-- role writes no claims table). A rolled-back claim leaves no row; a committed transaction that
-- began a claim and never finished it leaves one that no later transaction can match.
create table claims_private.claim_begins (
  xact_id xid8 not null,
  user_id uuid not null,
  section_key text not null,
  period text not null,
  amount bigint not null,
  kind text not null,
  created_at timestamptz not null default now(),
  primary key (xact_id, user_id, section_key)
);
comment on table claims_private.claim_begins is 'Claims begun by claims.begin_claim in a transaction not finished yet; finish_claim must find its own.';

-- What an operator did with their own credential (the admin access JWT): chips bought or redeemed
-- from outside, and manual corrections of the books.
-- Every money act is one journal entry (ref_id); the audit checks the two against each other.
create table cage.operator_acts (
  id bigint generated always as identity primary key,
  admin_id uuid not null,
  act text not null,
  ref_id text not null,
  reason text,
  created_at timestamptz not null default now(),
  constraint operator_acts_act check (act in ('purchase', 'redemption', 'correction')),
  constraint operator_acts_ref_unique unique (ref_id),
  constraint operator_acts_reason check (reason is null or length(reason) between 1 and 500),
  constraint operator_acts_correction_reason check (act <> 'correction' or reason is not null)
);
comment on table cage.operator_acts is 'Money acts of operators (admin id, what, why), written in the same transaction as their journal entry.';
alter table cage.operator_acts enable row level security;

-- The manual corrections, for operators: who moved what, and why. Not violations: the audit checks
-- only that every adjustment has its record (or is a deposit's reversal).
create view cage.manual_corrections with (security_invoker = true) as
  select a.id, a.admin_id, a.reason, a.created_at, e.ref_id, e.money_kind, e.accounts, e.amounts, e.memo
    from cage.operator_acts a
    join cage.cage_entries e on e.ref_id = a.ref_id
   where a.act = 'correction';
comment on view cage.manual_corrections is 'Manual corrections of the books by operators (cage.correct_books), with the admin and the reason.';

-- Grants name their claim (section and period) in the entry's memo, so a grant whose claim row
-- never came can be completed from it (claims.complete_lost_claims) and the audit can pair them.
create index cage_entries_grant_idx on cage.cage_entries (created_at) where kind = 'grant';

-- The grant names its claim; an exchange names its operator. The old forms go, so no caller keeps
-- an overload without them.
drop function if exists cage.grant_play_chips(text, bigint, text);
drop function if exists cage.exchange_chips(text, uuid, bigint, text, text);
