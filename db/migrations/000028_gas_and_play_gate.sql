-- Gas tanks and the play-chip transfer gate (issue 19).
--
-- Gas: each user's gas tank is a cage account (account_type gas_tank, scope = the user's id, one per
-- money kind); the gas routes speak micro-units (1 chip = 1,000,000 micro-units, the chip token's
-- base units) and the journal whole chips. A withdrawal reserves first (the tank -> the outbound
-- gas account, scope 'outbound'), then delivers (outbound -> the user's cage balance) or refunds
-- (outbound -> the tank): each step its own transaction and its own journal movement, the three
-- bound by the withdrawal's row here.
create table cage.gas_withdrawals (
  ref_id text primary key,
  user_id uuid not null,
  money_kind cage.money_kind not null,
  chips bigint not null,
  status text not null default 'reserved',
  error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint gas_withdrawals_chips check (chips > 0),
  constraint gas_withdrawals_status check (status in ('reserved', 'delivered', 'refunded')),
  constraint gas_withdrawals_ref check (ref_id ~ '^gas-withdraw:[0-9a-f-]{36}:[\x21-\x7e]{1,128}$')
);
comment on table cage.gas_withdrawals is 'Gas withdrawals: reserved, then delivered or refunded. Written by cage.reserve_gas_withdrawal / deliver_gas_withdrawal / refund_gas_withdrawal.';
create index gas_withdrawals_reserved_idx on cage.gas_withdrawals (created_at) where status = 'reserved';
create index gas_withdrawals_user_idx on cage.gas_withdrawals (user_id, created_at desc);
alter table cage.gas_withdrawals enable row level security;

-- The play-chip transfer gate. The lever is the claim board's playTransferGateEnabled of this
-- deployment's environment (cage.deployment, seeded by the migrator from DEPLOY_ENVIRONMENT); the
-- freeze state is kept per user account here. ON: an account is frozen after every play-chip grant
-- or payout to it, and the cage's own moves on a frozen account are wrapped (thaw, move, refreeze
-- in the move's transaction: counted in `wraps`); OFF: nothing is frozen any more, and a frozen
-- account is thawed the next time a move touches it.
create table cage.deployment (
  singleton boolean primary key default true,
  environment text not null default 'local',
  updated_at timestamptz not null default now(),
  constraint deployment_singleton check (singleton),
  constraint deployment_environment check (environment in ('local', 'staging', 'production'))
);
comment on table cage.deployment is 'This deployment''s environment (the claim board settings the play gate follows); seeded by the migrator.';
insert into cage.deployment (environment) values ('local');
alter table cage.deployment enable row level security;

create table cage.play_gate_accounts (
  account_id bigint primary key references cage.cage_accounts (id) on delete restrict,
  frozen boolean not null,
  frozen_at timestamptz,
  thawed_at timestamptz,
  wraps bigint not null default 0,
  last_ref_id text not null,
  updated_at timestamptz not null default now()
);
comment on table cage.play_gate_accounts is 'Freeze state of play-chip user accounts under the transfer gate; written only by the cage_entries trigger (cage_private.tg_play_gate).';
alter table cage.play_gate_accounts enable row level security;

-- PlayGateSet: one row each time the lever flips (the claim board's settings), with its payload.
create table cage.gate_events (
  id bigint generated always as identity primary key,
  event text not null,
  payload jsonb not null,
  created_at timestamptz not null default now(),
  constraint gate_events_event check (event in ('PlayGateSet'))
);
comment on table cage.gate_events is 'PlayGateSet events: the play-chip transfer gate switched on or off (payload: environment, enabled, previous, adminId, frozenAccounts, at).';
alter table cage.gate_events enable row level security;
