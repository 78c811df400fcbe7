import Foundation

/// The demo's fixed data; fixed uuids make a second run update rows instead of adding new ones.
enum Catalog {
    static func id(_ n: Int) -> UUID { UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n))! }

    static let users = [
        UserModel(uuid: id(1), name: "Ann", avatarURL: URL(string: "https://example.com/ann.png"), role: .critic),
        UserModel(uuid: id(2), name: "Bob", avatarURL: nil, role: .reader),
        UserModel(uuid: id(3), name: "Cleo", avatarURL: nil, role: .admin),
    ]

    static let tolkien = AuthorModel(uuid: id(11), name: "J. R. R. Tolkien")
    static let herbert = AuthorModel(uuid: id(12), name: "Frank Herbert")
    static let leGuin = AuthorModel(uuid: id(13), name: "Ursula K. Le Guin")

    static let books = [
        BookModel(uuid: id(21), title: "The Hobbit", price: 12.5, publisher: "Allen & Unwin", author: tolkien),
        BookModel(uuid: id(22), title: "Dune", price: 15, publisher: "Chilton", author: herbert),
        BookModel(uuid: id(23), title: "A Wizard of Earthsea", price: 9.99, publisher: "Parnassus", author: leGuin),
        BookModel(uuid: id(24), title: "The Dispossessed", price: 11, publisher: "Harper & Row", author: leGuin),
    ]

    static let amazon = StoreModel(uuid: id(31), brand: "Amazon")
    static let safari = StoreModel(uuid: id(32), brand: "Safari")

    static let shelves = [
        StoreBook(storeID: amazon.uuid, bookID: id(21)), StoreBook(storeID: amazon.uuid, bookID: id(22)),
        StoreBook(storeID: amazon.uuid, bookID: id(23)), StoreBook(storeID: safari.uuid, bookID: id(22)),
        StoreBook(storeID: safari.uuid, bookID: id(24)),
    ]

    static let reviews = [
        ReviewModel(uuid: id(41), bookID: id(21), content: "A classic.", createdAt: date(0), userID: id(1)),
        ReviewModel(uuid: id(42), bookID: id(21), content: "Second breakfast!", createdAt: date(1), userID: id(2)),
        ReviewModel(uuid: id(43), bookID: id(22), content: "The spice must flow.", createdAt: date(2), userID: id(1)),
        ReviewModel(uuid: id(44), bookID: id(24), content: "Ambiguous, in the best way.", createdAt: date(3), userID: id(3)),
    ]

    /// The review the demo adds, then removes, as the original app's buttons did.
    static let added = ReviewModel(uuid: id(45), bookID: id(21), content: "Read it twice.", createdAt: date(4), userID: id(3))

    static func date(_ day: Int) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + Double(day) * 86_400) }
}
