-- 007: every committed change to which installs are active announces itself on the
-- `installs_changed` channel (payload: the connector id), so that each edge drops its
-- cached copy of the webhook fan-out lists at once, whichever node or path made the
-- change (src/connectors/codehost/bound-installs-cache.ts). NOTIFY is transactional:
-- listeners hear it only when the change commits, and never for a rollback.
CREATE FUNCTION installs_changed_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM pg_notify('installs_changed', OLD.connector_id);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM pg_notify('installs_changed', NEW.connector_id);
  END IF;
  RETURN NULL;
END
$$;

-- Backfill progress updates (the frequent ones) touch none of these columns.
CREATE TRIGGER installs_changed
AFTER INSERT OR DELETE OR UPDATE OF status, connector_id, external_id, tenant_id ON installs
FOR EACH ROW EXECUTE FUNCTION installs_changed_notify();
