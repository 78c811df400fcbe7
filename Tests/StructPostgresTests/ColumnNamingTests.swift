import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

@Suite struct ColumnNamingTests {
    @Test(arguments: [
        ("uuid", "uuid"), ("authorID", "author_id"), ("avatarURL", "avatar_url"), ("createdAt", "created_at"),
        ("myURLProperty", "my_url_property"), ("URLString", "url_string"), ("userID2", "user_id2"),
        ("already_snake", "already_snake"), ("HTTPSProxyURL", "https_proxy_url"), ("x", "x"), ("isISBN13", "is_isbn13"),
    ])
    func snakeCaseKeepsAcronymsTogether(key: String, column: String) {
        #expect(ColumnNaming.snakeCase.column(for: key) == column)
    }

    @Test func verbatimKeepsTheKey() {
        #expect(ColumnNaming.verbatim.column(for: "authorID") == "authorID")
    }
}
