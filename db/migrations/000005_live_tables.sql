-- Live tables (issue 6): hand histories, and hands abandoned by a restart.

create table game.hand_histories (
  hand_id text primary key,
  table_id text not null references game.tables (table_id) on delete restrict,
  hand_number bigint not null,
  -- finished: stacks written at its end; abandoned: the process stopped mid-hand, the stacks of the
  -- hand's start stand and the hand never happened for the money
  status text not null,
  history jsonb not null default '[]',
  result jsonb,
  started_at timestamptz not null default now(),
  ended_at timestamptz,
  constraint hand_histories_status check (status in ('finished', 'abandoned')),
  constraint hand_histories_history check (jsonb_typeof(history) = 'array')
);
create index hand_histories_table_idx on game.hand_histories (table_id, hand_number desc);
comment on table game.hand_histories is 'Every hand dealt: its events (hole cards included) and result. Written at the hand boundary.';

alter table game.hand_histories enable row level security;
