@testable import Bookstore
import BookstoreModels
import Foundation
import StructPostgres
import Synchronization
import Testing

/// A web service's author: remote names through CodingKeys, stored through its own entity.
private struct RemoteAuthor: Decodable, Sendable {
    let uuid: UUID
    var name: String
    enum CodingKeys: String, CodingKey {
        case uuid = "id"
        case name = "full_name"
    }
}

private struct RemoteAuthorEntity: EntityProtocol {
    static let table = "authors"
    var uuid: UUID
    var name: String
    func toModel() -> RemoteAuthor { RemoteAuthor(uuid: uuid, name: name) }
}

extension RemoteAuthor: EntityConvertible {
    func toEntity(context: EntityContext) -> RemoteAuthorEntity { RemoteAuthorEntity(uuid: uuid, name: name) }
}

/// A book in a store's set, identified by both keys.
private struct Shelved: StoredModel, Equatable {
    static let table = "store_books"
    static let uniqueKey = ["storeID", "bookID"]
    var storeID: UUID
    var bookID: UUID
}

private let ids = (0..<10).map { Catalog.id(900 + $0) }

private func json(_ text: String) -> Data { Data(text.utf8) }

/// Digests of every book-store table, to show an import changed nothing.
private func snapshot(_ service: PostgresService) async throws -> [String] {
    var digests: [String] = []
    for table in ["stores", "books", "authors", "reviews", "users", "store_books"] {
        digests.append(try await tableDigest(table, service))
    }
    return digests
}

@Suite struct ImportTests {
    @Test func codingKeysRemoteNamesAndSnakeCase() async throws {
        try await withBookstore { service, _ in
            let authors = try await service.import(
                RemoteAuthor.self,
                from: json(
                    """
                    [{"id": "\(ids[0])", "full_name": "Octavia Butler"}, {"id": "\(ids[1])", "full_name": "N. K. Jemisin"}]
                    """))
            #expect(authors.records == 2)
            #expect(authors.written.inserted == 2)

            let users = try await service.import(
                UserModel.self,
                from: json(
                    """
                    [{"id": "\(ids[2])", "name": "Gus", "avatar": "https://example.com/g.png", "role": "admin", "invited_by_id": null},
                     {"id": "\(ids[3])", "name": "Hal", "avatar_url": null, "role": "reader", "invited_by_id": "\(ids[2])"}]
                    """), options: ImportOptions(keys: .snakeCase, remoteNames: ["id": "uuid", "avatar": "avatarURL"]))
            #expect(users.written.inserted == 2)
            let stored = try await service.fetch(UserModel.self, sortedBy: [.ascending("name")], loading: .only("invitedBy"))
            #expect(stored.map(\.name) == ["Gus", "Hal"])
            #expect(stored[0].avatarURL == URL(string: "https://example.com/g.png"))
            #expect(stored[1].invitedBy?.name == "Gus")
            let names = try await service.fetch(AuthorModel.self, sortedBy: [.ascending("name")]).map(\.name)
            #expect(names == ["N. K. Jemisin", "Octavia Butler"])
        }
    }

    @Test func datesAndNumbersAreConverted() async throws {
        try await withBookstore { service, _ in
            try await service.update(entities: [BookModel(uuid: ids[0], title: "B", price: 1, publisher: nil, author: nil)])
            let seconds = try await service.import(
                ReviewModel.self,
                from: json(
                    """
                    [{"uuid": "\(ids[1])", "bookID": "\(ids[0])", "content": "s", "createdAt": 1700000000},
                     {"uuid": "\(ids[2])", "bookID": "\(ids[0])", "content": "t", "createdAt": "1700000060.5"}]
                    """), options: ImportOptions(dates: .secondsSince1970))
            #expect(seconds.written.inserted == 2)
            _ = try await service.import(
                ReviewModel.self,
                from: json(
                    """
                    {"uuid": "\(ids[3])", "bookID": "\(ids[0])", "content": "ms", "createdAt": 1700000000123}
                    """), options: ImportOptions(dates: .millisecondsSince1970))
            _ = try await service.import(
                ReviewModel.self,
                from: json(
                    """
                    [{"uuid": "\(ids[4])", "bookID": "\(ids[0])", "content": "iso", "createdAt": "2024-05-01T12:00:00Z"},
                     {"uuid": "\(ids[5])", "bookID": "\(ids[0])", "content": "iso-frac", "createdAt": "2024-05-01T14:00:00.250+02:00"}]
                    """))
            let reviews = try await service.fetch(ReviewModel.self, sortedBy: [.ascending("content")], loading: .none)
            let byContent = Dictionary(uniqueKeysWithValues: reviews.map { ($0.content!, $0.createdAt.timeIntervalSince1970) })
            #expect(byContent["s"] == 1_700_000_000)
            #expect(byContent["t"] == 1_700_000_060.5)
            #expect(abs(byContent["ms"]! - 1_700_000_000.123) < 1e-6)
            #expect(byContent["iso"] == 1_714_564_800)
            #expect(byContent["iso-frac"] == 1_714_564_800.25)

            _ = try await service.import(
                BookModel.self,
                from: json(
                    """
                    [{"uuid": "\(ids[0])", "title": "B", "price": "12.50", "publisher": null}]
                    """))
            #expect(try await service.fetch(BookModel.self, loading: .none)[0].price == 12.5)
        }
    }

    @Test func reimportingChangesNothingAndAChangedRecordUpdatesInPlace() async throws {
        try await withBookstore { service, _ in
            let payload = json(
                """
                [{"uuid": "\(ids[0])", "name": "Ann", "role": "critic"}, {"uuid": "\(ids[1])", "name": "Bob", "role": "reader"},
                 {"uuid": "\(ids[0])", "name": "Ann", "role": "critic"}]
                """)
            let first = try await service.import(UserModel.self, from: payload)
            #expect(first.written.inserted == 2)
            #expect(first.written.merged == 1, "the repeated record is written once")
            let before = try await snapshot(service)
            let again = try await service.import(UserModel.self, from: payload)
            #expect(again.written.inserted == 0)
            #expect(try await snapshot(service) == before)

            _ = try await service.import(UserModel.self, from: json(#"[{"uuid": "\#(ids[1])", "name": "Robert", "role": "admin"}]"#))
            let users = try await service.fetch(UserModel.self, sortedBy: [.ascending("name")], loading: .none)
            #expect(users.map(\.name) == ["Ann", "Robert"])
            #expect(users[1].role == .admin)
        }
    }

    @Test func aCompositeUniqueKeyDeduplicates() async throws {
        try await withBookstore { service, _ in
            try await service.update(entities: [
                StoreModel(
                    uuid: ids[0], brand: "S",
                    books: [
                        BookModel(uuid: ids[1], title: "A", price: 1, publisher: nil, author: nil),
                        BookModel(uuid: ids[2], title: "B", price: 1, publisher: nil, author: nil),
                    ])
            ])
            let payload = json(
                """
                [{"storeID": "\(ids[0])", "bookID": "\(ids[1])"}, {"storeID": "\(ids[0])", "bookID": "\(ids[1])"},
                 {"storeID": "\(ids[0])", "bookID": "\(ids[2])"}]
                """)
            let result = try await service.import(Shelved.self, from: payload)
            #expect(result.written.merged == 1)
            #expect(result.written.inserted == 0, "both links exist already")
            _ = try await service.import(Shelved.self, from: payload)
            #expect(try await rowCount("store_books", service) == 2)
        }
    }

    @Test func aNestedPayloadIsStoredAsAGraph() async throws {
        try await withBookstore { service, log in
            let payload = json(
                """
                [{"uuid": "\(ids[0])", "brand": "Nested", "books": [
                    {"uuid": "\(ids[1])", "title": "One", "price": 1, "author": {"uuid": "\(ids[3])", "name": "Writer"}},
                    {"uuid": "\(ids[2])", "title": "Two", "price": 2, "author": {"uuid": "\(ids[3])", "name": "Writer"},
                     "reviews": [{"uuid": "\(ids[4])", "bookID": "\(ids[2])", "content": "ok", "createdAt": "2024-01-01T00:00:00Z"}]}]}]
                """)
            _ = try await service.fetch(StoreModel.self)
            log.reset()
            let result = try await service.import(StoreModel.self, from: payload)
            #expect(result.written.inserted == 5)
            #expect(result.written.linked == 2)
            #expect(dataStatements(log).count == 7, "BEGIN, four tables, the join table, COMMIT: \(log.all)")
            let store = try await service.fetch(StoreModel.self)[0]
            #expect(store.books?.map(\.title) == ["One", "Two"])
            #expect(store.books?.map(\.author?.name) == ["Writer", "Writer"])
            #expect(store.books?[1].reviews?.map(\.content) == ["ok"])

            let before = try await snapshot(service)
            let broken = json(
                #"[{"uuid": "\#(ids[5])", "brand": "B", "books": [{"uuid": "\#(ids[6])", "price": 1}, "#
                    + #"{"uuid": "\#(ids[7])", "price": 2, "author": {"uuid": "\#(ids[8])"}}]}]"#)
            let error = await #expect(throws: StructPostgresError.self) { try await service.import(StoreModel.self, from: broken) }
            #expect(error?.message == "record [0].books[1].author.name: missing required field; nothing was imported")
            #expect(try await snapshot(service) == before)
        }
    }

    @Test(arguments: [
        (
            "[{\"uuid\": \"\(ids[0])\", \"name\": \"A\", \"role\": \"critic\"} {\"uuid\": 1}]",
            "malformed JSON: expected ',' or ']' after record 0 (byte @{\"uuid\": 1})"
        ),
        (
            "[{\"uuid\": \"\(ids[0])\", \"name\": tru}]",
            "record [0]: malformed JSON: unexpected text where a value was expected (byte @tru}); nothing was imported"
        ),
        ("[{\"uuid\": \"\(ids[0])\", \"role\": \"critic\"}]", "record [0].name: missing required field; nothing was imported"),
        (
            "[{\"uuid\": \"\(ids[0])\", \"name\": [\"A\"], \"role\": \"critic\"}]",
            "record [0].name: expected a string, found an array; nothing was imported"
        ),
        (
            "[{\"uuid\": \"\(ids[0])\", \"name\": \"A\", \"role\": \"wizard\"}]",
            "record [0].role: expected a String raw value of Role, found one that is none of its cases; nothing was imported"
        ),
        ("[{\"uuid\": null, \"name\": \"A\", \"role\": \"critic\"}]", "record [0].uuid: expected UUID, found null; nothing was imported"),
        (
            "[{\"uuid\": \"not-a-uuid\", \"name\": \"A\", \"role\": \"critic\"}]",
            "record [0].uuid: expected a UUID string, found a string that is not a UUID; nothing was imported"
        ),
    ])
    func badRecordsAreRefusedWithTheirPathAndNothingIsWritten(payload: String, message: String) async throws {
        try await withBookstore { service, _ in
            try await service.update(entities: [UserModel(uuid: ids[9], name: "Existing", avatarURL: nil, role: .reader)])
            let before = try await snapshot(service)
            let good = "{\"uuid\": \"\(ids[8])\", \"name\": \"Good\", \"role\": \"reader\"}"
            let withGood = "[\(good), " + payload.dropFirst()
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.import(UserModel.self, from: json(withGood), options: ImportOptions(batchSize: 1))
            }
            // "byte @marker" stands for the 1-based byte offset of the marker in the whole payload.
            var expected = message.replacingOccurrences(of: "record 0", with: "record 1").replacingOccurrences(of: "[0]", with: "[1]")
            if let marker = expected.range(of: #"byte @[^)]*"#, options: .regularExpression) {
                let text = String(expected[marker].dropFirst(6))
                let offset = withGood.utf8.count - withGood[withGood.range(of: text)!.lowerBound...].utf8.count
                expected.replaceSubrange(marker, with: "byte \(offset + 1)")
            }
            #expect(error?.message == expected)
            for value in ["wizard", "not-a-uuid"] { #expect(error?.description.contains(value) != true, "no payload value in errors") }
            #expect(try await snapshot(service) == before, "the database is as it was")
        }
    }

    @Test func aRecordTheDatabaseRefusesRollsBackEarlierBatches() async throws {
        try await withBookstore { service, _ in
            try await service.execute(unsafeSQL: "ALTER TABLE users ADD CONSTRAINT no_mallory CHECK (name <> 'Mallory')")
            let before = try await snapshot(service)
            let payload = json(
                #"[{"uuid": "\#(ids[0])", "name": "A", "role": "critic"}, {"uuid": "\#(ids[1])", "name": "Mallory", "role": "reader"}]"#)
            let error = await #expect(throws: StructPostgresError.self) {
                try await service.import(UserModel.self, from: payload, options: ImportOptions(batchSize: 1))
            }
            #expect(error?.code == .checkViolation)
            #expect(error?.constraint == "no_mallory")
            #expect(error?.message.hasSuffix("(records 1...1); nothing was imported") == true)
            #expect(try await snapshot(service) == before)
        }
    }

    @Test func skipAndReportStoresTheGoodRecordsAndListsTheBadOnes() async throws {
        try await withBookstore { service, _ in
            try await service.execute(unsafeSQL: "ALTER TABLE users ADD CONSTRAINT no_mallory CHECK (name <> 'Mallory')")
            let payload = json(
                """
                [{"uuid": "\(ids[0])", "name": "A", "role": "critic"},
                 {"uuid": "\(ids[1])", "role": "critic"},
                 {"uuid": "\(ids[2])", "name": "C", "role": "reader", "createdAt": 1},
                 {"uuid": "\(ids[3])", "name": "Mallory", "role": "reader"},
                 {"uuid": null, "name": "E", "role": "reader"},
                 {"uuid": "\(ids[5])", "name": "F", "role": "admin"}]
                """)
            let progress = ProgressLog()
            let result = try await service.import(
                UserModel.self, from: payload,
                options: ImportOptions(
                    onFailure: .skipAndReport, batchSize: 4, progress: { progress.record($0) }))
            #expect(result.records == 6)
            #expect(result.failures.map(\.index) == [1, 3, 4])
            #expect(result.failures.map(\.path) == ["[1].name", "[3]", "[4].uuid"])
            #expect(result.failures[1].reason.contains("no_mallory"))
            let names = try await service.fetch(UserModel.self, sortedBy: [.ascending("name")], loading: .none).map(\.name)
            #expect(names == ["A", "C", "F"])
            #expect(progress.all == [ImportProgress(done: 6, total: 6)], "four good records make the one batch, read by record 5")
        }
    }

    @Test func failuresNameTheFieldAndTheExpectedTypeNeverTheValue() async throws {
        try await withBookstore { service, _ in
            try await service.update(entities: [BookModel(uuid: ids[0], title: "B", price: 1, publisher: nil, author: nil)])
            let users = json(
                """
                [{"uuid": "\(ids[1])", "name": "G", "role": "role-s3cr3t"},
                 {"uuid": "uuid-s3cr3t", "name": "H", "role": "admin"},
                 {"uuid": "\(ids[2])", "name": "I", "role": "admin", "avatarURL": 7}]
                """)
            let result = try await service.import(UserModel.self, from: users, options: ImportOptions(onFailure: .skipAndReport))
            #expect(result.failures.map(\.path) == ["[0].role", "[1].uuid", "[2].avatarURL"])
            #expect(result.failures[0].reason == "expected a String raw value of Role, found one that is none of its cases")
            let reviews = json(
                """
                [{"uuid": "\(ids[3])", "bookID": "\(ids[0])", "content": "c", "createdAt": "date-s3cr3t"},
                 {"uuid": "\(ids[4])", "bookID": "\(ids[0])", "content": "c", "createdAt": "17000s3cr3t"}]
                """)
            let dated = try await service.import(ReviewModel.self, from: reviews, options: ImportOptions(onFailure: .skipAndReport))
            #expect(dated.failures.map(\.path) == ["[0].createdAt", "[1].createdAt"])
            let seconds = await #expect(throws: StructPostgresError.self) {
                try await service.import(ReviewModel.self, from: reviews, options: ImportOptions(dates: .secondsSince1970))
            }
            for reason in result.failures.map(\.reason) + dated.failures.map(\.reason) + [seconds?.description ?? ""] {
                #expect(!reason.contains("s3cr3t"), "\(reason)")
                #expect(reason.contains("expected"), "\(reason)")
            }
            #expect(try await rowCount("reviews", service) == 0)
        }
    }

    @Test func aFileIsReadInChunksWithProgress() async throws {
        let count = Int(ProcessInfo.processInfo.environment["STRUCTPG_IMPORT_RECORDS"] ?? "") ?? 20_000
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try writeUsers(count, to: file)
        let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        try await withBookstore { service, _ in
            let progress = ProgressLog()
            let before = peakMemoryMB()
            let start = ContinuousClock.now
            let result = try await service.import(
                UserModel.self, contentsOf: file,
                options: ImportOptions(
                    keys: .snakeCase, remoteNames: ["id": "uuid"], progress: { progress.record($0) }))
            let elapsed = ContinuousClock.now - start
            #expect(result.records == count)
            #expect(result.written.inserted == count)
            #expect(try await rowCount("users", service) == count)
            #expect(progress.all.last == ImportProgress(done: count, total: nil))
            #expect(progress.all.map(\.done) == Array(stride(from: 5_000, through: count, by: 5_000)) + (count % 5_000 == 0 ? [] : [count]))
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print(
                "imported \(count) records (\(size / 1_000_000) MB) in \(elapsed), \(Int(Double(count) / seconds)) records/s; "
                    + "peak resident memory \(Int(before)) MB before, \(Int(peakMemoryMB())) MB after")
        }
    }
}

/// A JSON array of users, written in pieces, about 200 bytes a record.
func writeUsers(_ count: Int, to file: URL) throws {
    _ = FileManager.default.createFile(atPath: file.path, contents: nil)
    let handle = try FileHandle(forWritingTo: file)
    defer { try? handle.close() }
    var chunk = "["
    for index in 0..<count {
        if index > 0 { chunk += ",\n" }
        chunk +=
            #"{"id": "\#(UUID().uuidString)", "name": "User \#(index) of a long import with a padded name", "#
            + #""avatar_url": "https://example.com/avatars/\#(index).png", "role": "reader", "invited_by_id": null}"#
        if chunk.utf8.count > 1 << 20 {
            try handle.write(contentsOf: Data(chunk.utf8))
            chunk = ""
        }
    }
    chunk += "]"
    try handle.write(contentsOf: Data(chunk.utf8))
}

final class ProgressLog: Sendable {
    private let entries = Mutex<[ImportProgress]>([])
    var all: [ImportProgress] { entries.withLock { $0 } }
    func record(_ progress: ImportProgress) { entries.withLock { $0.append(progress) } }
}
