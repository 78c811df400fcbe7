@testable import Bookstore
import BookstoreModels
import Foundation
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import StructPostgresTesting
import Synchronization
import Testing

private struct Note: StoredModel, Equatable {
    static let table = "notes"
    let uuid: UUID
    var text: String
}

/// Results an observation yielded, read by the test as they come.
private final class Results<Model: Sendable>: Sendable {
    private let state = Mutex<[[Model]]>([])
    private let failure = Mutex<(any Error)?>(nil)
    var all: [[Model]] { state.withLock { $0 } }
    func append(_ result: [Model]) { state.withLock { $0.append(result) } }
    func fail(_ error: any Error) { failure.withLock { $0 = error } }

    /// Waits until a result satisfies `condition`, at most `timeout`; returns it. Throws what ended the observation.
    func first(within timeout: Duration = .seconds(60), where condition: ([Model]) -> Bool) async throws -> [Model]? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = all.last(where: condition) { return found }
            if let error = failure.withLock({ $0 }) { throw error }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}

/// Consumes `sequence` in a task, recording every result, until cancelled.
private func record<S: AsyncSequence & Sendable, Model: Sendable>(_ sequence: S, into results: Results<Model>) -> Task<Void, any Error>
where S.Element == [Model] {
    Task {
        do {
            for try await result in sequence { results.append(result) }
        } catch {
            results.fail(error)
            throw error
        }
    }
}

/// `observe` yields the current result, then a fresh one after each committed change of a table it reads.
@Suite struct ObservationTests {
    private static let notes = "CREATE TABLE notes (uuid uuid PRIMARY KEY, text text NOT NULL)"

    private func withNotes(_ body: (PostgresService) async throws -> Void) async throws {
        try await withTables(Self.notes) { service, _ in
            try await service.installChangeNotifications(on: ["notes"])
            try await body(service)
        }
    }

    /// Backends of this database whose last statement was a LISTEN: the service's listening connection.
    private func listeners(_ service: PostgresService) async throws -> [Int32] {
        try await service.query(
            """
            SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN %'
            """
        ).map { try $0.decode(Int32.self) }
    }

    @Test func committedInsertUpdateAndDeleteEachYieldAFreshResult() async throws {
        try await withNotes { service in
            let results = Results<Note>()
            let observer = record(service.observe(Note.self, sortedBy: [.ascending("text")]), into: results)
            #expect(try await results.first { $0.isEmpty } != nil, "the current result first")
            let other = try await otherConnection(service)
            var note = Note(uuid: UUID(), text: "first")
            try await other.update(entities: [note])
            #expect(try await results.first { $0 == [note] } != nil, "an insert")
            note.text = "changed"
            try await other.update(entities: [note])
            #expect(try await results.first { $0 == [note] } != nil, "an update")
            let count = results.all.count
            try await other.delete(entities: [note])
            #expect(try await results.first { $0.isEmpty && results.all.count > count } != nil, "a delete")
            observer.cancel()
            try await other.close()
        }
    }

    @Test func aRolledBackChangeYieldsNothing() async throws {
        try await withNotes { service in
            let results = Results<Note>()
            let observer = record(service.observe(Note.self), into: results)
            #expect(try await results.first { $0.isEmpty } != nil)
            struct Abandon: Error {}
            await #expect(throws: Abandon.self) {
                try await service.transaction { tx in
                    try await tx.update(entities: [Note(uuid: UUID(), text: "rolled back")])
                    throw Abandon()
                }
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(results.all.count == 1, "no result after a rollback: \(results.all)")
            let kept = Note(uuid: UUID(), text: "kept")
            try await service.update(entities: [kept])
            #expect(try await results.first { $0 == [kept] } != nil)
            #expect(!results.all.contains { $0.contains { $0.text == "rolled back" } })
            observer.cancel()
        }
    }

    /// A change of a loaded relationship's table yields a fresh graph.
    @Test func aChangeOfALoadedRelationshipYieldsAFreshGraph() async throws {
        try await withBookstore { service, _ in
            try await service.installChangeNotifications(on: ["books", "reviews", "authors"])
            let book = BookModel(uuid: UUID(), title: "Dune", price: 9, publisher: nil, author: nil, reviews: [])
            try await service.update(entities: [book])
            let results = Results<BookModel>()
            let observer = record(service.observe(BookModel.self, loading: .only("reviews", "author")), into: results)
            #expect(try await results.first { $0.first?.reviews?.isEmpty == true } != nil)
            let review = ReviewModel(uuid: UUID(), bookID: book.uuid, content: "Great", createdAt: Date(), userID: nil)
            try await service.update(entities: [review])
            #expect(try await results.first { $0.first?.reviews?.map(\.uuid) == [review.uuid] } != nil)
            observer.cancel()
            // A table the fetch reads without the triggers is refused at once, by name.
            let unobserved = await #expect(throws: StructPostgresError.self) {
                for try await _ in service.observe(BookModel.self, loading: .only("reviews.user")) { break }
            }
            #expect(unobserved?.code == .invalidConfiguration)
            #expect(unobserved?.table == "users")
            #expect(unobserved?.message.contains("structpg observe add users") == true)
        }
    }

    /// A filter through a relationship reads its table too: a change there yields a fresh result, and that table
    /// without the triggers is refused by name.
    @Test func aChangeOfATableTheFilterGoesThroughYieldsAFreshResult() async throws {
        try await withBookstore { service, _ in
            let author = AuthorModel(uuid: UUID(), name: "A")
            let book = BookModel(uuid: UUID(), title: "Dune", author: author, reviews: [])
            try await service.update(entities: [book])
            try await service.installChangeNotifications(on: ["books", "reviews"])
            let unobserved = await #expect(throws: StructPostgresError.self) {
                for try await _ in service.observe(BookModel.self, where: .format("author.name == %@", "A"), loading: .none) { break }
            }
            #expect(unobserved?.table == "authors")
            try await service.installChangeNotifications(on: ["authors"])
            let byAuthor = Results<BookModel>()
            let reviewed = Results<BookModel>()
            let observers = [
                record(service.observe(BookModel.self, where: .format("author.name == %@", "A"), loading: .none), into: byAuthor),
                record(service.observe(BookModel.self, where: .format("reviews.@count > 0"), loading: .none), into: reviewed),
            ]
            #expect(try await byAuthor.first { $0.map(\.uuid) == [book.uuid] } != nil)
            #expect(try await reviewed.first { $0.isEmpty } != nil)
            try await service.update(entities: [AuthorModel(uuid: author.uuid, name: "B")])
            #expect(try await byAuthor.first { $0.isEmpty } != nil, "renaming the author leaves the filter")
            let review = ReviewModel(uuid: UUID(), bookID: book.uuid, content: "Great", createdAt: Date(), userID: nil)
            try await service.update(entities: [review])
            #expect(try await reviewed.first { $0.map(\.uuid) == [book.uuid] } != nil, "a review makes the book match")
            for observer in observers { observer.cancel() }
        }
    }

    /// 1,000 single-row commits in a burst: far fewer results, the last one the final state. The commits come from
    /// one server-side loop (as another process might make them), so that they are a burst however loaded the
    /// machine is: from the service, on two busy cores, they were once spread over a minute.
    @Test func aBurstOfCommitsIsCoalescedAndEndsOnTheFinalState() async throws {
        try await withNotes { service in
            let results = Results<Note>()
            let observer = record(service.observe(Note.self, loading: .none), into: results)
            #expect(try await results.first { $0.isEmpty } != nil)
            try await service.execute(
                unsafeSQL: """
                    DO $$ BEGIN
                        FOR i IN 1..1000 LOOP
                            INSERT INTO notes (uuid, text) VALUES (gen_random_uuid(), 'note ' || i);
                            COMMIT;
                        END LOOP;
                    END $$
                    """)
            #expect(try await service.count(Note.self) == 1_000)
            #expect(try await results.first(within: .seconds(30)) { $0.count == 1_000 } != nil, "the final state")
            print("1,000 commits gave \(results.all.count - 1) fresh results")
            #expect(results.all.count < 200, "\(results.all.count) results for 1,000 commits")
            let stored = Set(try await service.fetch(Note.self, loading: .none).map(\.uuid))
            #expect(results.all.last.map { Set($0.map(\.uuid)) } == stored)
            observer.cancel()
        }
    }

    @Test func aHundredObserversShareOneListeningConnection() async throws {
        try await withNotes { service in
            let all = (0..<100).map { _ in Results<Note>() }
            let started = ContinuousClock.now
            let observers = all.map { record(service.observe(Note.self, loading: .none), into: $0) }
            for results in all { #expect(try await results.first(within: .seconds(60)) { $0.isEmpty } != nil) }
            print("100 observers had their first result after \(ContinuousClock.now - started)")
            let note = Note(uuid: UUID(), text: "seen by all")
            try await service.update(entities: [note])
            for results in all { #expect(try await results.first { $0 == [note] } != nil) }
            #expect(try await listeners(service).count == 1, "one listening backend for 100 observers")
            #expect(service.runtime.listener.channelCount == 1)
            for observer in observers { observer.cancel() }
        }
    }

    /// The listener's backend is terminated; a change made before it reconnects still arrives.
    @Test func aLostListenerReconnectsAndMissesNothing() async throws {
        try await withNotes { service in
            let results = Results<Note>()
            let observer = record(service.observe(Note.self, loading: .none), into: results)
            #expect(try await results.first { $0.isEmpty } != nil)
            let pids = try await listeners(service)
            #expect(pids.count == 1)
            _ = try await service.query("SELECT pg_terminate_backend(\(pids[0]))")
            let during = Note(uuid: UUID(), text: "made while the listener was away")
            try await service.update(entities: [during])
            #expect(try await results.first { $0 == [during] } != nil)
            let later = Note(uuid: UUID(), text: "after")
            try await service.update(entities: [later])
            #expect(try await results.first { $0.count == 2 } != nil, "listening again")
            #expect(try await listeners(service).count == 1)
            observer.cancel()
        }
    }

    @Test func cancellingTheConsumerEndsTheObservationAndStopsListening() async throws {
        try await withNotes { service in
            let results = Results<Note>()
            let observer = record(service.observe(Note.self, loading: .none), into: results)
            #expect(try await results.first { $0.isEmpty } != nil)
            #expect(service.runtime.listener.channelCount == 1)
            observer.cancel()
            _ = try await observer.value
            for _ in 0..<200 where service.runtime.listener.channelCount > 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(service.runtime.listener.channelCount == 0, "no channel nobody observes")
            var unlistened: Int64 = 0
            for _ in 0..<200 where unlistened == 0 {
                let rows = try await service.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'UNLISTEN %' AND datname = current_database()")
                unlistened = try rows[0].decode(Int64.self)
                if unlistened == 0 { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(unlistened == 1, "the listening backend sent UNLISTEN")
        }
    }

    @Test func aTableWithoutTheTriggersIsRefusedByName() async throws {
        try await withTables(Self.notes) { service, _ in
            let error = await #expect(throws: StructPostgresError.self) {
                for try await _ in service.observe(Note.self) { break }
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.table == "notes")
            #expect(error?.message.contains("structpg observe add notes") == true)
            #expect(error?.message.contains("installChangeNotifications") == true)
        }
    }

    @Test func changesGivesTheTableTheOperationAndTheKeys() async throws {
        try await withTables(Self.notes) { service, _ in
            try await service.installChangeNotifications(on: ["notes"], keys: true)
            let notes = [Note(uuid: UUID(), text: "a"), Note(uuid: UUID(), text: "b")]
            let events = try await changes(in: service, count: 3) {
                try await service.update(entities: notes)
                try await service.update(entities: notes)  // unchanged: no statement changed a row, no notification
                try await service.delete(entities: [notes[0]])
                try await service.execute(unsafeSQL: "TRUNCATE notes")
            }
            // The order of keys within one statement is the server's: compare them sorted.
            let seen = events.map { event -> ChangeEvent in
                guard case .change(var change) = event else { return event }
                change.keys = change.keys?.sorted()
                return .change(change)
            }
            #expect(
                seen == [
                    .change(
                        TableChange(
                            table: "public.notes", operation: .insert, rowCount: 2,
                            keys: notes.map { $0.uuid.uuidString.lowercased() }.sorted())),
                    .change(
                        TableChange(table: "public.notes", operation: .delete, rowCount: 1, keys: [notes[0].uuid.uuidString.lowercased()])),
                    .change(TableChange(table: "public.notes", operation: .truncate, rowCount: nil, keys: nil)),
                ])
        }
    }
}

extension ObservationTests {
    /// What `changes(in: ["notes"])` yields while `body` runs, once it has yielded `count` events (or after a minute).
    private func changes(in service: PostgresService, count: Int, during body: () async throws -> Void) async throws -> [ChangeEvent] {
        let events = Mutex<[ChangeEvent]>([])
        let reader = Task {
            for try await event in service.changes(in: ["notes"]) { events.withLock { $0.append(event) } }
        }
        defer { reader.cancel() }
        for _ in 0..<6_000 where service.runtime.listener.channelCount == 0 { try await Task.sleep(for: .milliseconds(10)) }
        try await body()
        for _ in 0..<6_000 where events.withLock({ $0.count }) < count { try await Task.sleep(for: .milliseconds(10)) }
        return events.withLock { $0 }
    }

    /// Installed without keys (the default), a notification names the table and the operation only.
    @Test func withoutKeysAChangeNamesTableAndOperation() async throws {
        try await withNotes { service in
            let events = try await changes(in: service, count: 1) { try await service.execute(unsafeSQL: "DELETE FROM notes") }
            #expect(events == [.change(TableChange(table: "public.notes", operation: .delete, rowCount: nil, keys: nil))])
        }
    }

    /// Without keys the payload is the operation alone (the listener knows the table by the channel): no JSON is
    /// built by every write.
    @Test func withoutKeysThePayloadIsTheOperation() async throws {
        try await withNotes { service in
            let oid = try await service.query("SELECT 'notes'::regclass::oid::int8")[0].decode(Int64.self)
            let payloads = Mutex<[String]>([])
            let listener = service.runtime.listener
            let id = try await listener.subscribe([ChangeNotifications.channel(oid: oid)]) { event in
                if case .notification(_, let payload) = event { payloads.withLock { $0.append(payload) } }
            }
            defer { listener.unsubscribe(id) }
            try await service.execute(unsafeSQL: "INSERT INTO notes (uuid, text) VALUES (gen_random_uuid(), 'a'); DELETE FROM notes")
            for _ in 0..<3_000 where payloads.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(payloads.withLock { $0 } == ["INSERT", "DELETE"])
        }
    }

    /// Triggers installed by an earlier version send a JSON payload without keys: still understood.
    @Test func triggersOfAnEarlierVersionAreStillUnderstood() async throws {
        try await withNotes { service in
            try await service.execute(
                unsafeSQL: """
                    DROP TRIGGER structpg_notify ON notes;
                    CREATE TRIGGER structpg_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON notes
                        FOR EACH STATEMENT EXECUTE FUNCTION structpg_notify_change('-');
                    """)
            let events = try await changes(in: service, count: 1) { try await service.execute(unsafeSQL: "DELETE FROM notes") }
            #expect(events == [.change(TableChange(table: "public.notes", operation: .delete, rowCount: nil, keys: nil))])
        }
    }
}

/// A second service on the same database: changes from another connection, as another process makes them.
private func otherConnection(_ service: PostgresService) async throws -> OtherService {
    try await OtherService.start(service.configuration)
}

private final class OtherService: Sendable {
    let service: PostgresService
    private let task: Task<Void, any Error>

    private init(_ service: PostgresService, task: Task<Void, any Error>) {
        self.service = service
        self.task = task
    }

    static func start(_ configuration: PostgresService.Configuration) async throws -> OtherService {
        let service = try PostgresService(configuration: configuration)
        let task = Task { try await service.run() }
        return OtherService(service, task: task)
    }

    func update(entities: [Note]) async throws { try await service.update(entities: entities) }
    func delete(entities: [Note]) async throws { try await service.delete(entities: entities) }
    func close() async throws {
        task.cancel()
        _ = try? await task.value
    }
}

extension ObservationTests {
    /// A reader that falls behind its buffering loses what does not fit and reads, where it was dropped, how much.
    @Test func aReaderBehindItsBufferingReadsHowManyChangesWereDropped() async throws {
        try await withNotes { service in
            let all = Mutex<[ChangeEvent]>([])
            let everything = Task {
                for try await event in service.changes(in: ["notes"], buffering: .unbounded) { all.withLock { $0.append(event) } }
            }
            defer { everything.cancel() }
            let gate = ReleaseSignal()
            let slow = Task { () -> [ChangeEvent] in
                var events: [ChangeEvent] = []
                var iterator = service.changes(in: ["notes"], buffering: .bounded(5)).makeAsyncIterator()
                if let first = try await iterator.next() { events.append(first) }
                await gate.wait()
                while events.count < 7, let event = try await iterator.next() { events.append(event) }
                return events
            }
            try await waitForChannels(service, subscribers: 2)
            // One notification per statement (an upsert announces an insert and an update).
            for index in 0..<21 { try await service.execute(unsafeSQL: "INSERT INTO notes VALUES (gen_random_uuid(), 'n\(index)')") }
            try await waitFor { all.withLock { $0.count } >= 21 }
            try await Task.sleep(for: .milliseconds(200))
            gate.signal()
            let events = try await slow.value
            #expect(events.count == 7)
            #expect(events.prefix(6).allSatisfy { if case .change = $0 { true } else { false } }, "\(events)")
            #expect(events.last == .dropped(15), "\(events)")
        }
    }

    private func waitForChannels(_ service: PostgresService, subscribers: Int) async throws {
        try await waitFor { service.runtime.listener.channelCount > 0 && service.runtime.listener.subscriberCount >= subscribers }
        // The last subscriber's LISTEN is confirmed before `subscribe` returns, a moment after it registered.
        try await Task.sleep(for: .milliseconds(300))
    }

    private func waitFor(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }
}
