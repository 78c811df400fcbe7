import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// A single-row upsert of one entity type under one conflict rule, resolved once: the columns the type
/// encodes, each with its check and declared type, and the statement's text and parameter types.
///
/// A single-row upsert is a server's most frequent write. Once its type has a plan, it only encodes, checks
/// and binds its values: no column batch, no statement text to look up. An entity that does not fit the plan
/// (`encode(to:)` gives other keys, a value of another type or a bad value) goes the general way, which
/// reports what is wrong, or builds the plan for the new shape.
final class SingleRowUpsertPlan: Sendable {
    struct Key: Hashable, Sendable {
        let entity: ObjectIdentifier
        let conflict: UpsertOptions.Conflict
        /// The merge policy, for an entity with a version (its statement depends on it); `nil` for others.
        var mergePolicy: MergePolicy? = nil

        init(entity: ObjectIdentifier, conflict: UpsertOptions.Conflict, mergePolicy: MergePolicy? = nil) {
            (self.entity, self.conflict, self.mergePolicy) = (entity, conflict, mergePolicy)
        }

        /// The key of `E`'s upserts under `options`.
        init<E: EntityProtocol>(_ type: E.Type, _ options: UpsertOptions) {
            self.init(
                entity: ObjectIdentifier(E.self), conflict: options.conflict,
                mergePolicy: E.versionKey == nil ? nil : options.mergePolicy ?? .error)
        }
    }

    /// A class, so that walking the columns for every row retains each once instead of copying its checker.
    final class Column: Sendable {
        let checker: ValueChecker
        /// The type of the column's values when the plan was made; `nil` when the value was null.
        let wire: WireType?
        let isArray: Bool
        /// Whether a nil may be bound here: not in a column of the unique key that a nil must not reach (see
        /// ``BatchColumns``), and with the type of a null (the parameter's declared type) the plan's.
        let acceptsNil: Bool

        init(checker: ValueChecker, wire: WireType?, isArray: Bool, acceptsNil: Bool) {
            (self.checker, self.wire, self.isArray, self.acceptsNil) = (checker, wire, isArray, acceptsNil)
        }
    }

    let description: EntityDescription
    let shape: RowEncoder.Shape
    let columns: [Column]
    let sql: String
    let types: [PostgresDataType]
    let preparedKey: PreparedStatementRegistry.Key
    /// For an entity with a version: where its key columns and its version are among ``columns``.
    let versionPlaces: (keys: [Int], version: Int)?

    /// The plan of the single-row upsert `prepared`, encoded and checked the general way from `batch`.
    init(_ prepared: PreparedUpsert, batch: BatchColumns) {
        let description = prepared.description
        self.description = description
        shape = RowEncoder.Shape(columns: prepared.columns, properties: prepared.properties)
        let nilKeysRefused = !description.schema.nullsMatch(in: description.keyColumns)
        let types = prepared.statement.types
        columns = zip(batch.columns, types).map { column, type in
            Column(
                checker: ValueChecker(
                    entity: description.entity, table: description.schema.table, column: column.info,
                    property: column.property, rowKey: { _ in "" }),
                wire: column.wire, isArray: column.values[0].isArray,
                acceptsNil: !(nilKeysRefused && description.keyColumns.contains(column.name))
                    && BinaryColumnArray.elementType(of: column.arrayType) == type)
        }
        sql = prepared.statement.sql
        self.types = types
        preparedKey = PreparedStatementRegistry.Key(sql: sql, types: types)
        versionPlaces = prepared.versioned.flatMap { _ in
            let names = prepared.columns
            guard let version = names.firstIndex(where: { $0 == description.versionColumn }) else { return nil }
            return (description.keyColumns.compactMap { names.firstIndex(of: $0) }, version)
        }
    }

    /// The upsert of `entity`, or `nil` when it does not fit the plan. A value of the column's wire type has the
    /// plan's parameter type, so the statement takes the plan's types and key as they are.
    func prepare<E: EntityProtocol>(_ entity: E, options: UpsertOptions) -> PreparedUpsert? {
        guard let values = try? RowEncoder(naming: description.naming).values(of: entity, shape: shape) else { return nil }
        var bindings = PostgresBindings(capacity: columns.count)
        for (column, value) in zip(columns, values) {
            if value.isNull {
                guard column.acceptsNil else { return nil }
                bindings.appendNull()
            } else {
                guard value.wireType == column.wire, value.isArray == column.isArray,
                    (try? column.checker.check(value, row: 0)) != nil
                else { return nil }
                bindings.append(BinaryColumnValue(value: value))
            }
        }
        assert(
            zip(values, types).allSatisfy { $0.isNull || BinaryColumnValue(value: $0).psqlType == $1 },
            "a value bound with another type than the plan's")
        let statement = Statement(sql: sql, bindings: bindings, types: types, values: values, preparedKey: preparedKey)
        var versioned: VersionedRows?
        if let (keys, version) = versionPlaces {
            guard let read = VersionColumn.version(values[version]) else { return nil }
            versioned = VersionedRows(E.self, description: description, options: options, keys: keys.map { [values[$0]] }, versions: [read])
        }
        return PreparedUpsert(statement: statement, planned: self, options: options, versioned: versioned)
    }
}
