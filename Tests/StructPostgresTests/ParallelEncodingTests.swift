import Foundation
import Testing
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver

private struct Counted: StoredModel {
    static let table = "counted"
    var uuid: UUID
    var label: String?
    var count: Int
    /// Encodes `label` through a nested container, which a row cannot store.
    var nested = false

    enum CodingKeys: String, CodingKey { case uuid, label, count }

    init(uuid: UUID, label: String?, count: Int) { (self.uuid, self.label, self.count) = (uuid, label, count) }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uuid, forKey: .uuid)
        if nested {
            var inner = container.nestedContainer(keyedBy: CodingKeys.self, forKey: .label)
            try inner.encode(label, forKey: .label)
        } else {
            try container.encode(label, forKey: .label)
        }
        try container.encode(count, forKey: .count)
    }
}

/// A batch of ``ParallelRows/minimum`` rows or more is encoded in two halves at once, its columns checked and
/// its arrays encoded at once: the result must be the one of working in order, errors included.
@Suite(.enabled(if: ParallelRows.minimum < .max, "one core: batches are only encoded in order"))
struct ParallelEncodingTests {
    private let rows = 10_000

    private func description() throws -> EntityDescription {
        let schema = TableSchema.fixture(
            "counted", [("uuid", "uuid", "uuid", "U"), ("label", "text", "text", "S"), ("count", "int2", "int2", "N")])
        return try EntityDescription(Counted.self, schema: schema)
    }

    /// Rows with null labels, and the first 50 keys given again in the second half (merged, the last one kept).
    private func batch() -> [Counted] {
        var batch = (0..<rows).map { Counted(uuid: UUID(), label: $0 % 7 == 0 ? nil : "label \($0) é", count: $0 % 30_000) }
        for index in 0..<50 { batch[6_000 + index].uuid = batch[index].uuid }
        return batch
    }

    @Test func aLargeBatchEncodedInHalvesIsTheOneEncodedInOrder() async throws {
        let (description, batch) = (try description(), batch())
        let inOrder = try await BatchColumns(batch[...], description: description, inParallel: false)
        let inHalves = try await BatchColumns(batch[...], description: description, inParallel: true)
        #expect(inHalves.merged == 50)
        #expect(inHalves.rowCount == rows - 50)
        #expect(inHalves.columns.map(\.name) == ["uuid", "label", "count"])
        for (parallel, ordered) in zip(inHalves.columns, inOrder.columns) {
            #expect(parallel.wire == ordered.wire)
            #expect(parallel.values == ordered.values, "column \(parallel.name)")
        }
        #expect(inHalves.columns[1].values[0] == .text(batch[6_000].label!), "the first row holds its key's last version")

        let sql = "SELECT 1"
        let bound = try await PreparedUpsert.bind(inHalves, sql: sql, inParallel: true)
        let boundInOrder = try await PreparedUpsert.bind(inOrder, sql: sql, inParallel: false)
        #expect(bound.bindings == boundInOrder.bindings)
        #expect(bound.types == [.uuidArray, .textArray, .int8Array])

        let keys = try await BatchColumns(batch[...], description: description, keysOnly: true, inParallel: true)
        let keysInOrder = try await BatchColumns(batch[...], description: description, keysOnly: true, inParallel: false)
        #expect(keys.columns.map(\.name) == ["uuid"])
        #expect(keys.columns[0].values.count == rows, "a delete keeps repeated keys")
        #expect(keys.columns[0].values == keysInOrder.columns[0].values)
    }

    @Test func theFirstRowThatCannotBeEncodedIsReportedWhicheverHalfItIsIn() async throws {
        let description = try description()
        var batch = batch()
        batch[9_000].nested = true
        let late = await #expect(throws: StructPostgresError.self) {
            try await BatchColumns(batch[...], description: description, inParallel: true)
        }
        #expect(late?.message.hasSuffix("(entity at index 9000)") == true)
        batch[100].nested = true
        let early = await #expect(throws: StructPostgresError.self) {
            try await BatchColumns(batch[...], description: description, inParallel: true)
        }
        #expect(early?.message.hasSuffix("(entity at index 100)") == true)
    }

    /// Columns are checked at once: a bad value in an earlier column is reported before one in a later column,
    /// whichever row either is in.
    @Test func theFirstColumnWithABadValueIsReported() async throws {
        let description = try description()
        var batch = batch()
        batch[10].count = 40_000  // out of int2's range
        batch[9_500].label = "nul \0 byte"
        let error = await #expect(throws: StructPostgresError.self) {
            try await BatchColumns(batch[...], description: description, inParallel: true)
        }
        #expect(error?.property == "label")
        let inOrder = await #expect(throws: StructPostgresError.self) {
            try await BatchColumns(batch[...], description: description, inParallel: false)
        }
        #expect(error?.message == inOrder?.message)
    }

    /// Each part runs in a child task of the caller: a cancelled caller's parts see the cancellation (an encoding
    /// run ahead of a write that failed stops), and the caller suspends while it waits instead of blocking a thread.
    @Test func thePartsRunInChildTasksThatInheritTheCallersCancellation() async throws {
        let outcome = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let halves = try await ParallelRows.halves(0..<2) { _ in Task.isCancelled }
            let columns = try await ParallelRows.map(3) { _ in Task.isCancelled }
            return [halves.0, halves.1] + columns
        }
        #expect(try await outcome.value == [true, true, true, true, true])
    }

    @Test func theFirstErrorInOrderIsThrown() async throws {
        struct Failure: Error, Equatable { let index: Int }
        await #expect(throws: Failure(index: 1)) {
            _ = try await ParallelRows.map(4) { index in
                if index % 2 == 1 { throw Failure(index: index) }; return index
            }
        }
        await #expect(throws: Failure(index: 0)) {
            _ = try await ParallelRows.halves(0..<2) { rows in throw Failure(index: rows.lowerBound) }
        }
    }
}
