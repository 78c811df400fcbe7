import Foundation
import StructPostgres
import Synchronization
import Testing

/// Paging through a table while eight tasks insert and delete rows: no row comes twice, and every row present
/// from the first page to the last comes exactly once, in the order of the sort.
@Suite struct PageConcurrencyTests {
    @Test(arguments: [
        [SortKey.ascending("rank")],
        [SortKey.ascending("bucket"), SortKey.descending("rank")],
        [SortKey("title", ascending: false, nulls: .last), SortKey.ascending("price")],
    ])
    func pagingWhileEightTasksInsertAndDelete(sort: [SortKey]) async throws {
        try await withTables(Listing.create, pool: PoolOptions(maxConnections: 10)) { service, _ in
            let stable = Listing.random(600, seed: 11)
            try await service.update(entities: stable)
            let stableIDs = Set(stable.map(\.uuid))
            let churn = Churn()
            let seen = try await withThrowingTaskGroup(of: [Listing].self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        var random = SplitMix64(seed: UInt64(writer) + 100)
                        var mine: [Listing] = []
                        while churn.paging.withLock({ $0 }) {
                            let fresh = Listing.random(Int.random(in: 1...5, using: &random), seed: random.next())
                            try await service.update(entities: fresh)
                            mine += fresh
                            if mine.count > 10 {
                                let gone = Array(mine.prefix(Int.random(in: 1...5, using: &random)))
                                mine.removeFirst(gone.count)
                                try await service.delete(entities: gone)
                            }
                            churn.writes.withLock { $0 += 1 }
                        }
                        return []
                    }
                }
                var items: [Listing] = []
                var cursor: PageCursor?
                do {
                    repeat {
                        let page = try await service.fetch(Listing.self, sortedBy: sort, pageSize: 13, after: cursor)
                        items += page.items
                        cursor = page.next
                        try await Task.sleep(for: .milliseconds(5))
                    } while cursor != nil
                } catch {
                    churn.paging.withLock { $0 = false }
                    throw error
                }
                churn.paging.withLock { $0 = false }
                for try await _ in group {}
                return items
            }
            #expect(churn.writes.withLock { $0 } > 8, "the writers wrote while the pages were read")
            #expect(Set(seen.map(\.uuid)).count == seen.count, "a row came twice")
            let seenStable = seen.filter { stableIDs.contains($0.uuid) }
            #expect(seenStable.count == stable.count, "\(stable.count - seenStable.count) rows present throughout were missed")
            // The stable rows come in the order one fetch gives them.
            let tieBreak = SortKey("uuid", ascending: sort.last!.ascending)
            let ordered = try await service.fetch(Listing.self, where: .in(\.uuid, Array(stableIDs)), sortedBy: sort + [tieBreak])
            #expect(seenStable.map(\.uuid) == ordered.map(\.uuid))
        }
    }
}

/// Whether the pages are still being read, and how many writes the writers made meanwhile.
private final class Churn: Sendable {
    let paging = Mutex(true)
    let writes = Mutex(0)
}
