-- Sealing for the worker's mail jobs (issue 31, class 6): a secret a job carries (a password-reset
-- token) is sealed in SQL, where it is made, with RSA-OAEP (SHA-256, MGF1-SHA-256, empty label; RFC
-- 8017 7.1.1) under the worker's public key, pinned in auth_private.mail_keys by the owner (the
-- migrating process that holds the worker's key: server/worker/mail-key.ts). Only the worker process
-- holds the private half (WORKER_MAIL_KEY, or outside production its 0600 file beside the data
-- directory): the worker login reads the job, never the secret.

-- The big-endian unsigned integer of p_bytes.
create or replace function auth_private.bytes_to_numeric(p_bytes bytea) returns numeric
  language plpgsql immutable strict
  set search_path = pg_catalog, pg_temp
as $$
declare
  v numeric := 0;
begin
  for i in 0 .. length(p_bytes) - 1 loop
    v := v * 256 + get_byte(p_bytes, i);
  end loop;
  return v;
end;
$$;

-- p_value as exactly p_length big-endian bytes.
create or replace function auth_private.numeric_to_bytes(p_value numeric, p_length integer) returns bytea
  language plpgsql immutable strict
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_out bytea := decode(repeat('00', p_length), 'hex');
  v numeric := p_value;
begin
  for i in reverse p_length - 1 .. 0 loop
    v_out := set_byte(v_out, i, mod(v, 256)::integer);
    v := div(v, 256);
  end loop;
  return v_out;
end;
$$;

create or replace function auth_private.xor_bytes(p_a bytea, p_b bytea) returns bytea
  language plpgsql immutable strict
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_out bytea := p_a;
begin
  for i in 0 .. length(p_a) - 1 loop
    v_out := set_byte(v_out, i, get_byte(p_a, i) # get_byte(p_b, i));
  end loop;
  return v_out;
end;
$$;

-- MGF1 with SHA-256: p_length bytes of mask from p_seed.
create or replace function auth_private.mgf1_sha256(p_seed bytea, p_length integer) returns bytea
  language plpgsql immutable strict
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_out bytea := ''::bytea;
  v_counter integer := 0;
begin
  while length(v_out) < p_length loop
    v_out := v_out || sha256(p_seed || int4send(v_counter));
    v_counter := v_counter + 1;
  end loop;
  return substring(v_out from 1 for p_length);
end;
$$;

-- 32 fresh random bytes (four v4 UUIDs, 488 random bits, hashed).
create or replace function auth_private.random_32() returns bytea
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()))
$$;

-- p_message sealed to the live pinned mail key (RSA-OAEP-SHA-256), base64; null when no key is pinned.
create or replace function auth_private.seal_for_worker(p_message bytea) returns text
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_n bytea;
  v_k integer;
  v_db bytea;
  v_seed bytea := auth_private.random_32();
  v_masked_db bytea;
  v_masked_seed bytea;
  v_m numeric;
  v_mod numeric;
  v_x numeric;
begin
  select k.modulus into v_n from auth_private.mail_keys k where k.retired_at is null order by k.id desc limit 1;
  if v_n is null then
    return null;
  end if;
  v_k := length(v_n);
  if length(p_message) > v_k - 66 then
    raise exception 'message too long for the mail key';
  end if;
  -- DB = lHash || PS || 0x01 || M, masked by MGF1(seed); the seed masked by MGF1(maskedDB)
  v_db := sha256(''::bytea) || decode(repeat('00', v_k - length(p_message) - 66), 'hex') || '\x01'::bytea || p_message;
  v_masked_db := auth_private.xor_bytes(v_db, auth_private.mgf1_sha256(v_seed, v_k - 33));
  v_masked_seed := auth_private.xor_bytes(v_seed, auth_private.mgf1_sha256(v_masked_db, 32));
  v_m := auth_private.bytes_to_numeric('\x00'::bytea || v_masked_seed || v_masked_db);
  v_mod := auth_private.bytes_to_numeric(v_n);
  -- m^65537 mod n: sixteen squarings and one multiplication
  v_x := v_m;
  for i in 1 .. 16 loop
    v_x := mod(v_x * v_x, v_mod);
  end loop;
  v_x := mod(v_x * v_m, v_mod);
  return encode(auth_private.numeric_to_bytes(v_x, v_k), 'base64');
end;
$$;

-- The owner pins the worker's mail key (its RSA modulus; the exponent is 65537): the live key is the
-- last pinned, every earlier one retired. Executable by no service login: a login that pinned its own
-- key would read every secret sealed after.
create or replace function auth_private.pin_mail_key(p_modulus bytea, p_exponent bytea) returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_modulus is null or length(p_modulus) not between 256 and 1024 or get_byte(p_modulus, 0) = 0
     or p_exponent is null or ltrim(encode(p_exponent, 'hex'), '0') <> '10001' then
    raise exception 'a mail key is an RSA modulus of 2048 to 8192 bits (no leading zero byte) with exponent 65537';
  end if;
  if exists (select from auth_private.mail_keys k where k.modulus = p_modulus and k.retired_at is null
              and k.id = (select max(l.id) from auth_private.mail_keys l)) then
    return false;
  end if;
  update auth_private.mail_keys k set retired_at = now() where k.retired_at is null;
  insert into auth_private.mail_keys (modulus) values (p_modulus);
  return true;
end;
$$;
