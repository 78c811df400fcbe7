import Foundation
import StructPostgres

/// W6's graph, as the relationships issue ported it: stores own sets of books (through `store_books`),
/// books have an author and reviews that point back at them.
struct GraphStore: Sendable, Equatable {
    let uuid: UUID
    var brand: String
    var books: [GraphBook]?
}

struct GraphBook: Sendable, Equatable {
    let uuid: UUID
    var title: String
    var price: Double
    var publisher: String
    var author: BenchAuthor?
    var reviews: [BenchReview]?
}

struct GraphStoreEntity: EntityProtocol {
    static let table = "stores"
    static let relationships: [Relationship<Self>] = [.toMany("books", \.$books, through: "store_books", orderedBy: [.ascending("title")])]
    var uuid: UUID
    var brand: String
    @Related var books: [GraphBookEntity]

    func toModel() -> GraphStore {
        GraphStore(uuid: uuid, brand: brand, books: $books.loaded?.map { $0.toModel() })
    }
}

extension GraphStore: EntityConvertible {
    func toEntity(context: EntityContext) throws -> GraphStoreEntity {
        var store = GraphStoreEntity(uuid: uuid, brand: brand)
        if let books { store.books = try books.map { try context.insert($0) } }
        return store
    }
}

struct GraphBookEntity: EntityProtocol {
    static let table = "books"
    static let relationships: [Relationship<Self>] = [
        .toOne("author", \.$author),
        .toMany("reviews", \.$reviews, orderedBy: [.ascending("createdAt")]),
    ]
    var uuid: UUID
    var title: String
    var price: Double
    var publisher: String
    var authorID: UUID?
    @Related var author: BenchAuthor?
    @Related var reviews: [BenchReview]

    func toModel() -> GraphBook {
        GraphBook(uuid: uuid, title: title, price: price, publisher: publisher, author: author, reviews: $reviews.loaded)
    }
}

extension GraphBook: EntityConvertible {
    func toEntity(context: EntityContext) throws -> GraphBookEntity {
        for review in reviews ?? [] { try context.insert(review) }
        return GraphBookEntity(
            uuid: uuid, title: title, price: price, publisher: publisher, authorID: try author.map { try context.insert($0).uuid })
    }
}

extension BenchData {
    /// `stores` stores of `booksPerStore` distinct books each, `reviewsPerBook` reviews per book, `authors` shared authors.
    static func graph(stores: Int, booksPerStore: Int, reviewsPerBook: Int, authors: Int) -> [GraphStore] {
        let authorList = Self.authors(authors)
        return (0..<stores).map { store in
            let books = (0..<booksPerStore).map { slot -> GraphBook in
                let index = store * booksPerStore + slot
                let flat = book(index, authors: authors, version: 0)
                let reviews = (0..<reviewsPerBook).map { number -> BenchReview in
                    var review = Self.review(index * reviewsPerBook + number, books: Int.max)
                    review.bookID = flat.uuid
                    return review
                }
                return GraphBook(
                    uuid: flat.uuid, title: flat.title, price: flat.price, publisher: flat.publisher,
                    author: authorList[index % authors], reviews: reviews.sorted { $0.createdAt < $1.createdAt })
            }
            return GraphStore(uuid: uuid(4, store), brand: "Store \(store)", books: books.sorted { $0.title < $1.title })
        }
    }

    /// What the graph holds, to compare what each contender read back: stores, books, reviews, distinct authors.
    static func census(_ stores: [GraphStore]) -> [Int] {
        let books = stores.flatMap { $0.books ?? [] }
        return [
            stores.count, books.count, books.reduce(0) { $0 + ($1.reviews?.count ?? 0) },
            Set(books.compactMap { $0.author?.uuid }).count,
        ]
    }
}
