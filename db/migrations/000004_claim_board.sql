-- The claim board (issue 5): a config-driven catalog of play-chip claims, per-user state, and an
-- append-only claim ledger whose unique claim_id is the claim-once guard. Writes go through
-- db/functions/claims only. Also the minimal agent registry the unlock conditions need.

create schema claims;
create schema claims_private;

-- The catalog, per environment: an `all` row is the default, a concrete-environment row overrides
-- it for the same key (enabled = false there hides it there only).
create table claims.claim_sections (
  id bigint generated always as identity primary key,
  environment text not null default 'all',
  key text not null,
  condition_key text,
  kind text not null,
  amount bigint not null,
  "order" integer not null default 0,
  enabled boolean not null default true,
  cadence text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint claim_sections_environment_key unique (environment, key),
  constraint claim_sections_environment check (environment in ('all', 'local', 'staging', 'production')),
  constraint claim_sections_key_shape check (key ~ '^[a-z0-9][a-z0-9_.-]{0,63}$'),
  constraint claim_sections_condition_key_shape check (condition_key is null or condition_key ~ '^[a-z0-9][a-z0-9_.:-]{0,63}$'),
  constraint claim_sections_kind check (kind in ('baseline', 'unlock')),
  constraint claim_sections_cadence check (cadence in ('weekly', 'once')),
  constraint claim_sections_amount check (amount >= 0 and amount <= 9007199254740991),
  -- an unlock is lit by its condition; the baseline has none
  constraint claim_sections_condition check ((kind = 'baseline') = (condition_key is null)),
  -- the baseline pays every ISO week; an unlock pays once ever (other pairs have no meaning here)
  constraint claim_sections_kind_cadence check ((kind = 'baseline' and cadence = 'weekly') or (kind = 'unlock' and cadence = 'once'))
);
comment on table claims.claim_sections is
  'The claim board catalog (spec: Claim board records). kind and cadence are immutable once the key exists.';

-- Game settings per environment. A missing row reads fail-closed: the board off, the gate on.
create table claims.settings (
  environment text primary key,
  claim_board_enabled boolean not null default false,
  play_transfer_gate_enabled boolean not null default true,
  updated_at timestamptz not null default now(),
  constraint settings_environment check (environment in ('local', 'staging', 'production'))
);
comment on table claims.settings is 'claim_board_enabled (default OFF) and playTransferGateEnabled (default ON), per environment.';

create table claims.user_claim_sections (
  user_id uuid not null,
  section_key text not null,
  state text not null default 'locked',
  lit_at timestamptz,
  claimed_at timestamptz,
  period text,
  claim_id text,
  primary key (user_id, section_key),
  constraint user_claim_sections_state check (state in ('locked', 'lit', 'claimed'))
);
comment on table claims.user_claim_sections is 'Per-user claim state; the row is also the lock a claim holds while it mints.';

-- One row per successful claim, forever. claim_id = keccak256(userId:sectionKey:period); the
-- (user, section, period) triple is unique too, so the guard does not rest on the hash alone.
create table claims.claim_ledger (
  id bigint generated always as identity primary key,
  user_id uuid not null,
  section_key text not null,
  period text not null,
  amount bigint not null,
  claim_id text not null,
  grant_tx text,
  created_at timestamptz not null default now(),
  constraint claim_ledger_claim_id_unique unique (claim_id),
  constraint claim_ledger_once_per_period unique (user_id, section_key, period),
  constraint claim_ledger_claim_id_shape check (claim_id ~ '^0x[0-9a-f]{64}$'),
  constraint claim_ledger_amount check (amount >= 0)
);
comment on table claims.claim_ledger is 'Append-only: one row per credited claim; unique claim_id is the claim-once guard.';

-- Conditions reported, by the reporter's idempotency key (a replay lights nothing new).
create table claims.condition_events (
  idempotency_key text primary key,
  user_id uuid not null,
  condition_key text not null,
  created_at timestamptz not null default now()
);

create trigger tg_claim_ledger__append_only before update or delete on claims.claim_ledger
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_claim_ledger__no_truncate before truncate on claims.claim_ledger
  for each statement execute function cage_private.tg_refuse_change();

alter table claims.claim_sections enable row level security;
alter table claims.settings enable row level security;
alter table claims.user_claim_sections enable row level security;
alter table claims.claim_ledger enable row level security;
alter table claims.condition_events enable row level security;

-- The seeded catalog (spec: Seeded unlock sections; the weekly baseline of 500).
insert into claims.claim_sections (environment, key, condition_key, kind, amount, "order", enabled, cadence) values
  ('all', 'weekly_baseline', null, 'baseline', 500, 0, true, 'weekly'),
  ('all', 'connect_wallet', 'wallet_linked', 'unlock', 500, 1, true, 'once'),
  ('all', 'build_agent', 'agent_version_published', 'unlock', 500, 2, true, 'once'),
  ('all', 'seat_agent', 'agent_seated', 'unlock', 1000, 3, true, 'once'),
  ('all', 'inspect_decision', 'hand_flagged', 'unlock', 1000, 4, true, 'once'),
  ('all', 'tune_republish', 'agent_version_republished', 'unlock', 2500, 5, true, 'once');

-- The agent registry the unlock conditions need (the game role owns it).
create table game.agents (
  id uuid primary key default gen_random_uuid(),
  owner_user_id uuid not null,
  name text not null,
  created_at timestamptz not null default now(),
  constraint agents_name check (length(name) between 1 and 64)
);
create index agents_owner_idx on game.agents (owner_user_id);

create table game.agent_versions (
  agent_id uuid not null references game.agents (id) on delete restrict,
  version integer not null,
  manifest jsonb not null default '{}',
  published_at timestamptz not null default now(),
  primary key (agent_id, version),
  constraint agent_versions_manifest check (jsonb_typeof(manifest) = 'object' and length(manifest::text) <= 16384)
);

-- A flagged decision of an agent's version: the next published version is a republish.
create table game.agent_flags (
  id bigint generated always as identity primary key,
  agent_id uuid not null references game.agents (id) on delete restrict,
  version integer not null,
  hand_id text,
  note text,
  flagged_by uuid not null,
  created_at timestamptz not null default now(),
  constraint agent_flags_note check (note is null or length(note) <= 1000)
);
create index agent_flags_agent_idx on game.agent_flags (agent_id, id);

alter table game.agents enable row level security;
alter table game.agent_versions enable row level security;
alter table game.agent_flags enable row level security;
