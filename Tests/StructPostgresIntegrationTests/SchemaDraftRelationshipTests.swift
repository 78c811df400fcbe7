import Foundation
import StructPostgres
import Testing

private struct Company: StoredModel {
    static let table = "companies"
    static let relationships: [Relationship<Self>] = [.toMany("employees", \.$employees, backReference: "companyID")]
    var uuid: UUID
    var name: String
    @Related var employees: [Employee]
}

private struct Employee: StoredModel {
    static let table = "employees"
    static let relationships: [Relationship<Self>] = [.toOne("company", \.$company)]
    var uuid: UUID
    var name: String
    var companyID: UUID?
    @Related var company: Company?
}

/// Two tables that reference each other: an employee's department, a department's manager.
private struct Emp: StoredModel {
    static let table = "emps"
    static let relationships: [Relationship<Self>] = [.toOne("dept", \.$dept)]
    var uuid: UUID
    var deptID: UUID?
    @Related var dept: Dept?
}

private struct Dept: StoredModel {
    static let table = "depts"
    static let relationships: [Relationship<Self>] = [.toOne("manager", \.$manager)]
    var uuid: UUID
    var managerID: UUID?
    @Related var manager: Emp?
}

/// Friends of friends, through a join table whose two columns nobody named.
private struct Person: StoredModel {
    static let table = "people"
    static let relationships: [Relationship<Self>] = [.toMany("friends", \.$friends, through: "friendships")]
    var uuid: UUID
    @Related var friends: [Person]
}

private struct Post: StoredModel {
    static let table = "posts"
    var uuid: UUID
    var title: String
}

/// The same post, a version later: a to-one to a table the same draft creates.
private struct PostWithWriter: StoredModel {
    static let table = "posts"
    static let relationships: [Relationship<Self>] = [.toOne("writer", \.$writer)]
    var uuid: UUID
    var title: String
    var writerID: UUID?
    @Related var writer: Writer?
}

private struct Writer: StoredModel {
    static let table = "writers"
    var uuid: UUID
    var name: String
}

/// The drafts of relationships: each foreign key once, cycles, self references, keys added to existing tables.
@Suite struct SchemaDraftRelationshipTests {
    @Test func aToOneAndItsBackReferenceDraftOneForeignKey() async throws {
        try await withTables { service, _ in
            let models: [any EntityConvertible.Type] = [Company.self, Employee.self]
            let text = try await DraftHarness(service).draftAndApply(models)
            #expect(text.components(separatedBy: "REFERENCES \"companies\"").count == 2, "\(text)")
            let report = try await service.schemaReport(for: models)
            #expect(report.matches, "\(report)")
            #expect(try await service.draftMigration(for: models).isEmpty)
            let acme = Company(uuid: UUID(), name: "Acme")
            try await service.update(entities: [acme])
            try await service.update(entities: [Employee(uuid: UUID(), name: "Ada", companyID: acme.uuid)])
            let loaded = try await service.fetch(Company.self, loading: .all(depth: 1))
            #expect(loaded.first?.employees.map(\.name) == ["Ada"])
            let employees = try await service.fetch(Employee.self, loading: .all(depth: 1))
            #expect(employees.first?.company?.name == "Acme")
        }
    }

    @Test func twoTablesThatReferenceEachOtherAreCreatedThenLinked() async throws {
        try await withTables { service, _ in
            let models: [any EntityConvertible.Type] = [Emp.self, Dept.self]
            let text = try await DraftHarness(service).draftAndApply(models)
            #expect(text.contains("ALTER TABLE"), "one of the two keys waits for both tables: \(text)")
            let report = try await service.schemaReport(for: models)
            #expect(report.matches, "\(report)")
            #expect(try await service.draftMigration(for: models).isEmpty)
            let (emp, dept) = (UUID(), UUID())
            try await service.update(entities: [Emp(uuid: emp, deptID: nil)])
            try await service.update(entities: [Dept(uuid: dept, managerID: emp)])
            try await service.update(entities: [Emp(uuid: emp, deptID: dept)])
            #expect(try await service.fetch(Emp.self, loading: .all(depth: 2)).first?.dept?.manager?.uuid == emp)
        }
    }

    @Test func aSelfJoinTableWithoutColumnNamesIsAReviewLine() async throws {
        try await withTables { service, _ in
            let draft = try await service.draftMigration(for: [Person.self])
            #expect(
                draft.reviews.contains { $0.contains("both columns of join table friendships would be named people_id") }, "\(draft.up)")
            #expect(!draft.files.joined().contains("CREATE TABLE \"friendships\""))
            try await DraftHarness(service).apply(draft)
            #expect(try await rowCount("people", service) == 0, "the table itself was created")
        }
    }

    @Test func aModelListedTwiceIsDraftedOnce() async throws {
        try await withTables { service, _ in
            let draft = try await service.draftMigration(for: [Writer.self, Writer.self])
            #expect(draft.up.count == 1, "\(draft.up)")
            try await DraftHarness(service).apply(draft)
            #expect(try await service.schemaReport(for: [Writer.self]).matches)
        }
    }

    @Test func aToOneAddedToAnExistingTableGetsItsForeignKeyWhenTheDraftCreatesItsTarget() async throws {
        try await withTables { service, _ in
            let harness = DraftHarness(service)
            try await harness.draftAndApply([Post.self])
            let post = Post(uuid: UUID(), title: "Hello")
            try await service.update(entities: [post])
            let draft = try await service.draftMigration(for: [PostWithWriter.self, Writer.self])
            #expect(draft.reviews.isEmpty, "\(draft.up)")
            #expect(draft.up.last == #"ALTER TABLE "posts" ADD FOREIGN KEY ("writer_id") REFERENCES "writers" ("uuid");"#, "\(draft.up)")
            try await harness.apply(draft)
            #expect(try await service.schemaReport(for: [PostWithWriter.self, Writer.self]).matches)
            let read = try await service.find(PostWithWriter.self, id: post.uuid)
            #expect(read?.title == "Hello" && read?.writerID == nil, "the existing row is intact")
        }
    }
}
