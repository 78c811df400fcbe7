import Foundation
import StructPostgres
import Testing

private struct Counter: StoredModel {
    static let table = "counters"
    var uuid: UUID
    var small: Int
    var amount: Decimal
    var ratio: Double
    var code: String
}

private struct Ghost: StoredModel {
    static let table = "no_such_table"
    var uuid: UUID
}

private struct Location: Codable, Sendable {
    var latitude: Double
    var longitude: Double
}

private struct Place: StoredModel {
    static let table = "places"
    var uuid: UUID
    var location: Location
}

private struct Extra: StoredModel {
    static let table = "books"
    var uuid: UUID
    var title: String?
    var subtitle: String?
}

private struct Untitled: StoredModel {
    static let table = "books"
    var uuid: UUID
    var isbn: String
}

private struct PriceLabel: StoredModel {
    static let table = "text_prices"
    var uuid: UUID
    var price: String
}

private struct PricedAsText: StoredModel {
    static let table = "text_prices"
    var uuid: UUID
    var price: Double
}

@Suite struct BadInputTests {
    private static let counters = """
        CREATE TABLE counters (uuid uuid PRIMARY KEY, small integer NOT NULL, amount numeric(6,2) NOT NULL,
                               ratio real NOT NULL, code varchar(4) NOT NULL)
        """

    private func counter(small: Int = 1, amount: Decimal = 1, ratio: Double = 1, code: String = "ok") -> Counter {
        Counter(uuid: UUID(), small: small, amount: amount, ratio: ratio, code: code)
    }

    @Test func aNulByteIsRefusedNamingEntityAndColumnAndNothingIsWritten() async throws {
        try await withTables(BookSchema.create) { service, log in
            let bad = Novel(uuid: UUID(), title: "nul\u{0}byte", price: 1, publisher: nil)
            let batch = [Novel(uuid: UUID(), title: "fine", price: 1, publisher: nil), bad]
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: batch) }
            #expect(error?.code == .invalidValue)
            #expect(error?.entity == "NovelEntity")
            #expect(error?.column == "title")
            #expect(error?.rowKey == "uuid=\(bad.uuid.uuidString)")
            #expect(error?.description.contains("NUL") == true)
            #expect(!log.all.contains { $0.hasPrefix("WITH upserted") || $0.hasPrefix("INSERT INTO") })
            let written = try await rowCount("books", service)
            #expect(written == 0)
        }
    }

    @Test func valuesOutOfTheColumnsRangeSurfaceSQLStateAndColumn() async throws {
        try await withTables(Self.counters) { service, _ in
            let cases: [(Counter, String, String)] = [
                (counter(small: 3_000_000_000), "small", "22003"),
                (counter(amount: Decimal(string: "12345.67")!), "amount", "22003"),
                (counter(ratio: 1e300), "ratio", "22003"),
                (counter(code: "toolong"), "code", "22001"),
                // Five characters in eight bytes: varchar(4) counts characters.
                (counter(code: "ééééé"), "code", "22001"),
            ]
            for (bad, column, state) in cases {
                let error = await #expect(throws: StructPostgresError.self) {
                    try await service.update(entities: [counter(), bad])
                }
                #expect(error?.code == .invalidValue)
                #expect(error?.sqlState == state)
                #expect(error?.column == column)
                #expect(error?.rowKey == "uuid=\(bad.uuid.uuidString)")
            }
            #expect(try await rowCount("counters", service) == 0)
            // Values at the limits are accepted.
            try await service.update(entities: [
                counter(small: Int(Int32.max), amount: Decimal(string: "9999.99")!, code: "four"), counter(code: "éééé"),
            ])
            #expect(try await rowCount("counters", service) == 2)
        }
    }

    /// PostgreSQL rounds a value to the scale of `numeric(p, s)`: a `Decimal` (an exact value) is refused instead.
    @Test func aDecimalWithMorePlacesThanTheColumnKeepsIsRefusedNotRounded() async throws {
        try await withTables(Self.counters) { service, log in
            let bad = counter(amount: Decimal(string: "12.345")!)
            for batch in [[bad], [counter(), bad]] {
                let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: batch) }
                #expect(error?.code == .invalidValue)
                #expect(error?.column == "amount")
                #expect(error?.rowKey == "uuid=\(bad.uuid.uuidString)")
                #expect(error?.message.contains("more decimal places than column 'amount' of type numeric(6,2) keeps (2)") == true)
                #expect(error?.message.contains("12.345") == false)
            }
            #expect(try await rowCount("counters", service) == 0)
            #expect(!log.all.contains { $0.contains("INSERT INTO") })
            // Trailing zeros lose nothing.
            let exact = counter(amount: Decimal(string: "12.340")!)
            try await service.update(entities: [exact])
            #expect(try await service.fetch(Counter.self).map(\.amount) == [Decimal(string: "12.34")!])
        }
    }

    @Test func aRangeErrorOnlyPostgreSQLSeesCarriesItsSQLState() async throws {
        try await withTables(Self.counters, "ALTER TABLE counters ADD CHECK (small > 0)") { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [counter(small: -1)])
            }
            #expect(error?.code == .checkViolation)
            #expect(error?.sqlState == "23514")
            #expect(error?.table == "counters")
            #expect(error?.constraint == "counters_small_check")
        }
    }

    @Test func aMissingTableIsNamedWithItsEntity() async throws {
        try await withTables { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Ghost(uuid: UUID())])
            }
            #expect(error?.code == .undefinedTable)
            #expect(error?.entity == "Ghost")
            #expect(error?.table == "no_such_table")
            #expect(error?.sqlState == "42P01")
            await #expect(throws: StructPostgresError.self) { _ = try await service.fetch(Ghost.self) }
        }
    }

    @Test func aPropertyWhoseTypeCannotBeStoredIsNamed() async throws {
        try await withTables("CREATE TABLE places (uuid uuid PRIMARY KEY, location integer)") { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Place(uuid: UUID(), location: Location(latitude: 1, longitude: 2))])
            }
            #expect(error?.code == .unsupportedType)
            #expect(error?.property == "location")
            #expect(error?.message.contains("column 'location' of type integer") == true)

            let nan = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Place(uuid: UUID(), location: Location(latitude: .nan, longitude: 0))])
            }
            #expect(nan?.code == .unsupportedType)
            #expect(nan?.property == "location")
            let written = try await rowCount("places", service)
            #expect(written == 0)
        }
    }

    /// SQL written by hand may hold a password: its error shows the statement with its literals masked.
    @Test func aPasswordInHandWrittenSQLIsNotShownByItsError() async throws {
        try await withTables { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.execute(unsafeSQL: "ALTER ROLE structpg_no_such_role WITH PASSWORD 'hunter2secret'")
            }
            #expect(error?.sqlState == "42704")
            #expect(error?.sql == "ALTER ROLE structpg_no_such_role WITH PASSWORD '****'")
            #expect(error.map { "\($0)" }?.contains("hunter2secret") == false)
            var reflected = ""
            dump(error, to: &reflected)
            #expect(!reflected.contains("hunter2secret"))
        }
    }

    /// A `String` on a number or boolean column is refused before sending, as an `Int` on a text column is: it
    /// could be written (the server casts "12") but never read back into a `String`.
    @Test func textForANumberOrBooleanColumnIsRefusedByName() async throws {
        struct Tally: StoredModel {
            static let table = "tallies"
            var uuid: UUID
            var count: String
        }
        struct Flag: StoredModel {
            static let table = "flags"
            var uuid: UUID
            var enabled: String
        }
        let schema =
            "CREATE TABLE tallies (uuid uuid PRIMARY KEY, count integer); CREATE TABLE flags (uuid uuid PRIMARY KEY, enabled boolean)"
        try await withTables(schema) { service, log in
            let tally = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Tally(uuid: UUID(), count: "12")])
            }
            #expect(tally?.code == .unsupportedType)
            #expect(tally?.property == "count")
            #expect(tally?.message.contains("column 'count' of type integer cannot store") == true)
            let flag = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Flag(uuid: UUID(), enabled: "true"), Flag(uuid: UUID(), enabled: "false")])
            }
            #expect(flag?.code == .unsupportedType)
            #expect(flag?.column == "enabled")
            #expect(!log.all.contains { $0.contains("INSERT INTO") })
            let written = try await rowCount("tallies", service) + rowCount("flags", service)
            #expect(written == 0)
        }
    }

    @Test func aPropertyWithoutAColumnIsNamed() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Extra(uuid: UUID(), title: "t", subtitle: "s")])
            }
            #expect(error?.code == .undefinedColumn)
            #expect(error?.property == "subtitle")
            #expect(error?.table == "books")

            try await service.update(entities: [Novel(uuid: UUID(), title: "t", price: 1, publisher: nil)])
            let read = await #expect(throws: StructPostgresError.self) { _ = try await service.fetch(Extra.self) }
            #expect(read?.code == .undefinedColumn, "an optional property without a column fails on fetch as on write")
            #expect(read?.sqlState == error?.sqlState)
            #expect(read?.message == error?.message)
            #expect(read?.column == "subtitle")
            let required = await #expect(throws: StructPostgresError.self) { _ = try await service.fetch(Untitled.self) }
            #expect(required?.code == .undefinedColumn)
            #expect(required?.property == "isbn")
        }
    }

    @Test func anUnexpectedColumnTypeGivesADecodingErrorWithTableColumnRowAndTypes() async throws {
        try await withTables("CREATE TABLE text_prices (uuid uuid PRIMARY KEY, price text)") { service, _ in
            let id = UUID()
            _ = try await service.query("INSERT INTO text_prices VALUES (\(id), 'cheap')")
            let error = await #expect(throws: StructPostgresError.self) { _ = try await service.fetch(PricedAsText.self) }
            #expect(error?.code == .decoding)
            #expect(error?.table == "text_prices")
            #expect(error?.column == "price")
            #expect(error?.rowKey == "uuid=\(id.uuidString)")
            #expect(error?.message.contains("cannot be decoded as Double (found text)") == true)

            _ = try await service.query("UPDATE text_prices SET price = NULL")
            let null = await #expect(throws: StructPostgresError.self) { _ = try await service.fetch(PricedAsText.self) }
            #expect(null?.message.contains("found NULL") == true)
        }
    }

    /// A bad row in the middle of a large result fails the fetch with that row's key, and the (only) connection
    /// serves the next call, in a transaction or not.
    @Test func aBadRowInTheMiddleOfALargeResultLeavesTheConnectionUsable() async throws {
        try await withTables("CREATE TABLE text_prices (uuid uuid PRIMARY KEY, price text)", pool: PoolOptions(maxConnections: 1)) {
            service, _ in
            _ = try await service.query(
                """
                INSERT INTO text_prices SELECT ('00000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid,
                    CASE WHEN n = 1000 THEN NULL ELSE 'p' || n END FROM generate_series(1, 20000) AS n
                """)
            let error = await #expect(throws: StructPostgresError.self) {
                _ = try await service.fetch(PriceLabel.self, sortedBy: [.ascending("uuid")])
            }
            #expect(error?.code == .decoding)
            #expect(error?.rowKey == "uuid=00000000-0000-4000-8000-000000001000")
            #expect(error?.message.contains("found NULL") == true)
            let inTransaction = await #expect(throws: StructPostgresError.self) {
                try await service.transaction { tx in
                    _ = try await tx.query("UPDATE text_prices SET price = 'changed' WHERE uuid = '00000000-0000-4000-8000-000000000001'")
                    _ = try await tx.fetch(PriceLabel.self, sortedBy: [.ascending("uuid")])
                }
            }
            #expect(inTransaction?.code == .decoding)
            _ = try await service.query("UPDATE text_prices SET price = 'p1000' WHERE price IS NULL")
            let all = try await service.fetch(PriceLabel.self, sortedBy: [.ascending("uuid")])
            #expect(all.count == 20000)
            #expect(all.first?.price == "p1", "the transaction's update was rolled back")
            // Decoded in two halves at once, and in order.
            #expect(all.map(\.price) == (1...20000).map { "p\($0)" })
        }
    }

    /// A large result is decoded in two halves at once: with bad rows in both, the error names the first one.
    @Test func theFirstBadRowOfALargeResultIsReportedWhateverHalfItIsIn() async throws {
        try await withTables("CREATE TABLE text_prices (uuid uuid PRIMARY KEY, price text)") { service, _ in
            _ = try await service.query(
                """
                INSERT INTO text_prices SELECT ('00000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid, 'p' || n
                FROM generate_series(1, 10000) AS n
                """)
            for (bad, reported) in [([9000], 9000), ([3000, 9000], 3000), ([4999, 5001], 4999)] {
                _ = try await service.query("UPDATE text_prices SET price = 'p' || substr(uuid::text, 25)::int")
                for row in bad {
                    _ = try await service.query("UPDATE text_prices SET price = NULL WHERE uuid = \(Self.priceKey(row))")
                }
                let error = await #expect(throws: StructPostgresError.self) {
                    _ = try await service.fetch(PriceLabel.self, sortedBy: [.ascending("uuid")])
                }
                #expect(error?.code == .decoding)
                #expect(error?.rowKey == "uuid=\(Self.priceKey(reported).uuidString)", "bad rows \(bad)")
            }
        }
    }

    private static func priceKey(_ n: Int) -> UUID {
        UUID(uuidString: "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - String(n).count) + String(n))!
    }

    @Test func constraintViolationsHaveCasesToSwitchOn() async throws {
        let schema = """
            CREATE TABLE authors (uuid uuid PRIMARY KEY, name text NOT NULL UNIQUE);
            CREATE TABLE books (uuid uuid PRIMARY KEY, title text, price double precision NOT NULL DEFAULT 0,
                                publisher text, author_id uuid REFERENCES authors(uuid))
            """
        struct Author: StoredModel {
            static let table = "authors"
            var uuid: UUID
            var name: String?
        }
        struct Book: StoredModel {
            static let table = "books"
            var uuid: UUID
            var title: String?
            var price: Double
            var authorID: UUID?
        }
        try await withTables(schema) { service, _ in
            let ann = Author(uuid: UUID(), name: "Ann")
            try await service.update(entities: [ann])
            let unique = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Author(uuid: UUID(), name: "Ann")])
            }
            #expect(unique?.code == .uniqueViolation)
            #expect(unique?.constraint == "authors_name_key")
            #expect(unique?.entity == "Author")
            #expect(unique?.sql?.contains("INSERT INTO \"authors\"") == true)
            #expect(unique?.description.contains("Ann") == false)
            #expect(unique?.column == "name")
            #expect(unique?.property == "name")
            // In a batch too: the column, the property and the row by its key, never the value.
            let secondAnn = Author(uuid: UUID(), name: "Ann")
            let inBatch = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Author(uuid: UUID(), name: "Bob"), secondAnn, Author(uuid: UUID(), name: "Cy")])
            }
            #expect(inBatch?.code == .uniqueViolation)
            #expect(inBatch?.column == "name")
            #expect(inBatch?.property == "name")
            #expect(inBatch?.rowKey == "uuid=\(secondAnn.uuid.uuidString)")
            #expect(inBatch?.description.contains("Ann") == false)
            // Two rows of the batch with one name: the later one is refused.
            let laterDee = Author(uuid: UUID(), name: "Dee")
            let twice = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Author(uuid: UUID(), name: "Dee"), Author(uuid: UUID(), name: "Eve"), laterDee])
            }
            #expect(twice?.rowKey == "uuid=\(laterDee.uuid.uuidString)")
            #expect(twice.map { "\($0)" }?.contains("Dee") == false)
            var reflected = ""
            dump(twice, to: &reflected)
            #expect(!reflected.contains("Dee"), "\(reflected)")
            #expect(try await rowCount("authors", service) == 1)

            let notNull = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Author(uuid: UUID(), name: nil)])
            }
            #expect(notNull?.code == .notNullViolation)
            #expect(notNull?.column == "name")
            #expect(notNull?.property == "name")
            let nameless = Author(uuid: UUID(), name: nil)
            let notNullInBatch = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Author(uuid: UUID(), name: "Fay"), nameless, Author(uuid: UUID(), name: nil)])
            }
            #expect(notNullInBatch?.code == .notNullViolation)
            #expect(notNullInBatch?.rowKey == "uuid=\(nameless.uuid.uuidString)")

            let foreignKey = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Book(uuid: UUID(), title: "t", price: 1, authorID: UUID())])
            }
            #expect(foreignKey?.code == .foreignKeyViolation)
            #expect(foreignKey?.constraint == "books_author_id_fkey")
            #expect(foreignKey?.column == "author_id")
            #expect(foreignKey?.property == "authorID")
            let orphan = Book(uuid: UUID(), title: "o", price: 1, authorID: UUID())
            let foreignKeyInBatch = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [Book(uuid: UUID(), title: "t", price: 1, authorID: ann.uuid), orphan])
            }
            #expect(foreignKeyInBatch?.code == .foreignKeyViolation)
            #expect(foreignKeyInBatch?.rowKey == "uuid=\(orphan.uuid.uuidString)")
            #expect(try await rowCount("authors", service) == 1)
            #expect(try await rowCount("books", service) == 0)
        }
    }
}
