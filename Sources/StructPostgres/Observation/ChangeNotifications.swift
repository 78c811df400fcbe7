import StructPostgresCore
import StructPostgresDriver

/// The SQL that makes PostgreSQL announce committed changes of a table, which ``PostgresService/observe(_:where:sortedBy:limit:loading:)``
/// and ``PostgresService/changes(in:buffering:)`` listen to.
///
/// Statement-level triggers call `pg_notify` on the channel `structpg_<table oid>`, whose payload is the operation
/// (`INSERT`, `UPDATE`, `DELETE`, `TRUNCATE`): the listener knows the table by its channel. Installed with keys,
/// the triggers read the statement's transition tables and send a JSON payload: the table, the operation, how many
/// rows changed and their primary keys (when there are at most ``keysPerNotification`` of them), and a statement
/// that changed no row (an upsert whose rows were already as given) sends nothing. `NOTIFY` is delivered only when
/// the transaction commits, so rolled-back work announces nothing.
///
/// Install it for chosen tables in a migration (`structpg observe add books reviews` writes one) or from code
/// that sets up its own schema (``PostgresService/installChangeNotifications(on:keys:)``).
public enum ChangeNotifications {
    /// Keys listed in one notification at most; beyond that a notification gives the count only.
    public static let keysPerNotification = 100

    /// The functions every observed table uses: created or replaced, so running it again is harmless.
    public static let functionsSQL = """
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
                IF changed <= \(keysPerNotification) AND TG_ARGV[0] <> '' THEN
                    SELECT jsonb_agg(to_jsonb(n) -> TG_ARGV[0]) INTO keys FROM new_rows n;
                END IF;
            ELSIF TG_OP = 'DELETE' THEN
                SELECT count(*) INTO changed FROM old_rows;
                IF changed = 0 THEN
                    RETURN NULL;
                END IF;
                IF changed <= \(keysPerNotification) AND TG_ARGV[0] <> '' THEN
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
        """

    /// The SQL that installs the triggers on `tables` (names as in ``EntityProtocol/table``, optionally
    /// schema-qualified), the functions included. `keys`: notifications also carry the changed rows' count and
    /// primary keys, read from transition tables, which costs every write of the table more (see *Observing changes*).
    public static func installSQL(tables: [String], keys: Bool = false) -> String {
        functionsSQL + "\n\n"
            + tables.map {
                "SELECT structpg_observe(\(SQLLiteral.quote(SQLIdentifier.quoteQualified($0)))\(keys ? ", with_keys => true" : ""));"
            }.joined(separator: "\n")
    }

    /// The SQL that removes the triggers from `tables` (the functions stay: other tables may use them).
    public static func uninstallSQL(tables: [String]) -> String {
        tables.map { "SELECT structpg_unobserve(\(SQLLiteral.quote(SQLIdentifier.quoteQualified($0))));" }.joined(separator: "\n")
    }

    /// A migration file's text that installs the triggers on `tables`, and removes them in its down part.
    public static func migration(tables: [String], keys: Bool = false) -> String {
        "-- migrate:up\n\(installSQL(tables: tables, keys: keys))\n\n-- migrate:down\n\(uninstallSQL(tables: tables))\n"
    }

    /// The channel a table's changes are announced on.
    static func channel(oid: Int64) -> String { "structpg_\(oid)" }

    /// The table with `oid`, schema-qualified as the triggers name it, and whether it has the triggers installed.
    static let installedSQL = """
        SELECT n.nspname || '.' || c.relname, EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname LIKE 'structpg\\_notify%') \
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::oid
        """
}

/// A string literal for SQL text.
enum SQLLiteral {
    static func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
}
