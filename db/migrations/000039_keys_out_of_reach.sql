-- Issue 31, class 1 and 3 (docs/security.md "Keys"): no private key where a service login can read
-- it, the public halves pinned, and a custody release that frees nothing until a second login has
-- verified its signature.
--
-- 1. The pinned public keys. Each signing process holds its private key (its environment variable,
--    or outside production a 0600 file beside the data directory: server/crypto/key-files.ts); the
--    database keeps only the public halves, pinned here by an operator (a live admin session,
--    cage.pin_key / cage.retire_key) or by the owner (cage_private.pin_key with no admin: a migration,
--    or `npm start` outside production). No service login can pin or retire a key.
--      receipt  the cage's receipt key: cage.store_receipt accepts only an active one
--      jwt      the auth role's JWT signing keys: the JWKS publishes only these
--      arbiter  the custody arbiter's key: cage.release_custody records only a release under an active one
create table cage_private.pinned_keys (
  id bigint generated always as identity primary key,
  purpose text not null,
  public_key bytea not null,
  pinned_at timestamptz not null default now(),
  -- the operator who pinned it; null: the owner (a migration, or npm start outside production)
  pinned_by uuid,
  retired_at timestamptz,
  retired_by uuid,
  constraint pinned_keys_purpose check (purpose in ('receipt', 'jwt', 'arbiter')),
  constraint pinned_keys_public_key check (length(public_key) = 32),
  constraint pinned_keys_once unique (purpose, public_key),
  constraint pinned_keys_retired check (retired_at is not null or retired_by is null)
);
comment on table cage_private.pinned_keys is
  'The public keys the platform trusts, per purpose (receipt, jwt, arbiter). Pinned by an operator or the owner, retired once, never deleted.';

-- a pin is retired once (retired_at from null to a time); nothing else changes, nothing is deleted
create function cage_private.tg_pinned_keys__retire_once() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'DELETE' or old.retired_at is not null or new.retired_at is null
     or (new.id, new.purpose, new.public_key, new.pinned_at, new.pinned_by)
        is distinct from (old.id, old.purpose, old.public_key, old.pinned_at, old.pinned_by) then
    raise exception using errcode = 'CGIMM', message = 'journal_immutable',
      detail = format('%s on cage_private.pinned_keys is refused: a pinned key is retired once and never changed otherwise', tg_op);
  end if;
  return new;
end;
$$;
create trigger tg_pinned_keys__retire_once before update or delete on cage_private.pinned_keys
  for each row execute function cage_private.tg_pinned_keys__retire_once();
create trigger tg_pinned_keys__no_truncate before truncate on cage_private.pinned_keys
  for each statement execute function cage_private.tg_refuse_change();
alter table cage_private.pinned_keys enable row level security;

-- 2. The receipt key leaves the database. The keys that signed the receipts already stored stay
--    pinned, retired now: those receipts still verify, no new receipt is accepted under them.
insert into cage_private.pinned_keys (purpose, public_key, retired_at)
select distinct 'receipt', r.public_key, now() from cage.receipts r;
drop function if exists cage.receipt_private_key(bytea);
drop table cage_private.receipt_keys;
-- cage.store_receipt derives the receipt's user from its ledger entry (db/functions/cage/50_receipts.sql)
drop function if exists cage.store_receipt(text, uuid, text, text, bytea, bytea, bytea);

-- 3. The JWT signing keys leave the database: the JWKS is the pinned jwt keys
--    (auth.jwt_public_keys), the private key the auth process's own (AUTH_JWT_KEY). Tokens signed by
--    the keys kept here before stop verifying (they lived at most 15 minutes).
drop function if exists auth.add_signing_key(text, jsonb, bytea);
drop function if exists auth.signing_keys(integer);
drop table auth_private.signing_keys;

-- 4. Custody releases: recorded by the cage (under an active pinned arbiter key), freeing nothing;
--    the worker verifies the signature against that key and writes the verdict, and only a valid
--    verdict frees the entry (cage.verify_custody_release). A forged release leaves the dispute open
--    (another release may follow it), so a dispute may have several releases, one at most pending.
alter table cage.custody_releases drop constraint custody_releases_one_per_dispute;
create index custody_releases_dispute_idx on cage.custody_releases (dispute_id, id);
create table cage.custody_release_verdicts (
  release_id bigint primary key references cage.custody_releases (id) on delete restrict,
  valid boolean not null,
  verified_at timestamptz not null default now()
);
comment on table cage.custody_release_verdicts is
  'The worker''s verdict on each recorded custody release: its signature checked against the pinned arbiter key. Append-only.';
create trigger tg_custody_release_verdicts__append_only before update or delete on cage.custody_release_verdicts
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_custody_release_verdicts__no_truncate before truncate on cage.custody_release_verdicts
  for each statement execute function cage_private.tg_refuse_change();
alter table cage.custody_release_verdicts enable row level security;
-- the releases made before: verified by the cage process when made (the audit verifies them again)
insert into cage_private.pinned_keys (purpose, public_key, retired_at)
select distinct 'arbiter', r.public_key, now() from cage.custody_releases r;
insert into cage.custody_release_verdicts (release_id, valid, verified_at)
select r.id, true, r.created_at from cage.custody_releases r;
