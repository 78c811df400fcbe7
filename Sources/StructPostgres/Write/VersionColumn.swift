import StructPostgresCore
import StructPostgresDriver

/// The checks of an entity's version column (``EntityProtocol/versionKey``) before anything is sent: the column must
/// hold whole numbers and refuse NULL (a stale write is refused through it), and every row's version must be a
/// number from 0 up.
enum VersionColumn {
    /// Refuses a version column that is not `smallint`, `integer` or `bigint`, or that is nullable.
    static func check(_ description: EntityDescription) throws {
        guard let name = description.versionColumn, let column = description.schema.columns[name] else { return }
        guard column.isInteger, column.notNull else {
            throw StructPostgresError(
                .invalidConfiguration,
                "the version of \(description.entity) is column '\(name)' of type \(column.typeName)\(column.notNull ? "" : ", nullable"); it must be integer NOT NULL DEFAULT 1 (or bigint)",
                entity: description.entity, table: description.schema.table, column: name)
        }
    }

    static func notEncoded(_ description: EntityDescription, properties: [String]) -> StructPostgresError {
        let name = description.versionColumn ?? "version"
        return StructPostgresError(
            .undefinedColumn, "versionKey column '\(name)' is not among the encoded properties \(properties) of \(description.entity)",
            entity: description.entity, table: description.schema.table, column: name)
    }

    /// The version `value` holds, or `nil` when it is not a whole number from 0 up.
    static func version(_ value: ColumnValue) -> Int? {
        let number: Int64? =
            switch value {
            case .int2(let small): Int64(small)
            case .int4(let int): Int64(int)
            case .int8(let big): big
            default: nil
            }
        guard let number, number >= 0 else { return nil }
        return Int(number)
    }

    /// Each row's version in `values`; a row without a whole number from 0 up is refused, named by its key.
    static func versions(
        _ values: [ColumnValue], property: String, description: EntityDescription, rowKey: (Int) -> String
    ) throws -> [Int] {
        var versions: [Int] = []
        versions.reserveCapacity(values.count)
        for (row, value) in values.enumerated() {
            guard let version = version(value) else {
                throw StructPostgresError(
                    .invalidValue,
                    "\(description.entity).\(property) is \(value.isNull ? "nil" : "negative or not a whole number"): a version is 0 for a model never stored, else the version it was read at",
                    entity: description.entity, table: description.schema.table, column: description.versionColumn,
                    property: property, rowKey: rowKey(row))
            }
            versions.append(version)
        }
        return versions
    }
}
