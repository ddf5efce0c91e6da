-- The refusal registry (db/refusals.json): every business refusal, declared once. The migrator
-- loads the file into this table with the repeatable folders (in their transaction, whenever the
-- file changes); each domain's refuse() looks its code up here, and the HTTP side reads the same file.
create schema poker_refusals;
revoke all on schema poker_refusals from public;

create table poker_refusals.codes (
  domain text not null,
  code text not null,
  sqlstate text not null,
  http_status integer not null,
  primary key (domain, code),
  constraint codes_sqlstate_unique unique (sqlstate),
  constraint codes_domain check (domain in ('auth', 'cage', 'claims', 'game')),
  constraint codes_sqlstate_shape check (sqlstate ~ '^[A-Z]{2}[A-Z0-9]{3}$'),
  constraint codes_http_status check (http_status between 400 and 599)
);
comment on table poker_refusals.codes is 'The refusal registry, loaded from db/refusals.json by the migrator; read by each domain''s refuse().';

-- the code -> SQLSTATE table of the cage is the registry now
drop function if exists cage_private.refusal_state(text);
