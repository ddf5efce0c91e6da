-- The attempt limiter's counters (server/auth/rate-limit.ts), written only here: the auth login holds
-- no INSERT, UPDATE or DELETE on auth.attempt_limits, so it can count an attempt but never reset a
-- count or clear a window early. One attempt on p_key in a fixed window of p_window_seconds: the
-- upsert increments the row under its row lock, so concurrent attempts each see a distinct count;
-- a lapsed window starts again at 1. Rows expired an hour ago are swept now and then. Returns the
-- attempts counted in this window (this one included) and the milliseconds until it ends.
create or replace function auth.count_attempt(p_key text, p_window_seconds integer)
  returns table (points integer, ms_before_next bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_now bigint := (extract(epoch from clock_timestamp()) * 1000)::bigint;
begin
  if p_key is null or length(p_key) not between 1 and 255 or p_window_seconds is null or p_window_seconds not between 1 and 86400 then
    perform auth_private.refuse('invalid_attempt', 'a key of 1..255 characters and a window of 1..86400 s');
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

-- A sign-in that succeeded clears what it counted against its account from its address: only
-- failed attempts count against an account (an operator signing in often is never locked out). It
-- is bound to proof: p_token_hash is the hash of a session opened in the last minute (only who signed
-- in holds its token), and p_key must be that session's account key (the hash of its email, as the
-- auth role keys it: `sign-in:account:<address>:<base64url sha-256 of the email>`). The per-address
-- count stands. Returns whether a count was cleared.
create or replace function auth.clear_sign_in_attempts(p_token_hash bytea, p_key text) returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_email text;
begin
  select lower(trim(c.email)) into v_email
    from auth_private.sessions s join auth_private.credentials c on c.user_id = s.user_id
   where s.token_hash = p_token_hash and s.revoked_at is null and s.created_at > now() - interval '1 minute';
  if v_email is null or p_key is null or left(p_key, 16) <> 'sign-in:account:'
     or right(p_key, 44) <> ':' || translate(rtrim(encode(sha256(convert_to(v_email, 'UTF8')), 'base64'), '='), '+/', '-_') then
    return false;
  end if;
  delete from auth.attempt_limits l where l.key = p_key;
  return found;
end;
$$;
