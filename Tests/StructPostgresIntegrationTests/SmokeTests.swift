import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

@Suite struct SmokeTests {
    @Test func writesAndReadsBooks() async throws {
        try await TestPostgres.withDatabase { service in
            try await service.execute(unsafeSQL: BookSchema.create)
            let books = (0..<3).map { BookModel(uuid: UUID(), title: "Book \($0)", price: Double($0), publisher: nil) }
            let result = try await service.update(entities: books)
            #expect(result.inserted == 3)
            let read: [BookModel] = try await service.fetch(sortedBy: [.ascending("price")])
            #expect(read == books)
        }
    }
}
