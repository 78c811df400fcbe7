import Foundation
import StructPostgres
import Synchronization
import Testing

private struct Measure: StoredModel, Equatable {
    static let table = "measures"
    var uuid: UUID
    var price: Double
    var exact: Decimal
    var day: Date
    var local: Date
    var codes: [String]
    var settings: Settings?

    struct Settings: Codable, Sendable, Equatable {
        var theme: String
        var size: Int
    }

    static let create = """
        CREATE TABLE measures (uuid uuid PRIMARY KEY, price numeric(10,2) NOT NULL, exact double precision NOT NULL,
                               day date NOT NULL, local timestamp NOT NULL, codes varchar(5)[] NOT NULL, settings text)
        """
}

/// Swift types written to columns of neighbouring types come back as they went in, or are refused.
@Suite struct ColumnCompatibilityTests {
    private func measure() -> Measure {
        Measure(
            uuid: UUID(), price: 12.5, exact: 2.25, day: Date(timeIntervalSince1970: 1_700_006_400),
            local: Date(timeIntervalSince1970: 1_700_000_000.5), codes: ["ab", "cde"],
            settings: .init(theme: "dark", size: 3))
    }

    @Test func neighbouringColumnTypesRoundTrip() async throws {
        let berlin = "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET timezone = %L', current_database(), 'Europe/Berlin'); END $$"
        try await withTables(Measure.create, berlin) { service, _ in
            // Keep the connection opened before the change busy, so the calls below open new ones.
            try await service.withConnection { _ in
                let value = measure()
                try await service.update(entities: [value])
                let read = try await service.fetch(Measure.self)
                #expect(read == [value])
                // timestamp without time zone holds UTC wall-clock time, whatever the database's zone.
                let zone = try await service.query("SELECT current_setting('timezone')")[0].decode(String.self)
                #expect(zone == "UTC")
                let local = try await service.query("SELECT to_char(local, 'HH24:MI:SS.MS') FROM measures")[0].decode(String.self)
                #expect(local == "22:13:20.500")
            }
        }
    }

    @Test func anArrayElementTooLongIsRefusedNotTruncated() async throws {
        try await withTables(Measure.create) { service, _ in
            var value = measure()
            value.codes = ["abcdefgh"]
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [value]) }
            #expect(error?.sqlState == "22001")
            let count = try await rowCount("measures", service)
            #expect(count == 0)
        }
    }

    @Test func valuesPostgreSQLCannotHoldAreRefusedBeforeSending() async throws {
        try await withTables(Measure.create) { service, log in
            var farFuture = measure()
            farFuture.day = Date(timeIntervalSince1970: .infinity)
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [farFuture]) }
            #expect(error?.code == .invalidValue)
            #expect(error?.column == "day")
            let filterError = await #expect(throws: StructPostgresError.self) {
                _ = try await service.count(Measure.self, where: .equal("exact", Decimal.nan))
            }
            #expect(filterError?.code == .invalidValue)
            #expect(!log.all.contains { $0.hasPrefix("WITH upserted") || $0.hasPrefix("INSERT INTO") || $0.hasPrefix("SELECT count") })
        }
        try await withTables(Sample.createTable) { service, _ in
            var decimalNaN = Sample.make()
            decimalNaN.decimal = .nan
            let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: [decimalNaN]) }
            #expect(error?.column == "decimal")
            #expect(error?.message.contains("Decimal.nan") == true)
        }
    }

    @Test func aDoubleThatIsNotFiniteIsRefusedByANumericColumnAndKeptByADoubleOne() async throws {
        try await withTables(Measure.create) { service, log in
            for bad in [Double.nan, .infinity, -.infinity] {
                var value = measure()
                value.price = bad
                for batch in [[value], [measure(), value]] {
                    let error = await #expect(throws: StructPostgresError.self) { try await service.update(entities: batch) }
                    #expect(error?.code == .invalidValue)
                    #expect(error?.column == "price")
                    #expect(error?.property == "price")
                    #expect(error?.rowKey == "uuid=\(value.uuid.uuidString)")
                    #expect(error?.message.contains("numeric(10,2)") == true)
                }
            }
            let stored = try await rowCount("measures", service)
            #expect(stored == 0)
            #expect(!log.all.contains { $0.contains("INSERT INTO") })
        }
        struct Reading: StoredModel {
            static let table = "readings"
            var uuid: UUID
            var value: Double
        }
        try await withTables("CREATE TABLE readings (uuid uuid PRIMARY KEY, value double precision NOT NULL)") { service, _ in
            let kept = [
                Reading(uuid: UUID(), value: .nan), Reading(uuid: UUID(), value: .infinity), Reading(uuid: UUID(), value: -.infinity),
            ]
            try await service.update(entities: kept)
            let read = try await service.fetch(Reading.self)
            let byID = Dictionary(uniqueKeysWithValues: read.map { ($0.uuid, $0.value) })
            #expect(byID[kept[0].uuid]?.isNaN == true)
            #expect(byID[kept[1].uuid] == .infinity)
            #expect(byID[kept[2].uuid] == -.infinity)
        }
    }

    @Test func numericValuesBeyondDecimalAreReadExactlyOrRefusedNeverTrapped() async throws {
        struct Amount: StoredModel {
            static let table = "amounts"
            var uuid: UUID
            var name: String
            var asDouble: Double?
            var asDecimal: Decimal?
            var asInt: Int?
        }
        let create =
            "CREATE TABLE amounts (uuid uuid PRIMARY KEY, name text UNIQUE NOT NULL, as_double numeric, as_decimal numeric, as_int numeric)"
        try await withTables(create) { service, _ in
            // 1e308 and 5e-324 (the least nonzero Double) written through the library: a numeric column holds them, Decimal cannot.
            try await service.update(entities: [
                Amount(uuid: UUID(), name: "huge", asDouble: 1e308), Amount(uuid: UUID(), name: "tiny", asDouble: .leastNonzeroMagnitude),
            ])
            try await service.execute(
                unsafeSQL: """
                    INSERT INTO amounts VALUES
                      (gen_random_uuid(), 'exact', 1e120, 12345678901234567890123456789012345678, 12.00),
                      (gen_random_uuid(), 'long', NULL, 123456789012345678901234567890123456789012345, NULL),
                      (gen_random_uuid(), 'big', NULL, 1e200, NULL),
                      (gen_random_uuid(), 'fraction', NULL, NULL, 12.50)
                    """)
            let read = try await service.fetch(Amount.self, where: .format("name IN {'huge', 'tiny', 'exact'}"))
            let byName = Dictionary(uniqueKeysWithValues: read.map { ($0.name, $0) })
            #expect(byName["huge"]?.asDouble == 1e308)
            #expect(byName["tiny"]?.asDouble == .leastNonzeroMagnitude)
            #expect(byName["exact"]?.asDouble == 1e120)
            #expect(byName["exact"]?.asDecimal == Decimal(string: "12345678901234567890123456789012345678"))
            #expect(byName["exact"]?.asInt == 12)
            for (name, column, type) in [
                ("long", "as_decimal", "Decimal"), ("big", "as_decimal", "Decimal"), ("fraction", "as_int", "Int"),
            ] {
                let error = await #expect(throws: StructPostgresError.self) {
                    try await service.fetch(Amount.self, where: .format("name == %@", name))
                }
                #expect(
                    error?.message.contains("column '\(column)' of table 'amounts' cannot be decoded as") == true,
                    "\(String(describing: error))")
                #expect(error?.message.contains(type) == true)
            }
        }
    }

    @Test func aUniqueIndexWithIncludedColumnsIsAConflictTarget() async throws {
        struct Coded: StoredModel {
            static let table = "coded"
            static let uniqueKey = ["code"]
            var uuid: UUID
            var code: String
            var name: String
        }
        try await withTables(
            "CREATE TABLE coded (uuid uuid PRIMARY KEY, code text NOT NULL, name text NOT NULL, UNIQUE (code) INCLUDE (name))"
        ) { service, _ in
            try await service.update(entities: [Coded(uuid: UUID(), code: "A", name: "first")])
            let result = try await service.update(entities: [Coded(uuid: UUID(), code: "A", name: "second")], options: .updating("name"))
            #expect(result == UpsertResult(updated: 1))
            let names = try await service.fetch(Coded.self).map(\.name)
            #expect(names == ["second"])
        }
    }

    @Test func aCaughtStatementErrorMakesCommitFail() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let book = Novel(uuid: UUID(), title: "kept?", price: 1, publisher: nil)
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.transaction { tx in
                    try await tx.update(entities: [book])
                    do {
                        _ = try await tx.query("SELECT no_such_column FROM books")
                    } catch {}
                }
            }
            #expect(error?.sqlState == "25P02")
            #expect(error?.message.contains("rolled back") == true)
            let count = try await rowCount("books", service)
            #expect(count == 0)
        }
    }

    @Test func concurrentNestedTransactionsCannotShareASavepoint() async throws {
        try await withTables(BookSchema.create) { service, _ in
            let outcomes = Mutex<[Bool]>([])
            try await service.transaction { tx in
                await withTaskGroup(of: Bool.self) { group in
                    for _ in 0..<2 {
                        group.addTask {
                            do {
                                try await tx.transaction { inner in
                                    try await inner.update(entities: [Novel(uuid: UUID(), title: "t", price: 1, publisher: nil)])
                                }
                                return true
                            } catch {
                                return false
                            }
                        }
                    }
                    for await ok in group { outcomes.withLock { $0.append(ok) } }
                }
            }
            // One savepoint is taken; the concurrent attempt is refused rather than sharing it.
            #expect(outcomes.withLock { $0.filter { $0 }.count } == 1)
            #expect(outcomes.withLock { $0.count } == 2)
            let count = try await rowCount("books", service)
            #expect(count == 1)
        }
    }

    @Test func negatedFiltersMatchNullsAsNSPredicateDoes() async throws {
        try await withTables(BookSchema.create) { service, _ in
            try await service.update(entities: [
                Novel(uuid: UUID(), title: "A", price: 1, publisher: "Apress"),
                Novel(uuid: UUID(), title: "B", price: 2, publisher: nil),
                Novel(uuid: UUID(), title: "C", price: 3, publisher: "Other"),
            ])
            let notApress = try await service.count(Novel.self, where: !.equal("publisher", "Apress"))
            #expect(notApress == 2)
            let neither = try await service.count(Novel.self, where: !(.equal("publisher", "Apress") || .equal("title", "C")))
            #expect(neither == 1)
        }
    }

    @Test func dataExceptionsDoNotQuoteTheValue() async throws {
        struct WrongID: StoredModel {
            static let table = "books"
            var uuid: UUID
            var authorID: String
        }
        try await withTables(BookSchema.create) { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.update(entities: [WrongID(uuid: UUID(), authorID: "not-a-uuid-zq9x")])
            }
            #expect(error?.sqlState == "22P02")
            #expect(error.map { "\($0)" }?.contains("zq9x") == false)
            #expect(error?.message.contains("invalid input syntax for type uuid") == true)
        }
    }
}
