-- The operator's edits of the claim board's catalog and settings, each recorded with the operator
-- (the admin id of their access JWT) in the edit's transaction. The edit functions take the admin
-- id; their old forms go, so no caller keeps an overload that records nothing.
create table claims.catalog_edits (
  id bigint generated always as identity primary key,
  admin_id uuid not null,
  action text not null,
  environment text not null,
  section_key text,
  change jsonb not null default '{}',
  created_at timestamptz not null default now(),
  constraint catalog_edits_action check (action in ('set_settings', 'create_section', 'patch_section', 'delete_section'))
);
comment on table claims.catalog_edits is 'Who changed the claim board (catalog and settings), what and when; written by the edit functions only.';
alter table claims.catalog_edits enable row level security;

drop function if exists claims.set_board_settings(text, boolean, boolean);
drop function if exists claims.create_section(text, jsonb);
drop function if exists claims.patch_section(text, text, jsonb);
drop function if exists claims.delete_section(text, text);
