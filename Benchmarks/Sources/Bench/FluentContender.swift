import FluentKit
import FluentPostgresDriver
import Foundation
import Logging
import NIOCore
import NIOPosix
import StructPostgres
import Synchronization

/// Fluent, used the way its documentation teaches: fetch-or-create by id then save, in a transaction;
/// batch `create` where it applies; eager loading with `with`.
struct FluentContender {
    let databases: Databases
    let logger = Logger(label: "bench.fluent")

    /// A pool of `connections` connections over the shared event loops.
    static func start(_ settings: ConnectionSettings, connections: Int) -> FluentContender {
        let databases = Databases(threadPool: NIOThreadPool.singleton, on: MultiThreadedEventLoopGroup.singleton)
        let loops = MultiThreadedEventLoopGroup.singleton.makeIterator().reduce(0) { count, _ in count + 1 }
        let configuration = SQLPostgresConfiguration(
            hostname: settings.host, port: settings.port, username: settings.user, password: settings.password,
            database: settings.database, tls: .disable)
        databases.use(.postgres(configuration: configuration, maxConnectionsPerEventLoop: max(1, connections / loops)), as: .psql)
        return FluentContender(databases: databases)
    }

    func shutdown() async { await databases.shutdownAsync() }

    /// A database handle on the next event loop (each loop has its own share of the pool).
    var db: any Database { databases.database(logger: logger, on: databases.eventLoopGroup.next())! }

    /// Fetch-or-create each book by uuid, then save it; all in one transaction.
    func upsert(_ books: [BenchBook]) async throws {
        try await db.transaction { tx in
            for book in books { try await Self.fetchOrCreate(book, on: tx) }
        }
    }

    func upsertOne(_ book: BenchBook) async throws {
        try await db.transaction { tx in try await Self.fetchOrCreate(book, on: tx) }
    }

    private static func fetchOrCreate(_ book: BenchBook, on database: any Database) async throws {
        let model = try await FluentBook.find(book.uuid, on: database) ?? FluentBook()
        model.assign(book)
        try await model.save(on: database)
    }

    func reviews(of book: UUID) async throws -> [BenchReview] {
        try await FluentReview.query(on: db).filter(\.$book.$id == book).sort(\.$createdAt).all().map(\.bench)
    }

    func allBooks() async throws -> [BenchBook] {
        try await FluentBook.query(on: db).all().map(\.bench)
    }

    func delete(_ ids: [UUID]) async throws {
        let database = db
        for start in stride(from: 0, to: ids.count, by: 30_000) {
            try await FluentBook.query(on: database).filter(\.$id ~~ Array(ids[start..<min(ids.count, start + 30_000)])).delete()
        }
    }

    /// Creates the graph: each table (the join table's pivot models too) with batch `create`, in one transaction.
    func writeGraph(_ stores: [GraphStore]) async throws {
        let books = stores.flatMap { $0.books ?? [] }
        var authorsByID: [UUID: BenchAuthor] = [:]
        for book in books { if let author = book.author { authorsByID[author.uuid] = author } }
        let authors = Array(authorsByID.values)
        try await db.transaction { tx in
            try await authors.map(FluentAuthor.init).create(on: tx)
            let bookModels = books.map { book -> FluentBook in
                let model = FluentBook()
                model.assign(
                    BenchBook(uuid: book.uuid, title: book.title, price: book.price, publisher: book.publisher, authorID: book.author!.uuid)
                )
                return model
            }
            try await bookModels.create(on: tx)
            let storeModels = stores.map { FluentStore(uuid: $0.uuid, brand: $0.brand) }
            try await storeModels.create(on: tx)
            let reviews = books.flatMap { $0.reviews ?? [] }.map(FluentReview.init)
            for start in stride(from: 0, to: reviews.count, by: 10_000) {
                try await Array(reviews[start..<min(reviews.count, start + 10_000)]).create(on: tx)
            }
            let links = stores.flatMap { store in (store.books ?? []).map { FluentStoreBook(store: store.uuid, book: $0.uuid) } }
            try await links.create(on: tx)
        }
    }

    /// Every book as a model, in chunks, the way Fluent's documentation reads results too large to hold;
    /// returns how many and the sum of their prices.
    func streamBooks() async throws -> (Int, Double) {
        let tally = ChunkTally()
        try await FluentBook.query(on: db).chunk(max: 1_000) { chunk in
            var (count, sum) = (0, 0.0)
            var failure: (any Error)?
            for result in chunk {
                switch result {
                case .success(let book): (count, sum) = (count + 1, sum + book.price)
                case .failure(let error): failure = failure ?? error
                }
            }
            tally.add(count, sum, failure)
        }
        return try tally.total()
    }

    func readGraph() async throws -> [GraphStore] {
        let stores = try await FluentStore.query(on: db)
            .with(\.$books) { $0.with(\.$author).with(\.$reviews) }
            .all()
        return stores.map { store in
            GraphStore(
                uuid: store.id!, brand: store.brand,
                books: store.books.sorted { $0.title < $1.title }.map { book in
                    GraphBook(
                        uuid: book.id!, title: book.title, price: book.price, publisher: book.publisher,
                        author: book.author.map { BenchAuthor(uuid: $0.id!, name: $0.name) },
                        reviews: book.reviews.map(\.bench).sorted { $0.createdAt < $1.createdAt })
                })
        }
    }
}

/// What the chunks of a Fluent read added up to, filled on the event loop.
private final class ChunkTally: Sendable {
    private let state = Mutex<(count: Int, sum: Double, failure: (any Error)?)>((0, 0, nil))

    func add(_ count: Int, _ sum: Double, _ failure: (any Error)?) {
        state.withLock { $0 = ($0.count + count, $0.sum + sum, $0.failure ?? failure) }
    }

    func total() throws -> (Int, Double) {
        let (count, sum, failure) = state.withLock { $0 }
        if let failure { throw failure }
        return (count, sum)
    }
}
