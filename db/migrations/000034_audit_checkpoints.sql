-- The periodic audit's checkpoint (issue 22, db/functions/cage/45_audit_checkpoint.sql): the audit
-- that runs every minute checks only the journal written since its last clean run, against what that
-- run left here, so its cost follows the postings of the last minute, not the journal's length.

-- One row: every entry with id <= entry_id is covered (its transaction had ended when the run read
-- it, and it was clean).
create table cage_private.audit_checkpoint (
  id boolean primary key default true check (id),
  entry_id bigint not null default 0,
  -- grants the run saw whose claim row was not due yet (claims_private.claim_report_after): looked
  -- at again by every run until they are old enough to judge
  young_grants bigint[] not null default '{}',
  checked_at timestamptz,
  -- what the last clean run read: its entries and postings (the proof that it did not re-read history)
  entries_read bigint not null default 0,
  postings_read bigint not null default 0
);
insert into cage_private.audit_checkpoint default values;

-- Per account, the sum and the count of its postings in the entries the checkpoint covers: its
-- balance and version as of the checkpoint. An account's projection must equal its mark plus the
-- postings written since (invariant 1), which reads no older posting.
create table cage_private.audit_account_marks (
  account_id bigint primary key,
  journal bigint not null,
  postings bigint not null
);

-- Per money kind, the sum of every posting the checkpoint covers (0 while the books hold).
create table cage_private.audit_kind_marks (
  money_kind cage.money_kind primary key,
  journal numeric not null
);

alter table cage_private.audit_checkpoint enable row level security;
alter table cage_private.audit_account_marks enable row level security;
alter table cage_private.audit_kind_marks enable row level security;

-- The books checks that sum journal entries of one kind (bet payouts, escapes) read them through
-- this index instead of the whole journal. Partial: other postings do not write it.
create index cage_entries_audited_kinds_idx on cage.cage_entries (kind, id) where kind in ('bet_payout', 'table_escape');
