import StructPostgresCore
import StructPostgresDriver

/// An upsert encoded and checked, ready to send: what can be done before waiting for the server.
struct PreparedUpsert: Sendable {
    let statement: Statement
    let rowCount: Int
    let merged: Int
    /// The encoded columns, in order, and the properties they come from.
    let columns: [String]
    let properties: [String]
    let description: EntityDescription
    let options: UpsertOptions
    /// Finds the row a unique violation of a batch is about.
    let violatingRow: ViolatingRow?
    /// For an entity with a version: each row's key and version, to tell what the statement did to each.
    let versioned: VersionedRows?

    /// Encodes and checks an upsert of `entities`; a single row's makes the plan later single rows of `E` take.
    /// `inParallel`: a large batch is encoded on more than one thread (see ``BatchColumns``). `reportsRows`: the
    /// statement returns what it did to each row rather than counts (not for a single row, whose result says it).
    init<E: EntityProtocol>(
        _ entities: ArraySlice<E>, description: EntityDescription, options: UpsertOptions, cache: UpsertCache, inParallel: Bool,
        reportsRows: Bool = false
    ) async throws {
        let batch = try await BatchColumns(entities, description: description, inParallel: inParallel)
        let reportsRows = reportsRows && batch.rowCount > 1
        let planKey = SingleRowUpsertPlan.Key(E.self, options)
        var shape = UpsertShape(
            entity: ObjectIdentifier(E.self),
            columns: batch.columns.map { .init(name: $0.name, wire: $0.arrayType, needsCast: $0.needsCast) },
            conflict: options.conflict, singleRow: batch.rowCount == 1, reportsRows: reportsRows)
        shape.mergePolicy = planKey.mergePolicy
        let versioned =
            description.versionColumn == nil ? nil : try VersionedRows(E.self, batch: batch, description: description, options: options)
        let sql = try cache.text(shape, schema: description.schema) {
            if versioned != nil { return try VersionedUpsertSQL.text(batch, description: description, options: options) }
            return try UpsertSQL.text(batch, description: description, options: options, reportsRows: reportsRows)
        }
        statement = try await Self.bind(batch, sql: sql, inParallel: inParallel)
        rowCount = batch.rowCount
        merged = batch.merged
        columns = batch.columns.map(\.name)
        properties = batch.columns.map(\.property)
        self.description = description
        self.options = options
        violatingRow = entities.count > 1 ? ViolatingRow(entities, description: description) : nil
        self.versioned = versioned
        if entities.count == 1 {
            cache.store(SingleRowUpsertPlan(self, batch: batch), for: planKey)
        }
    }

    /// A single row's upsert prepared by its type's plan.
    init(statement: Statement, planned plan: SingleRowUpsertPlan, options: UpsertOptions, versioned: VersionedRows?) {
        self.statement = statement
        rowCount = 1
        merged = 0
        columns = plan.shape.columns
        properties = plan.shape.properties
        description = plan.description
        self.options = options
        violatingRow = nil
        self.versioned = versioned
    }

    /// The statement `sql` with one parameter per column of `batch`, in order: an array, or for a single row its
    /// value. `inParallel`: the arrays of a large batch are encoded at once, one column per thread.
    static func bind(_ batch: BatchColumns, sql: String, inParallel: Bool) async throws -> Statement {
        var statement = Statement(sql: sql, parameters: batch.columns.count)
        if batch.rowCount == 1 {
            for column in batch.columns { statement.append(column.values[0], declaredAs: column.arrayType) }
            return statement
        }
        let arrays = batch.columns.map { BinaryColumnArray(element: $0.arrayType, values: $0.values) }
        if inParallel, batch.rowCount >= ParallelRows.minimum {
            for encoded in try await ParallelRows.map(arrays.count, { arrays[$0].encoded() }) { _ = statement.bind(array: encoded) }
        } else {
            for array in arrays { _ = statement.bind(array: array) }
        }
        return statement
    }
}
