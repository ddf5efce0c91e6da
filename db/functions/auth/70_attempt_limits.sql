-- The recovery limiter's counters (server/auth/rate-limit.ts), written only here: the auth login
-- holds no INSERT, UPDATE or DELETE on auth.attempt_limits, so it can count an attempt but never reset
-- a count or clear a window early. Recovery keys only (`recovery:...`): sign-in attempts are counted
-- by the sign-in flow itself (auth.count_sign_in below), never by a key the caller names. One attempt
-- on p_key in a fixed window of p_window_seconds: the upsert increments the row under its row lock,
-- so concurrent attempts each see a distinct count; a lapsed window starts again at 1. Rows expired
-- an hour ago are swept now and then. Returns the attempts counted in this window (this one included)
-- and the milliseconds until it ends.
create or replace function auth.count_attempt(p_key text, p_window_seconds integer)
  returns table (points integer, ms_before_next bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_now bigint := (extract(epoch from clock_timestamp()) * 1000)::bigint;
begin
  if p_key is null or length(p_key) not between 1 and 255 or left(p_key, 9) <> 'recovery:'
     or p_window_seconds is null or p_window_seconds not between 1 and 86400 then
    perform auth_private.refuse('invalid_attempt', 'a recovery key of 1..255 characters and a window of 1..86400 s');
  end if;
  if random() < 0.01 then
    delete from auth.attempt_limits l where l.expire < v_now - 3600000;
  end if;
  return query
  insert into auth.attempt_limits as l (key, points, expire) values (p_key, 1, v_now + p_window_seconds * 1000::bigint)
  on conflict (key) do update
    set points = case when l.expire is null or l.expire <= v_now then 1 else l.points + 1 end,
        expire = case when l.expire is null or l.expire <= v_now then v_now + p_window_seconds * 1000::bigint else l.expire end
  returning l.points, greatest(l.expire - v_now, 0);
end;
$$;

-- The sign-in limit, kept by the SQL that checks the password (issue 31, class 5). An attempt counts
-- in buckets, each a fixed window of failures:
--   from a known device of the account (p_device: the poker_device cookie of a browser that signed in
--   to it in the last 180 days): that device alone, 10 per 15 minutes;
--   otherwise: the account whatever the address, 30 per hour (the ceiling a thief holding the auth
--   login meets: he names the address, so he can spread guesses over made-up ones, but not over
--   accounts); the (address, account) pair and the address, with the auth role's configured limits
--   (AUTH_SIGN_IN_LIMIT_PER_ACCOUNT, _PER_PEER, AUTH_LIMIT_WINDOW_SECONDS: protections against remote
--   guessers whose address the auth role sees; a thief of the login gains nothing by raising them).
-- Failures without a device never lock a device out: an operator whose browser signed in before signs
-- in through any flood of guesses.
create or replace function auth_private.sign_in_buckets(
  p_email text, p_peer text, p_device text, p_per_account integer, p_per_peer integer, p_window_seconds integer)
  returns table (bucket text, max_failures integer, window_seconds integer)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with account as (select encode(sha256(convert_to(lower(trim(p_email)), 'UTF8')), 'hex') as h),
  device as (
    select encode(d.token_hash, 'hex') as h
      from auth_private.sign_in_devices d join auth_private.credentials c on c.user_id = d.user_id
     where p_device is not null and d.token_hash = sha256(convert_to(p_device, 'UTF8'))
       and lower(c.email) = lower(trim(p_email)) and d.created_at > now() - interval '180 days'
  )
  select 'device:' || d.h, 10, 900 from device d
  union all
  select b.bucket, b.max_failures, b.window_seconds
    from account a,
         lateral (values ('account:' || a.h, 30, 3600),
                         ('peer-account:' || p_peer || ':' || a.h, p_per_account, p_window_seconds),
                         ('peer:' || p_peer, p_per_peer, p_window_seconds)) as b (bucket, max_failures, window_seconds)
   where not exists (select from device)
$$;

create or replace function auth_private.check_sign_in_request(
  p_email text, p_peer text, p_device text, p_per_account integer, p_per_peer integer, p_window_seconds integer) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_email is null or length(p_email) not between 1 and 320 or p_peer is null or length(p_peer) not between 1 and 160
     or length(p_device) > 100 or p_per_account is null or p_per_account < 1 or p_per_peer is null or p_per_peer < 1
     or p_window_seconds is null or p_window_seconds not between 1 and 86400 then
    perform auth_private.refuse('invalid_attempt', 'an email, an address of 1..160 characters, limits of at least 1, a window of 1..86400 s');
  end if;
end;
$$;

-- One sign-in attempt, counted in its buckets before its password's key is even derived (the
-- scrypt is the costly part): the account's email, the client's address and device cookie, the
-- configured limits. Over any bucket's limit: no ticket, and the seconds until its window ends. Else
-- a ticket: auth.bind_sign_in binds it, once, to the sha-256 of the key derived from the password
-- tried, and auth.create_session checks exactly that key for this email, only in a later transaction
-- than the binding: the count is committed before the password is checked, so rolling the check back
-- never uncounts a guess, and one count checks one key. Every attempt counts (an unknown email too:
-- the count tells nothing); a success clears its buckets but the address's.
create or replace function auth.count_sign_in(
  p_email text, p_peer text, p_device text, p_per_account integer, p_per_peer integer, p_window_seconds integer)
  returns table (ticket uuid, retry_after integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_buckets text[] := '{}';
  v_wait integer := 0;
  b record;
  v_row auth_private.sign_in_attempts;
begin
  perform auth_private.check_sign_in_request(p_email, p_peer, p_device, p_per_account, p_per_peer, p_window_seconds);
  if random() < 0.01 then
    delete from auth_private.sign_in_attempts a where a.window_ends < now() - interval '1 hour';
    delete from auth_private.sign_in_tickets t where t.created_at < now() - interval '5 minutes';
    delete from auth_private.sign_in_devices d where d.created_at < now() - interval '180 days';
  end if;
  -- always in the same order (device | account, pair, address): concurrent attempts never deadlock
  for b in select * from auth_private.sign_in_buckets(p_email, p_peer, p_device, p_per_account, p_per_peer, p_window_seconds) loop
    insert into auth_private.sign_in_attempts as a (bucket, failures, window_ends)
    values (b.bucket, 1, now() + make_interval(secs => b.window_seconds))
    on conflict (bucket) do update
      set failures = case when a.window_ends <= now() then 1 else a.failures + 1 end,
          window_ends = case when a.window_ends <= now() then now() + make_interval(secs => b.window_seconds) else a.window_ends end
    returning * into v_row;
    v_buckets := v_buckets || b.bucket;
    if v_row.failures > b.max_failures then
      v_wait := greatest(v_wait, ceil(extract(epoch from v_row.window_ends - now()))::integer, 1);
    end if;
  end loop;
  if v_wait > 0 then
    return query select null::uuid, v_wait;
    return;
  end if;
  return query
  insert into auth_private.sign_in_tickets as t (email, buckets)
  values (lower(trim(p_email)), v_buckets)
  returning t.ticket, 0;
end;
$$;

-- Binds a counted attempt's ticket to the key derived from the password tried (its sha-256), once: a
-- ticket bound to another key is refused (invalid_attempt), so a count checks one key.
create or replace function auth.bind_sign_in(p_ticket uuid, p_key_hash bytea) returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update auth_private.sign_in_tickets t set key_hash = p_key_hash, bound_in = txid_current()
   where t.ticket = p_ticket and t.created_at > now() - interval '1 minute' and t.key_hash is null
     and p_key_hash is not null and length(p_key_hash) = 32;
  if not found and not exists (select from auth_private.sign_in_tickets t where t.ticket = p_ticket and t.key_hash = p_key_hash) then
    perform auth_private.refuse('invalid_attempt', 'a ticket counted in the last minute, bound to one key only');
  end if;
end;
$$;
