import BookstoreModels
import Foundation

/// The demo's fixed data; fixed uuids make a second run update rows instead of adding new ones.
enum Catalog {
    static func id(_ n: Int) -> UUID { UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n))! }

    static let users = [
        UserModel(uuid: id(1), name: "Ann", avatarURL: URL(string: "https://example.com/ann.png"), role: .critic, invitedByID: id(3)),
        UserModel(uuid: id(2), name: "Bob", avatarURL: nil, role: .reader, invitedByID: id(1)),
        UserModel(uuid: id(3), name: "Cleo", avatarURL: nil, role: .admin, invitedByID: id(1)),
    ]

    static let tolkien = AuthorModel(uuid: id(11), name: "J. R. R. Tolkien")
    static let herbert = AuthorModel(uuid: id(12), name: "Frank Herbert")
    static let leGuin = AuthorModel(uuid: id(13), name: "Ursula K. Le Guin")

    static let hobbit = BookModel(uuid: id(21), title: "The Hobbit", price: 12.5, publisher: "Allen & Unwin", author: tolkien)
    static let dune = BookModel(uuid: id(22), title: "Dune", price: 15, publisher: "Chilton", author: herbert)
    static let earthsea = BookModel(uuid: id(23), title: "A Wizard of Earthsea", price: 9.99, publisher: "Parnassus", author: leGuin)
    static let dispossessed = BookModel(uuid: id(24), title: "The Dispossessed", price: 11, publisher: "Harper & Row", author: leGuin)

    /// Amazon and Safari, each with its set of books; Dune is in both.
    static let stores = [
        StoreModel(uuid: id(31), brand: "Amazon", books: [hobbit, dune, earthsea]),
        StoreModel(uuid: id(32), brand: "Safari", books: [dune, dispossessed]),
    ]

    static let reviews = [
        ReviewModel(uuid: id(41), bookID: hobbit.uuid, content: "A classic.", createdAt: date(0), userID: id(1)),
        ReviewModel(uuid: id(42), bookID: hobbit.uuid, content: "Second breakfast!", createdAt: date(1), userID: id(2)),
        ReviewModel(uuid: id(43), bookID: dune.uuid, content: "The spice must flow.", createdAt: date(2), userID: id(1)),
        ReviewModel(uuid: id(44), bookID: dispossessed.uuid, content: "Ambiguous, in the best way.", createdAt: date(3), userID: id(3)),
    ]

    /// The review the demo adds, then removes, as the original app's buttons did.
    static let added = ReviewModel(uuid: id(45), bookID: hobbit.uuid, content: "Read it twice.", createdAt: date(4), userID: id(3))

    static func date(_ day: Int) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + Double(day) * 86_400) }
}
