import FluentKit
import Foundation

/// The book-store schema as Fluent models, declared the way Fluent's documentation teaches.
final class FluentAuthor: Model, @unchecked Sendable {
    static let schema = "authors"
    @ID(custom: "uuid", generatedBy: .user) var id: UUID?
    @Field(key: "name") var name: String
    init() {}
    init(_ author: BenchAuthor) {
        self.id = author.uuid
        self.name = author.name
    }
}

final class FluentBook: Model, @unchecked Sendable {
    static let schema = "books"
    @ID(custom: "uuid", generatedBy: .user) var id: UUID?
    @Field(key: "title") var title: String
    @Field(key: "price") var price: Double
    @Field(key: "publisher") var publisher: String
    @OptionalParent(key: "author_id") var author: FluentAuthor?
    @Children(for: \.$book) var reviews: [FluentReview]
    init() {}

    func assign(_ book: BenchBook) {
        id = book.uuid
        title = book.title
        price = book.price
        publisher = book.publisher
        $author.id = book.authorID
    }

    var bench: BenchBook {
        BenchBook(uuid: id!, title: title, price: price, publisher: publisher, authorID: $author.id!)
    }
}

final class FluentReview: Model, @unchecked Sendable {
    static let schema = "reviews"
    @ID(custom: "uuid", generatedBy: .user) var id: UUID?
    @Parent(key: "book_id") var book: FluentBook
    @Field(key: "content") var content: String
    @Field(key: "created_at") var createdAt: Date
    init() {}
    init(_ review: BenchReview) {
        self.id = review.uuid
        self.$book.id = review.bookID
        self.content = review.content
        self.createdAt = review.createdAt
    }

    var bench: BenchReview { BenchReview(uuid: id!, bookID: $book.id, content: content, createdAt: createdAt) }
}

final class FluentStore: Model, @unchecked Sendable {
    static let schema = "stores"
    @ID(custom: "uuid", generatedBy: .user) var id: UUID?
    @Field(key: "brand") var brand: String
    @Siblings(through: FluentStoreBook.self, from: \.$id.$store, to: \.$id.$book) var books: [FluentBook]
    init() {}
    init(uuid: UUID, brand: String) {
        self.id = uuid
        self.brand = brand
    }
}

/// `store_books` has no id column: its key is (store_id, book_id).
final class FluentStoreBook: Model, @unchecked Sendable {
    static let schema = "store_books"

    final class IDValue: Fields, Hashable, @unchecked Sendable {
        @Parent(key: "store_id") var store: FluentStore
        @Parent(key: "book_id") var book: FluentBook
        init() {}
        init(store: UUID, book: UUID) {
            self.$store.id = store
            self.$book.id = book
        }
        static func == (lhs: IDValue, rhs: IDValue) -> Bool { lhs.$store.id == rhs.$store.id && lhs.$book.id == rhs.$book.id }
        func hash(into hasher: inout Hasher) {
            hasher.combine($store.id)
            hasher.combine($book.id)
        }
    }

    @CompositeID() var id: IDValue?
    init() {}
    init(store: UUID, book: UUID) { self.id = IDValue(store: store, book: book) }
}
