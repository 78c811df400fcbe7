import Foundation
import PostgresNIO
import StructPostgresCore
import StructPostgresDriver

/// Entities and the cells of the rows they came from, which relationship loading reads.
struct DecodedRows<E: EntityProtocol> {
    let layout: RowLayout
    let cells: ResultCells
    var entities: [E] = []
}

/// A request's shape and the description it was worked out from: a point read works it out to find its lane, and
/// its fetch, run alone, uses it again rather than working it out twice.
struct KnownShape {
    let shape: SelectShape
    let description: EntityDescription
    /// Where the shape's text is kept once found, for the calls that send it again (``SelectTemplates/Slot``).
    var template: SelectTemplates.Slot? = nil
}

/// A fetch as the service receives it: Core Data's `NSFetchRequest`.
struct FetchRequest: Sendable {
    var filter: Filter?
    var sort: [SortKey] = []
    var limit: Int?
    var offset: Int?
}

extension DatabaseSession {
    /// The entities matching `request`, with the cells they were decoded from (relationships are loaded
    /// from their link values).
    /// `known`: the request's shape, already worked out (a point read's, to find its lane).
    func fetchRows<E: EntityProtocol>(_ type: E.Type, _ request: FetchRequest, known: KnownShape? = nil) async throws
        -> DecodedRows<E>
    {
        let (statement, description) = try await selectStatement(E.self, request, known: known)
        return try await decodedRows(E.self, statement, description)
    }

    /// `SELECT <every column> FROM table WHERE ... ORDER BY ... LIMIT ... OFFSET ...`.
    ///
    /// A fetch with a shape (``SelectShape``) takes its text from the service's ``SelectTemplates``, built once.
    /// `known`: the request's shape, worked out already; used when it was worked out from the same description.
    func selectStatement<E: EntityProtocol>(_ type: E.Type, _ request: FetchRequest, known: KnownShape? = nil) async throws
        -> (Statement, EntityDescription)
    {
        let description = try await describe(E.self)
        let shape =
            if let known, known.description === description { known.shape } else {
                SelectShape(request, entity: ObjectIdentifier(E.self), description: description)
            }
        if let shape {
            // A slot is only ever given a template of its description's layout (`known.description === description`).
            let slot = known?.description === description ? known?.template : nil
            if let template = slot?.template ?? context.selects.template(for: shape.shape, schema: description.schema),
                let statement = try shape.statement(template)
            {
                if let slot, slot.template == nil { slot.template = template }
                return (statement, description)
            }
        }
        let relationships = try await relationships(along: request.filter?.keys ?? [], from: description)
        let statement = try Self.selectStatement(request, description, relationships: relationships)
        if let shape {
            let key = PreparedStatementRegistry.Key(sql: statement.sql, types: statement.types)
            context.selects.store(
                .init(sql: statement.sql, preparedKey: key, generation: description.schema.generation), for: shape.shape,
                builtFrom: description.schema)
        }
        return (statement, description)
    }

    /// `SELECT <every column> FROM table WHERE ... ORDER BY ... LIMIT ... OFFSET ...`, built; `relationships`: those
    /// the filter's keys go through.
    static func selectStatement(
        _ request: FetchRequest, _ description: EntityDescription, relationships: [String: ResolvedRelationship]
    ) throws -> Statement {
        var statement = Statement(sql: description.schema.selectAll)
        try appendWhere(request.filter, description, relationships: relationships, &statement)
        if !request.sort.isEmpty {
            statement.sql += " ORDER BY " + (try request.sort.map { try $0.sql(for: description) }).joined(separator: ", ")
        }
        if let limit = request.limit {
            guard limit >= 0 else { throw invalid("limit \(limit) is negative", description) }
            statement.sql += " LIMIT \(limit)"
        }
        if let offset = request.offset {
            guard offset >= 0 else { throw invalid("offset \(offset) is negative", description) }
            statement.sql += " OFFSET \(offset)"
        }
        return statement
    }

    /// Runs `statement` and decodes every row into an entity; the rows' first columns are the table's,
    /// in catalog order.
    func decodedRows<E: EntityProtocol>(_ type: E.Type, _ statement: Statement, _ description: EntityDescription) async throws
        -> DecodedRows<E>
    {
        let cells = try await tagged(description) { try await runCells(statement) }
        let layout = RowLayout(description)
        var decoded = DecodedRows<E>(layout: layout, cells: cells)
        decoded.entities = try await Self.decodeAll(E.self, cells, layout: layout, description: description)
        return decoded
    }

    /// Runs a query of the caller's and decodes each row into an `E`, matching columns by name; a property without a
    /// column of the result fails as it does on a fetch.
    func decoded<E: EntityProtocol>(_ type: E.Type, query: PostgresQuery) async throws -> [E] {
        let description = try await describe(E.self)
        var statement = Statement(sql: query.sql)
        statement.bindings = query.binds
        let cells = try await tagged(description) { try await runCells(statement) }
        return try await Self.decodeAll(E.self, cells, layout: RowLayout(description, columns: cells.names), description: description)
    }

    /// Every row of `cells` as an `E`, in order. A large result is decoded in two halves at once, each with its
    /// own decoder; an error is the one of the first bad row, as when decoding in order.
    static func decodeAll<E: EntityProtocol>(
        _ type: E.Type, _ cells: ResultCells, layout: RowLayout, description: EntityDescription
    ) async throws -> [E] {
        guard cells.count >= ParallelRows.minimum else {
            let entities = try decodeRows(0..<cells.count, RowDecoder(layout: layout, cells: cells), as: E.self)
            layout.rememberKeyOrder()
            return entities
        }
        let (first, second) = try await ParallelRows.halves(0..<cells.count) { rows in
            try decodeRows(rows, RowDecoder(layout: rows.lowerBound == 0 ? layout : layout.copy(description), cells: cells), as: E.self)
        }
        layout.rememberKeyOrder()
        return first + second
    }

    private static func decodeRows<E: EntityProtocol>(_ rows: Range<Int>, _ decoder: RowDecoder, as type: E.Type) throws -> [E] {
        var entities: [E] = []
        entities.reserveCapacity(rows.count)
        for row in rows { entities.append(try Self.decode(E.self, row: row, decoder)) }
        return entities
    }

    /// Decodes row `row` of the result `decoder` reads.
    static func decode<E: EntityProtocol>(_ type: E.Type, row: Int, _ decoder: RowDecoder) throws -> E {
        do {
            return try decoder.decode(E.self, row: row)
        } catch let error as StructPostgresError {
            throw error
        } catch {
            let layout = decoder.layout
            throw StructPostgresError(
                .decoding, "row of table '\(layout.schema.table)' cannot be decoded as \(layout.entity): \(error)",
                entity: layout.entity, table: layout.schema.table, rowKey: decoder.describeKey(row: row))
        }
    }

    func count<E: EntityProtocol>(_ type: E.Type, filter: Filter?) async throws -> Int {
        let description = try await describe(E.self)
        var statement = Statement(sql: "SELECT count(*) FROM \(description.schema.quotedTable)")
        try await appendWhere(filter, description, &statement)
        let rows = try await runTagged(statement, description)
        return Int(try rows[0].decode(Int64.self))
    }

    func exists<E: EntityProtocol>(_ type: E.Type, filter: Filter?) async throws -> Bool {
        let description = try await describe(E.self)
        var statement = Statement(sql: "SELECT EXISTS (SELECT 1 FROM \(description.schema.quotedTable)")
        try await appendWhere(filter, description, &statement)
        statement.sql += ")"
        let rows = try await runTagged(statement, description)
        return try rows[0].decode(Bool.self)
    }

    private static func invalid(_ message: String, _ description: EntityDescription) -> StructPostgresError {
        StructPostgresError(.invalidValue, message, entity: description.entity, table: description.schema.table)
    }
}
