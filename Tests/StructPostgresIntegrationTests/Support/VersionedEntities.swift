import Foundation
import StructPostgres

/// A model with a version: every write of it is conditional (``EntityProtocol/versionKey``).
struct VersionedTally: StoredModel, Equatable {
    static let table = "tallies"
    static let versionKey: String? = "version"
    static let create =
        "CREATE TABLE tallies (uuid uuid PRIMARY KEY, label text NOT NULL, value bigint NOT NULL, version integer NOT NULL DEFAULT 1)"
    var uuid: UUID
    var label: String
    var value: Int
    var version = 0
}

/// A tally without a version, in a table of its own: the last write wins.
struct PlainTally: StoredModel, Equatable {
    static let table = "plain_tallies"
    static let create = "CREATE TABLE plain_tallies (uuid uuid PRIMARY KEY, label text NOT NULL, value bigint NOT NULL)"
    var uuid: UUID
    var label: String
    var value: Int
}

/// A bookcase and its labels, both with a version: a graph of two tables, written as one unit of work (labels after
/// their bookcase, by their foreign key).
struct Bookcase: EntityConvertible, Equatable {
    static let create = [
        "CREATE TABLE bookcases (uuid uuid PRIMARY KEY, name text NOT NULL, version integer NOT NULL DEFAULT 1)",
        "CREATE TABLE bookcase_labels (uuid uuid PRIMARY KEY, bookcase_id uuid NOT NULL REFERENCES bookcases, text text NOT NULL, version integer NOT NULL DEFAULT 1)",
    ]
    var uuid: UUID
    var name: String
    var version = 0
    var labels: [BookcaseLabel] = []

    func toEntity(context: EntityContext) throws -> BookcaseEntity {
        for label in labels { try context.insert(label) }
        return BookcaseEntity(uuid: uuid, name: name, version: version)
    }
}

struct BookcaseEntity: EntityProtocol {
    static let table = "bookcases"
    static let versionKey: String? = "version"
    var uuid: UUID
    var name: String
    var version: Int

    func toModel() -> Bookcase { Bookcase(uuid: uuid, name: name, version: version) }
}

struct BookcaseLabel: StoredModel, Equatable {
    static let table = "bookcase_labels"
    static let versionKey: String? = "version"
    var uuid: UUID
    var bookcaseID: UUID
    var text: String
    var version = 0
}

/// The tallies as stored, by plain SQL (independent of the library's reads): value and version by uuid.
func storedTallies(_ service: PostgresService) async throws -> [UUID: (value: Int, version: Int)] {
    var stored: [UUID: (value: Int, version: Int)] = [:]
    for row in try await service.query("SELECT uuid, value, version FROM tallies") {
        let (uuid, value, version) = try row.decode((UUID, Int64, Int32).self)
        stored[uuid] = (Int(value), Int(version))
    }
    return stored
}
