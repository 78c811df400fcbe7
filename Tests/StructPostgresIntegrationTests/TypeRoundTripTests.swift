import Foundation
import StructPostgres
import Testing

/// Every supported Swift type goes into its column and comes back unchanged.
@Suite struct TypeRoundTripTests {
    @Test func everySupportedTypeRoundTrips() async throws {
        try await withTables(Sample.createTable) { service, _ in
            let sample = Sample.make(1)
            try await service.update(entities: [sample])
            let read = try await service.fetch(Sample.self)
            #expect(read.count == 1)
            #expect(read.first.map(normalized) == normalized(sample))
        }
    }

    @Test func edgeValuesRoundTrip() async throws {
        try await withTables(Sample.createTable) { service, _ in
            var low = Sample.make(2)
            low.text = ""
            low.int8Value = .min
            low.int16Value = .min
            low.int32Value = .min
            low.int64Value = .min
            low.intValue = .min
            low.uint8Value = 0
            low.uint64Value = 0
            low.double = -.greatestFiniteMagnitude
            low.float = -.greatestFiniteMagnitude
            low.decimal = Decimal(string: "-0.000000000000000001")!
            low.date = Date(timeIntervalSince1970: -2_208_988_800.000001)  // 1899-12-31T23:59:59.999999Z
            low.data = Data()
            low.tags = []
            low.scores = []
            low.optionalTags = [nil, nil]
            low.avatarURL = nil
            low.authorID = nil
            low.note = nil
            low.maybeDate = nil
            low.maybeRole = nil
            low.maybeAddress = nil
            low.maybeDouble = nil

            var high = Sample.make(3)
            high.text = String(repeating: "long text ✓ ", count: 100_000)
            high.int8Value = .max
            high.int16Value = .max
            high.int32Value = .max
            high.int64Value = .max
            high.intValue = .max
            high.uint8Value = .max
            high.uint16Value = .max
            high.uint32Value = .max
            high.uint64Value = .max
            high.double = .greatestFiniteMagnitude
            high.float = .greatestFiniteMagnitude
            high.decimal = Decimal(string: "123456789012345678901234567890.123456789")!
            high.date = Date(timeIntervalSince1970: 4_102_444_800.999999)  // 2100-01-01, last microsecond
            high.data = Data((0...255).map { UInt8($0) })
            high.tags = ["a\"quote", "back\\slash", "NULL", "", "{braces}", "with,comma", " spaced ", "ünï©ødé 🚀"]
            high.scores = [Int.min, 0, Int.max]
            high.optionalTags = ["x", nil, "NULL"]
            high.maybeAddress = Address(street: "Straße 1 — \"quoted\"", city: "東京", tags: [])
            high.maybeDouble = -0.0

            var unicode = Sample.make(4)
            unicode.text = "e\u{301} café 👩‍👩‍👧 مرحبا \u{200F} 𝄞 \t\n\r"
            unicode.note = "نص"
            unicode.date = Date(timeIntervalSince1970: 1.000001)
            unicode.maybeDate = Date(timeIntervalSince1970: -0.000001)

            let samples = [low, high, unicode]
            try await service.update(entities: samples)
            let read = try await service.fetch(Sample.self, where: nil, sortedBy: [.ascending("text")], limit: nil)
            // Text is stored composed (NFC), which the C collation orders by code point: as Swift orders strings.
            let expected = samples.sorted { $0.text < $1.text }
            #expect(read.map(normalized) == expected.map(normalized))
            // The dates keep every microsecond.
            #expect(read.map { microseconds($0.date) } == expected.map { microseconds($0.date) })
            #expect(read.first { $0.uuid == unicode.uuid }?.maybeDate.map(microseconds) == -946_684_800_000_001)
        }
    }

    @Test func nilInEveryOptionalColumnIsStoredAsNull() async throws {
        try await withTables(Sample.createTable) { service, _ in
            var sample = Sample.make(5)
            sample.avatarURL = nil
            sample.authorID = nil
            sample.note = nil
            sample.maybeDate = nil
            sample.maybeRole = nil
            sample.maybeAddress = nil
            sample.maybeDouble = nil
            try await service.update(entities: [sample])
            let rows = try await service.query(
                """
                SELECT count(*) FROM samples WHERE avatar_url IS NULL AND author_id IS NULL AND note IS NULL
                AND maybe_date IS NULL AND maybe_role IS NULL AND maybe_address IS NULL AND maybe_double IS NULL
                """)
            #expect(try rows[0].decode(Int64.self) == 1)
            #expect(try await service.fetch(Sample.self).map(normalized) == [normalized(sample)])
        }
    }

    @Test func valuesAreStoredInTheirNaturalColumnForm() async throws {
        try await withTables(Sample.createTable) { service, _ in
            let sample = Sample.make(6)
            try await service.update(entities: [sample])
            let rows = try await service.query(
                """
                SELECT role, priority, address->>'city', tags[2], avatar_url, uint64_value::text,
                       to_char(date AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')
                FROM samples
                """)
            let (role, priority, city, tag, url, big, date) = try rows[0].decode(
                (String, Int32, String, String, String, String, String).self)
            #expect(role == "critic")
            #expect(priority == 9)
            #expect(city == "Oslo")
            #expect(tag == "y")
            #expect(url == "https://example.com/a.png")
            #expect(big == "18000000000000000000")
            #expect(date == "2023-11-14 22:13:20.123456")
        }
    }

    /// Dates compared at PostgreSQL's precision (microseconds).
    private func normalized(_ sample: Sample) -> Sample {
        var copy = sample
        copy.date = roundedDate(sample.date)
        copy.maybeDate = sample.maybeDate.map(roundedDate)
        return copy
    }

    private func roundedDate(_ date: Date) -> Date {
        Date(timeIntervalSince1970: 946_684_800 + Double(microseconds(date)) / 1_000_000)
    }
}
