-- Invite codes. Minting stores what the admin route asked for; consumption is ONE statement that
-- checks the cap and the expiry and increments, so concurrent first sign-ins can never exceed the cap.
create or replace function auth.mint_invite(
  p_code text, p_max_uses integer default 1, p_expires_in_seconds integer default null, p_created_by text default 'admin'
) returns auth.invite_codes
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_invite auth.invite_codes;
begin
  if p_code is null or length(p_code) not between 8 and 128
     or p_max_uses is null or p_max_uses < 1 or p_max_uses > 1000000
     or p_created_by is null or length(p_created_by) not between 1 and 200 then
    perform auth_private.refuse('invalid_invite_request', 'code 8..128 chars, maxUses 1..1000000, createdBy 1..200 chars');
  end if;
  insert into auth.invite_codes as i (code, max_uses, expires_at, created_by)
  values (p_code, p_max_uses,
          -- a negative lifetime mints an already-expired code (the spec's rule)
          case when p_expires_in_seconds is null then null else now() + make_interval(secs => p_expires_in_seconds) end,
          p_created_by)
  returning i.* into v_invite;
  return v_invite;
end;
$$;

-- Takes one use of a code, or refuses with invite_invalid (unknown, expired or exhausted).
create or replace function auth_private.consume_invite(p_code text) returns auth.invite_codes
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_invite auth.invite_codes;
begin
  update auth.invite_codes i
     set current_uses = i.current_uses + 1
   where i.code = p_code
     and i.current_uses < i.max_uses
     and (i.expires_at is null or i.expires_at > now())
  returning i.* into v_invite;
  if v_invite.code is null then
    perform auth_private.refuse('invite_invalid', 'the code is unknown, expired or used up');
  end if;
  return v_invite;
end;
$$;
