-- 099: INTERFACE §10.5, the erase of a code-host login reads only the events that name it.
-- It used to search every stored payload of the tenant's code-host installs with a JSON path
-- at any depth: 12 s for 200 000 payloads of 12.6 KB on a 2-core VM, far past a request's 2 s
-- of Postgres (§9.3), so a tenant of some size could not erase anyone. An index over the
-- logins and usernames a payload names (a superset of the logins whose text the erase removes:
-- src/graph/codehost-authored.ts decides on each row it finds) makes that 35 ms.
-- Partial: chat events are neither indexed nor slowed down. Pure, so PUBLIC may run it.
-- Building it reads the code-host events once (about 9 s per 200 000 on that VM) and holds
-- their inserts meanwhile: ingest waits, the JetStream stream keeps what arrives.
CREATE FUNCTION codehost_payload_logins(payload jsonb) RETURNS jsonb
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  SET search_path = pg_catalog
AS $$
  SELECT jsonb_path_query_array(payload, 'lax $.**.login')
      || jsonb_path_query_array(payload, 'lax $.**.username')
      || jsonb_path_query_array(payload, 'lax $.pusher.name')
$$;

CREATE INDEX events_codehost_logins ON events USING gin (codehost_payload_logins(payload))
  WHERE connector_id = 'codehost';
