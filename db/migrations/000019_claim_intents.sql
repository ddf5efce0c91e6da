-- A stolen service login proves no authority (issue 18), part 2: a grant is backed by a claim.
-- The claim opens a claim intent in a short transaction of its own (claims.open_claim: the claim
-- id, the user, the section, the period, the catalog's amount, the recipient wallet); the cage's grant refuses a grant
-- with no open intent, or another amount or recipient (grant_not_backed); finishing the claim writes
-- the ledger row and closes the intent. No transaction is held open across the HTTP calls any
-- more, so the claim transaction's begin record (claims_private.claim_begins) goes.
create table claims.claim_intents (
  claim_id text primary key,
  user_id uuid not null,
  section_key text not null,
  period text not null,
  amount bigint not null,
  kind text not null,
  -- the user's linked Solana wallet the grant pays (null on the intents of claims paid before them)
  recipient text,
  status text not null default 'open',
  opened_at timestamptz not null default now(),
  closed_at timestamptz,
  constraint claim_intents_claim_id_shape check (claim_id ~ '^0x[0-9a-f]{64}$'),
  constraint claim_intents_amount check (amount >= 0),
  constraint claim_intents_kind check (kind in ('baseline', 'unlock')),
  constraint claim_intents_status check (status in ('open', 'claimed', 'abandoned')),
  constraint claim_intents_one_per_claim unique (user_id, section_key, period)
);
comment on table claims.claim_intents is
  'One per claim (user, section, period): opened by claims.open_claim, read by the cage''s grant, closed by claims.finish_claim or the lost-claim reconciler.';
create index claim_intents_open_idx on claims.claim_intents (opened_at) where status = 'open';
alter table claims.claim_intents enable row level security;

-- the claims paid before intents existed: their intents, closed
insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, status, opened_at, closed_at)
select l.claim_id, l.user_id, l.section_key, l.period, l.amount,
       coalesce((select s.kind from claims.claim_sections s where s.key = l.section_key limit 1),
                case when l.period = 'once' then 'unlock' else 'baseline' end),
       'claimed', l.created_at, l.created_at
  from claims.claim_ledger l
on conflict do nothing;

drop function if exists claims.begin_claim(text, uuid, text, timestamptz);
drop table if exists claims_private.claim_begins;
drop function if exists claims.complete_lost_claims(integer);
