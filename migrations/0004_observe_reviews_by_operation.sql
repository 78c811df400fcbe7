-- migrate:up
-- The triggers of 0003 again, as `structpg observe add reviews` now writes them: the notification's payload is
-- the operation alone, which halves what they cost a single-row write.
-- Without keys: the operation is the whole payload (building a JSON payload in every statement doubled
-- what the triggers cost a single-row upsert).
CREATE OR REPLACE FUNCTION structpg_notify_operation() RETURNS trigger LANGUAGE plpgsql AS $structpg$
DECLARE
    sent text;
BEGIN
    -- An assignment rather than PERFORM: PL/pgSQL evaluates it as an expression, without running a query.
    sent := pg_notify('structpg_' || TG_RELID, TG_OP)::text;
    RETURN NULL;
END
$structpg$;

CREATE OR REPLACE FUNCTION structpg_notify_change() RETURNS trigger LANGUAGE plpgsql AS $structpg$
DECLARE
    changed bigint := -1;
    keys jsonb;
    notified text;
BEGIN
    IF TG_ARGV[0] = '-' THEN
        -- Triggers without keys installed by an earlier version (now structpg_notify_operation).
        notified := pg_notify('structpg_' || TG_RELID,
            json_build_object('table', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, 'op', TG_OP)::text)::text;
        RETURN NULL;
    END IF;
    -- Static SQL: PL/pgSQL plans it once per table the trigger is on.
    IF TG_OP = 'INSERT' OR TG_OP = 'UPDATE' THEN
        SELECT count(*) INTO changed FROM new_rows;
        IF changed = 0 THEN
            RETURN NULL;
        END IF;
        IF changed <= 100 AND TG_ARGV[0] <> '' THEN
            SELECT jsonb_agg(to_jsonb(n) -> TG_ARGV[0]) INTO keys FROM new_rows n;
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT count(*) INTO changed FROM old_rows;
        IF changed = 0 THEN
            RETURN NULL;
        END IF;
        IF changed <= 100 AND TG_ARGV[0] <> '' THEN
            SELECT jsonb_agg(to_jsonb(o) -> TG_ARGV[0]) INTO keys FROM old_rows o;
        END IF;
    END IF;
    IF octet_length(keys::text) > 7500 THEN
        keys := NULL;
    END IF;
    notified := pg_notify('structpg_' || TG_RELID,
        json_build_object('table', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, 'op', TG_OP, 'rows', changed, 'keys', keys)::text)::text;
    RETURN NULL;
END
$structpg$;

DROP FUNCTION IF EXISTS structpg_observe(regclass);
CREATE OR REPLACE FUNCTION structpg_observe(target regclass, with_keys boolean DEFAULT false) RETURNS void LANGUAGE plpgsql AS $structpg$
DECLARE
    key text := coalesce((
        SELECT min(a.attname::text) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE i.indrelid = target AND i.indisprimary AND i.indnkeyatts = 1), '');
BEGIN
    PERFORM structpg_unobserve(target);
    IF NOT with_keys THEN
        EXECUTE format('CREATE TRIGGER structpg_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_operation()', target);
        RETURN;
    END IF;
    EXECUTE format('CREATE TRIGGER structpg_notify_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change(%L)', target, key);
    EXECUTE format('CREATE TRIGGER structpg_notify_update AFTER UPDATE ON %s REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change(%L)', target, key);
    EXECUTE format('CREATE TRIGGER structpg_notify_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change(%L)', target, key);
    EXECUTE format('CREATE TRIGGER structpg_notify_truncate AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change(%L)', target, key);
END
$structpg$;

CREATE OR REPLACE FUNCTION structpg_unobserve(target regclass) RETURNS void LANGUAGE plpgsql AS $structpg$
BEGIN
    EXECUTE format('DROP TRIGGER IF EXISTS structpg_notify ON %s', target);
    EXECUTE format('DROP TRIGGER IF EXISTS structpg_notify_insert ON %s', target);
    EXECUTE format('DROP TRIGGER IF EXISTS structpg_notify_update ON %s', target);
    EXECUTE format('DROP TRIGGER IF EXISTS structpg_notify_delete ON %s', target);
    EXECUTE format('DROP TRIGGER IF EXISTS structpg_notify_truncate ON %s', target);
END
$structpg$;

SELECT structpg_observe('"reviews"');

-- migrate:down
-- Back to the triggers of 0003.
DROP TRIGGER structpg_notify ON reviews;
CREATE TRIGGER structpg_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON reviews
    FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change('-');
