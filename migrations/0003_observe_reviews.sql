-- migrate:up
CREATE OR REPLACE FUNCTION structpg_notify_change() RETURNS trigger LANGUAGE plpgsql AS $structpg$
DECLARE
    changed bigint;
    keys jsonb;
    payload text;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        changed := -1;
    ELSIF TG_OP = 'DELETE' THEN
        EXECUTE format('SELECT count(*), (SELECT jsonb_agg(k) FROM (SELECT to_jsonb(o) -> %L AS k FROM old_rows o LIMIT 101) s) FROM old_rows', TG_ARGV[0])
            INTO changed, keys;
    ELSE
        EXECUTE format('SELECT count(*), (SELECT jsonb_agg(k) FROM (SELECT to_jsonb(n) -> %L AS k FROM new_rows n LIMIT 101) s) FROM new_rows', TG_ARGV[0])
            INTO changed, keys;
    END IF;
    IF changed = 0 THEN
        RETURN NULL;
    END IF;
    IF TG_ARGV[0] = '' OR changed > 100 THEN
        keys := NULL;
    END IF;
    payload := jsonb_build_object('table', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, 'op', TG_OP, 'rows', changed, 'keys', keys)::text;
    IF octet_length(payload) > 7900 THEN
        payload := jsonb_build_object('table', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, 'op', TG_OP, 'rows', changed)::text;
    END IF;
    PERFORM pg_notify('structpg_' || TG_RELID::oid::text, payload);
    RETURN NULL;
END
$structpg$;

CREATE OR REPLACE FUNCTION structpg_observe(target regclass) RETURNS void LANGUAGE plpgsql AS $structpg$
DECLARE
    key text := coalesce((
        SELECT min(a.attname::text) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE i.indrelid = target AND i.indisprimary AND i.indnkeyatts = 1), '');
BEGIN
    PERFORM structpg_unobserve(target);
    EXECUTE format('CREATE TRIGGER structpg_notify_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change(%L)', target, key);
    EXECUTE format('CREATE TRIGGER structpg_notify_update AFTER UPDATE ON %s REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change(%L)', target, key);
    EXECUTE format('CREATE TRIGGER structpg_notify_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change(%L)', target, key);
    EXECUTE format('CREATE TRIGGER structpg_notify_truncate AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change(%L)', target, key);
END
$structpg$;

CREATE OR REPLACE FUNCTION structpg_unobserve(target regclass) RETURNS void LANGUAGE plpgsql AS $structpg$
BEGIN
    EXECUTE format('DROP TRIGGER IF EXISTS structpg_notify_insert ON %s', target);
    EXECUTE format('DROP TRIGGER IF EXISTS structpg_notify_update ON %s', target);
    EXECUTE format('DROP TRIGGER IF EXISTS structpg_notify_delete ON %s', target);
    EXECUTE format('DROP TRIGGER IF EXISTS structpg_notify_truncate ON %s', target);
END
$structpg$;

SELECT structpg_observe('"reviews"');

-- migrate:down
SELECT structpg_unobserve('"reviews"');
