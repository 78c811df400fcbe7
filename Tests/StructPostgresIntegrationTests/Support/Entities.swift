import Foundation
import StructPostgres

enum Role: String, Codable, Sendable, CaseIterable {
    case reader, critic, admin
}

enum Priority: Int, Codable, Sendable {
    case low = 1, high = 9
}

struct Address: Codable, Sendable, Equatable {
    var street: String
    var city: String
    var tags: [String]
}

/// A struct that is its own entity, holding one property of every supported type.
struct Sample: StoredModel, Equatable {
    static let table = "samples"

    var uuid: UUID
    var text: String
    var flag: Bool
    var int8Value: Int8
    var int16Value: Int16
    var int32Value: Int32
    var int64Value: Int64
    var intValue: Int
    var uint8Value: UInt8
    var uint16Value: UInt16
    var uint32Value: UInt32
    var uint64Value: UInt64
    var double: Double
    var float: Float
    var decimal: Decimal
    var date: Date
    var data: Data
    var role: Role
    var priority: Priority
    var address: Address
    var tags: [String]
    var scores: [Int]
    var optionalTags: [String?]
    var avatarURL: URL?
    var authorID: UUID?
    var note: String?
    var maybeDate: Date?
    var maybeRole: Role?
    var maybeAddress: Address?
    var maybeDouble: Double?

    static let createTable = """
        CREATE TABLE samples (
            uuid uuid PRIMARY KEY, text text NOT NULL, flag boolean NOT NULL,
            int8_value smallint NOT NULL, int16_value smallint NOT NULL, int32_value integer NOT NULL,
            int64_value bigint NOT NULL, int_value bigint NOT NULL, uint8_value smallint NOT NULL,
            uint16_value integer NOT NULL, uint32_value bigint NOT NULL, uint64_value numeric(20,0) NOT NULL,
            double double precision NOT NULL, float real NOT NULL, decimal numeric NOT NULL,
            date timestamptz NOT NULL, data bytea NOT NULL, role text NOT NULL, priority integer NOT NULL,
            address jsonb NOT NULL, tags text[] NOT NULL, scores bigint[] NOT NULL, optional_tags text[] NOT NULL,
            avatar_url text, author_id uuid, note text, maybe_date timestamptz, maybe_role text,
            maybe_address jsonb, maybe_double double precision
        )
        """

    static func make(_ seed: Int = 0) -> Sample {
        Sample(
            uuid: UUID(), text: "sample \(seed)", flag: seed % 2 == 0, int8Value: 8, int16Value: 16, int32Value: 32,
            int64Value: 64, intValue: seed, uint8Value: 200, uint16Value: 60_000, uint32Value: 4_000_000_000,
            uint64Value: 18_000_000_000_000_000_000, double: 1.5, float: 2.5, decimal: Decimal(string: "12.34")!,
            date: Date(timeIntervalSince1970: 1_700_000_000.123456), data: Data([0, 1, 2, 255]), role: .critic,
            priority: .high, address: Address(street: "Main St", city: "Oslo", tags: ["a"]), tags: ["x", "y"],
            scores: [1, 2, 3], optionalTags: ["p", nil], avatarURL: URL(string: "https://example.com/a.png"),
            authorID: UUID(), note: "n", maybeDate: Date(timeIntervalSince1970: 0), maybeRole: .admin,
            maybeAddress: nil, maybeDouble: nil)
    }
}

/// A plain book row with a model of its own, as ported Core Data code has it.
struct Novel: Equatable, Sendable {
    let uuid: UUID
    var title: String?
    var price: Double?
    var publisher: String?
}

struct NovelEntity: EntityProtocol {
    static let table = "books"
    var uuid: UUID
    var title: String?
    var price: Double
    var publisher: String?
    var authorID: UUID?

    func toModel() -> Novel { Novel(uuid: uuid, title: title, price: price, publisher: publisher) }
}

extension Novel: EntityConvertible {
    func toEntity(context: EntityContext) -> NovelEntity {
        NovelEntity(uuid: uuid, title: title, price: price ?? 0, publisher: publisher, authorID: nil)
    }
}

enum BookSchema {
    static let create = """
        CREATE TABLE books (uuid uuid PRIMARY KEY, title text, price double precision NOT NULL DEFAULT 0,
                            publisher text, author_id uuid)
        """
}

/// An entity whose identity is a composite key rather than a uuid.
struct Membership: StoredModel, Equatable {
    static let table = "memberships"
    static let uniqueKey = ["storeCode", "userName"]
    var storeCode: String
    var userName: String
    var level: Int32

    static let create = """
        CREATE TABLE memberships (store_code text NOT NULL, user_name text NOT NULL, level integer NOT NULL,
                                  PRIMARY KEY (store_code, user_name))
        """
}
