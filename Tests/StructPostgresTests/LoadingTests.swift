@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

@Suite struct LoadingTests {
    @Test func pathsNameRelationshipsLevelByLevel() {
        let loading = Loading.only("books.author", "books.reviews.user", "owner")
        #expect(loading.nested("books") != nil)
        #expect(loading.nested("owner")?.isEmpty == true)
        #expect(loading.nested("reviews") == nil)
        #expect(loading.nested("books")?.nested("author")?.isEmpty == true)
        #expect(loading.nested("books")?.nested("reviews")?.nested("user") != nil)
        #expect(loading.nested("books")?.nested("owner") == nil)
    }

    @Test func allLoadsEveryRelationshipToADepth() {
        let loading = Loading.all(depth: 2)
        #expect(loading.nested("x")?.nested("y")?.isEmpty == true)
        #expect(loading.nested("x")?.nested("y")?.nested("z") == nil)
        #expect(Loading.none.isEmpty)
        #expect(Loading.default.resolved(.threeLevels) == .all(depth: 3))
        #expect(Loading.default.resolved(.none) == .none)
        #expect(Loading.default.resolved(.default) == .all(depth: 3))
    }

    @Test func unknownNamesAreRefusedWithTheKnownOnes() {
        #expect(throws: Never.self) { try Loading.only("books").validate(relationships: ["books"], entity: "Store") }
        #expect(throws: Never.self) { try Loading.all(depth: 4).validate(relationships: [], entity: "Store") }
        let error = #expect(throws: StructPostgresError.self) {
            try Loading.only("bookz").validate(relationships: ["books", "owner"], entity: "Store")
        }
        #expect(error?.message == "cannot load 'bookz': Store has no relationship of that name; its relationships are books, owner")
    }

    @Test func theMissingKeyOfAForeignKeyViolationIsReadFromTheDetail() {
        #expect(
            foreignKeyInDetail(#"Key (author_id)=(5f0c6d0e-0000-4000-8000-000000000001) is not present in table "authors"."#)
                == "author_id=5f0c6d0e-0000-4000-8000-000000000001")
        #expect(foreignKeyInDetail(#"Key (a, b)=(1, x) is not present in table "t"."#) == "a, b=1, x")
        #expect(foreignKeyInDetail("something else") == nil)
    }
}
