import Logging
import PostgresNIO
import Synchronization

/// One SQL statement: text, bound values with their types and, for opt-in logging, a rendering of those values.
struct Statement: Sendable {
    var sql: String
    var bindings = PostgresBindings()
    var types: [PostgresDataType] = []
    var values: [ColumnValue] = []
    /// Planned on every execution instead of prepared once: set for statements that match a set of keys
    /// (`= ANY($1)`). A prepared statement's generic plan assumes a short array and probes an index once per
    /// key, where the plan for thousands of keys hashes them and scans the table once.
    var plannedPerExecution = false
    /// Sent even when the task has been cancelled, and not cancelled itself: the `ROLLBACK` that cleans up.
    var runsWhenCancelled = false

    mutating func bind(_ value: ColumnValue) -> String {
        values.append(value)
        if case .null = value {
            bindings.appendNull()
            types.append(.null)
        } else {
            let encodable = BinaryColumnValue(value: value)
            try! bindings.append(encodable)
            types.append(encodable.psqlType)
        }
        return "$\(bindings.count)"
    }

    /// Binds `value`, declaring a null as `type`, so that a row with a null and one without share a statement.
    mutating func bind(_ value: ColumnValue, declaredAs type: WireType) -> String {
        let placeholder = bind(value)
        if case .null = value { types[types.count - 1] = BinaryColumnArray.elementType(of: type) }
        return placeholder
    }

    mutating func bind(cells: RawCellArray) -> String {
        try! bindings.append(cells)
        types.append(cells.psqlType)
        return "$\(bindings.count)"
    }

    mutating func bind(array: BinaryColumnArray) -> String {
        bind(array, shown: .array(Array(array.values.prefix(5)), element: array.element))
    }

    mutating func bind(array: BinaryColumnArray.Encoded) -> String {
        bind(array, shown: .array(array.firstValues, element: array.element))
    }

    /// Binds an array parameter; `shown` is what errors and logs show of it.
    private mutating func bind(_ array: some PostgresThrowingDynamicTypeEncodable, shown: ColumnValue) -> String {
        values.append(shown)
        try! bindings.append(array)
        types.append(array.psqlType)
        return "$\(bindings.count)"
    }
}

extension Statement {
    /// A statement with room for `parameters` values.
    init(sql: String, parameters: Int) {
        self.init(sql: sql, bindings: PostgresBindings(capacity: parameters))
        types.reserveCapacity(parameters)
        values.reserveCapacity(parameters)
    }
}

/// The cells of a result, filled on the connection's event loop only, and read once the query has completed.
private final class CellCollector: @unchecked Sendable {
    var cells = ResultCells()
}

/// The rows of a prepared statement, as PostgresNIO hands them over.
typealias RowSequence = AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow>

/// Runs statements on one connection: the pool's, for a single call, or a transaction's.
struct DatabaseSession: Sendable {
    let connection: PostgresConnection
    let runtime: ServiceRuntime

    /// Sends `statement` and reads all its rows.
    func run(_ statement: Statement) async throws -> [PostgresRow] {
        try await send(statement) { name in
            guard let name else {
                return try await connection.query(PostgresQuery(unsafeSQL: statement.sql, binds: statement.bindings), logger: runtime.logger).get().rows
            }
            var collected: [PostgresRow] = []
            for try await row in try await NamedStatement.execute(statement, named: name, on: connection, logger: runtime.logger) {
                collected.append(row)
            }
            return collected
        }
    }

    /// Runs `statement` and collects the cells of its rows, without keeping the rows themselves. An unprepared
    /// statement's cells are collected on the connection's event loop as the rows arrive, without handing each
    /// row over to this task.
    func runCells(_ statement: Statement) async throws -> ResultCells {
        try await send(statement) { name in
            if let name { return try await ResultCells(try await NamedStatement.execute(statement, named: name, on: connection, logger: runtime.logger)) }
            return try await collectCells(PostgresQuery(unsafeSQL: statement.sql, binds: statement.bindings)).get()
        }
    }

    /// Starts `query` and collects its rows' cells on the connection's event loop as they arrive. Nothing
    /// holds the rows back (PostgresNIO's back-pressure is not involved), so the result must be of bounded
    /// size: a fetch, or a batch of a cursor.
    func collectCells(_ query: PostgresQuery) -> EventLoopFuture<ResultCells> {
        let collector = CellCollector()
        return connection.query(query, logger: runtime.logger) { collector.cells.append($0) }.map { _ in collector.cells }
    }

    /// Sends a statement that returns no rows (`DELETE`, `UPDATE`) and gives back how many rows it affected,
    /// read from the server's command tag. Never prepared: PostgresNIO hands a prepared statement's command tag
    /// back only through a path that traps when the statement has no rows to read.
    func affectedRows(_ statement: Statement) async throws -> Int {
        try await send(statement, prepared: false) { _ in
            let query = PostgresQuery(unsafeSQL: statement.sql, binds: statement.bindings)
            return try await connection.query(query, logger: runtime.logger).get().metadata.rows ?? 0
        }
    }

    /// Logs, sends and observes `statement`; `perform` executes it, under a prepared statement's name when
    /// one is given. Errors come back as ``StructPostgresError``.
    /// Unless `prepared` is `false`, a statement with parameters is prepared on the connection the first time
    /// (see ``PreparedStatementRegistry``).
    private func send<T>(
        _ statement: Statement, prepared: Bool = true, _ perform: (String?) async throws -> T
    ) async throws -> T {
        if !statement.runsWhenCancelled {
            try checkCancellation(before: statement.sql)
            try ensureOpen(sql: statement.sql)
            do {
                try await runtime.canceller.learnBackend(of: connection)
            } catch {
                throw StructPostgresError.from(error, sql: statement.sql)
            }
        }
        // Fields are read one by one: a copy of the whole configuration costs a retain per reference in it.
        let logBoundValues = runtime.configuration.logBoundValues
        if runtime.configuration.logger.logLevel <= .debug {
            var metadata: Logger.Metadata = ["sql": "\(statement.sql)", "binds": "\(statement.bindings.count)"]
            if logBoundValues {
                metadata["values"] = "\(statement.values.map(\.keyDescription).joined(separator: ", "))"
            }
            runtime.logger.debug("query", metadata: metadata)
        }
        let start = runtime.configuration.queryObserver == nil ? nil : ContinuousClock.now
        let key = PreparedStatementRegistry.Key(sql: statement.sql, types: statement.types)
        let prepares = prepared && runtime.configuration.preparesStatements && !statement.types.isEmpty && !statement.plannedPerExecution
        let name = prepares ? runtime.preparedStatements.name(for: key) : nil
        do {
            try ensureOpen(sql: statement.sql)
            let result: T
            if statement.runsWhenCancelled {
                result = try await perform(name)
            } else {
                result = try await runtime.canceller.cancellable(on: connection) { try await perform(name) }
            }
            observe(statement, since: start, failed: false)
            return result
        } catch {
            observe(statement, since: start, failed: true)
            if let name { runtime.preparedStatements.failed(key, name: name, sqlState: (error as? PSQLError)?.serverInfo?[.sqlState]) }
            let mapped = Task.isCancelled && !statement.runsWhenCancelled
                ? Self.cancelled(error, sql: statement.sql)
                : StructPostgresError.from(error, sql: statement.sql, revealValues: logBoundValues)
            runtime.logger.debug("query failed", metadata: ["error": "\(mapped)"])
            throw mapped
        }
    }

    /// Runs SQL without parameters, statement by statement; a failure names the statement's line.
    func execute(script: String) async throws {
        for statement in SQLScript.split(script) {
            do {
                _ = try await run(Statement(sql: statement.sql))
            } catch var error as StructPostgresError {
                error.message += " (statement at line \(statement.line) of the script)"
                throw error
            }
        }
    }

    /// Refuses to send `sql` once the task has been cancelled: a cancelled transaction sends nothing more.
    func checkCancellation(before sql: String) throws {
        if Task.isCancelled {
            throw StructPostgresError(.queryCancelled, "the task was cancelled; the statement was not sent", sql: sql)
        }
    }

    /// The error of a statement whose task was cancelled while it ran: the connection was closed under it and
    /// the server asked to cancel it (see ``StatementCanceller``), unless it failed for a reason of its own.
    static func cancelled(_ error: any Error, sql: String) -> StructPostgresError {
        let mapped = StructPostgresError.from(error, sql: sql)
        guard mapped.code == .connectionLost || mapped.code == .queryCancelled || mapped.code == .client else { return mapped }
        return StructPostgresError(
            .queryCancelled, "the task was cancelled: the statement was cancelled on the server and its connection closed",
            sqlState: SQLState.queryCanceled, sql: sql)
    }

    /// PostgresNIO never answers a query written to a connection that has already closed; fail instead.
    func ensureOpen(sql: String) throws {
        if connection.isClosed {
            throw StructPostgresError(.connectionLost, "the connection to the server is closed", sql: sql)
        }
    }

    func observe(_ statement: Statement, since start: ContinuousClock.Instant?, failed: Bool) {
        guard let start, let observer = runtime.configuration.queryObserver else { return }
        observer(QueryEvent(
            sql: statement.sql, parameterCount: statement.bindings.count,
            duration: ContinuousClock.now - start, failed: failed))
    }

    /// The entity resolved against its table, from the catalog on first use.
    func describe<E: EntityProtocol>(_ type: E.Type) async throws -> EntityDescription {
        if let known = runtime.cachedDescription(ObjectIdentifier(E.self)) { return known }
        let schema = try await schema(of: E.table, entity: "\(E.self)")
        let description = try EntityDescription(E.self, schema: schema)
        runtime.store(description, for: ObjectIdentifier(E.self))
        return description
    }

    /// Precision and scale of a `numeric(p, s)` type modifier; the scale is an 11-bit signed number.
    static func numericPrecision(_ typmod: Int32) -> (Int, Int) {
        let bits = Int(typmod - 4)
        return ((bits >> 16) & 0xffff, ((bits & 0x7ff) ^ 1024) - 1024)
    }

    func schema(of table: String, entity: String) async throws -> TableSchema {
        if let known = runtime.cachedSchema(table) { return known }
        let generation = runtime.schemaGeneration
        let quoted = SQLIdentifier.quoteQualified(table)
        var lookup = Statement(sql: "SELECT to_regclass($1)::oid::int8")
        _ = lookup.bind(.text(quoted))
        let found = try await run(lookup)
        guard let oidCell = found.first?.makeRandomAccess()[0], oidCell.bytes != nil else {
            throw StructPostgresError(
                .undefinedTable, "table '\(table)' of entity \(entity) does not exist",
                sqlState: SQLState.undefinedTable, entity: entity, table: table)
        }
        let oid = try oidCell.decode(Int64.self)
        var columnsQuery = Statement(sql: TableSchema.columnsSQL)
        _ = columnsQuery.bind(.int8(oid))
        var columns: [String: TableSchema.Column] = [:]
        var order: [String] = []
        for row in try await run(columnsQuery) {
            let (name, typeName, castName, baseName, category, typmod) = try row.decode((String, String, String, String, String, Int32).self)
            let hasLength = ["varchar", "bpchar"].contains(baseName) && typmod > 4
            let hasPrecision = baseName == "numeric" && typmod > 4
            columns[name] = .init(
                name: name, typeName: typeName, baseName: baseName, category: category.first ?? "X",
                maxLength: hasLength ? Int(typmod - 4) : nil,
                numericPrecision: hasPrecision ? Self.numericPrecision(typmod) : nil,
                castName: baseName == "bpchar" ? "bpchar" : baseName == "_bpchar" ? "bpchar[]" : castName)
            order.append(name)
        }
        var keysQuery = Statement(sql: TableSchema.uniqueKeysSQL)
        _ = keysQuery.bind(.int8(oid))
        let keys = try await run(keysQuery).map { row in
            let access = row.makeRandomAccess()
            return TableSchema.UniqueKey(columns: try [String].decode(access[0]), nullsNotDistinct: try access[1].decode(Bool.self))
        }
        var foreignKeysQuery = Statement(sql: TableSchema.foreignKeysSQL)
        _ = foreignKeysQuery.bind(.int8(oid))
        let foreignKeys = try await run(foreignKeysQuery).map { row in
            let access = row.makeRandomAccess()
            return TableSchema.ForeignKey(
                name: try access[0].decode(String.self), columns: try [String].decode(access[4]),
                referencedTable: try access[1].decode(Int64.self), referencedTableName: try access[3].decode(String.self),
                referencedColumns: try [String].decode(access[5]),
                onDelete: try access[2].decode(String.self).first ?? "a")
        }
        var schema = TableSchema(table: table, quotedTable: quoted, columns: columns, columnOrder: order, uniqueKeys: keys)
        schema.oid = oid
        schema.foreignKeys = foreignKeys
        schema.generation = generation
        runtime.store(schema)
        return schema
    }
}
