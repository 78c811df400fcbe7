import StructPostgresCore
import StructPostgresDriver

/// A relationship resolved against the catalog: the columns that link source and target, and the SQL
/// that loads the targets of many sources at once.
struct ResolvedRelationship: Sendable {
    /// The column of the source's rows whose values identify their targets.
    let sourceColumn: String
    /// Selects the target's columns, then the link value cast to the type of ``sourceColumn`` unless a target
    /// column holds it already, for the source values bound as `$1`:
    /// `SELECT t.… FROM "reviews" t WHERE t."book_id" = ANY($1::uuid[])`,
    /// `SELECT t.…, j."store_id"::uuid FROM "store_books" j JOIN "books" t ON … WHERE j."store_id" = ANY($1::uuid[])`.
    let targetSQL: String
    /// The index of the link value in the rows of ``targetSQL``.
    let linkColumn: Int
    /// The target's column holding the values of ``sourceColumn``; `nil` for a join table.
    let targetColumn: String?
    let join: JoinTable?
    let target: EntityDescription

    /// The join table of a to-many relationship owned by the source.
    struct JoinTable: Sendable {
        let table: String
        let quotedTable: String
        /// The join table's columns referencing the source and the target.
        let parentColumn: String
        let childColumn: String
        /// Their types, for casts.
        let parentType: String
        let childType: String
        /// The source's and target's columns those reference.
        let sourceKey: String
        let targetKey: String
        let quotedTargetTable: String
        let onRemove: RemovalRule
    }
}
