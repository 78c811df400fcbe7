import Foundation
import StructPostgres
import Testing

/// Every kind of figure's column, with NULLs in each: huge integers, decimals of many places, doubles of every size.
struct Sheet: StoredModel, Equatable {
    static let table = "tallies"
    var uuid: UUID
    var shelf: String?
    var tier: Int32?
    var small: Int16?
    var whole: Int64?
    var amount: Decimal?
    var ratio: Double?
    var label: String?
    var at: Date

    static let create = """
        CREATE TABLE tallies (uuid uuid PRIMARY KEY, shelf text COLLATE "C", tier integer, small smallint, whole bigint, amount numeric,
                              ratio double precision, label text COLLATE "C", at timestamptz NOT NULL)
        """

    static func random(_ count: Int, seed: UInt64) -> [Sheet] {
        var random = SplitMix64(seed: seed)
        func maybe<T>(_ make: () -> T) -> T? { Int.random(in: 0..<5, using: &random) == 0 ? nil : make() }
        return (0..<count).map { _ in
            let whole: Int64? = maybe {
                switch Int.random(in: 0..<10, using: &random) {
                case 0: Int64.max - Int64.random(in: 0..<1_000, using: &random)
                case 1: Int64.min + Int64.random(in: 0..<1_000, using: &random)
                default: Int64.random(in: -1_000...1_000, using: &random)
                }
            }
            let amount: Decimal? = maybe {
                let digits = (0..<20).map { _ in String(Int.random(in: 0...9, using: &random)) }.joined()
                return Decimal(
                    string: "\(Bool.random(using: &random) ? "-" : "")\(Int.random(in: 0...999_999_999_999, using: &random)).\(digits)")!
            }
            let ratio: Double? = maybe {
                switch Int.random(in: 0..<8, using: &random) {
                case 0: Double.random(in: -1...1, using: &random) * 1e200
                case 1: Double.random(in: -1...1, using: &random) * 1e-300
                case 2: [0, -0.0].randomElement(using: &random)!
                default: Double.random(in: -1e6...1e6, using: &random)
                }
            }
            let micros = Int64.random(in: 0...1_000_000_000_000_000, using: &random)
            return Sheet(
                uuid: UUID(), shelf: maybe { ["a", "b", "c"].randomElement(using: &random)! },
                tier: maybe { Int32.random(in: 0..<3, using: &random) },
                small: maybe { Int16.random(in: -100...100, using: &random) }, whole: whole, amount: amount, ratio: ratio,
                label: maybe { ["apple", "Apple", "b", "ba", "zeta", "Zeta", "\u{E9}t\u{E9}", "a b"].randomElement(using: &random)! },
                at: Date(timeIntervalSince1970: 946_684_800 + Double(micros) / 1_000_000))
        }
    }
}

/// One question, spelt every way a filter can be, with what it means in Swift.
private struct Question: @unchecked Sendable {
    let name: String
    let spellings: [EntityFilter<Sheet>?]
}

/// Every figure and every grouping equals the same computation in Swift over the rows a fetch with the same filter
/// returns, for every spelling of the filter, over random rows with NULLs, empty sets, integers near `Int64`'s
/// limits, decimals of twenty places and doubles from 1e-300 to 1e200; pages tie-broken and NULLs placed as
/// PostgreSQL orders them.
@Suite struct AggregateDifferentialTests {
    private static let questions: [Question] = {
        let (low, high): (Int64, Int64) = (-1_000, 1_000)
        return [
            Question(name: "every row", spellings: [nil, .constant(true), .format("TRUEPREDICATE")]),
            Question(
                name: "small > 10",
                spellings: [
                    .format("small > %@", 10), \Sheet.small > Int16(10), .predicate(#Predicate<Sheet> { $0.small! > 10 }),
                    .compare("small", .greater, 10), EntityFilter(Filter.compare("small", .greater, 10)),
                ]),
            Question(
                name: "shelf a with a ratio",
                spellings: [
                    .format("shelf == %@ AND ratio != nil", "a"), \Sheet.shelf == "a" && \Sheet.ratio != nil,
                    .predicate(#Predicate<Sheet> { $0.shelf == "a" && $0.ratio != nil }), .equal("shelf", "a") && .isNotNull("ratio"),
                    EntityFilter(Filter.equal("shelf", "a") && Filter.isNotNull("ratio")),
                ]),
            Question(
                name: "no row",
                spellings: [
                    .format("shelf == %@", "none"), \Sheet.shelf == "none", .predicate(#Predicate<Sheet> { $0.shelf == "none" }),
                    .equal("shelf", "none"),
                    EntityFilter(Filter.equal("shelf", "none")),
                ]),
            Question(
                name: "whole near zero or label from a",
                spellings: [
                    .format("whole BETWEEN {-1000, 1000} OR label BEGINSWITH 'a'"),
                    .between(\Sheet.whole, Int64(-1_000), Int64(1_000)) || .beginsWith(\.label, "a"),
                    .predicate(
                        #Predicate<Sheet> {
                            ($0.whole != nil && $0.whole! >= low && $0.whole! <= high) || ($0.label?.starts(with: "a") ?? false)
                        }),
                    .between("whole", -1_000, 1_000) || .compare("label", .beginsWith, "a"),
                    EntityFilter(Filter.between("whole", -1_000, 1_000) || Filter.compare("label", .beginsWith, "a")),
                ]),
        ]
    }()

    @Test(arguments: [1, 2, 3] as [UInt64])
    func everyFigureAndGroupEqualsSwiftsOverTheFetchedRows(seed: UInt64) async throws {
        try await withTables(Sheet.create) { service, _ in
            try await service.update(entities: Sheet.random(300, seed: seed))
            var overflowed: Set<Bool> = []
            for question in Self.questions {
                var answers: [[UUID]] = []
                for filter in question.spellings {
                    let rows = try await service.fetch(Sheet.self, where: filter)
                    answers.append(rows.map(\.uuid).sorted { $0.uuidString < $1.uuidString })
                    overflowed.insert(try await Self.figures(service, filter, rows, question.name))
                    try await Self.groups(service, filter, rows, question.name)
                    try await Self.pages(service, filter, rows, question.name)
                }
                #expect(
                    Set(answers.map { $0.map(\.uuidString).joined() }).count == 1, "\(question.name): the spellings return the same rows")
            }
            #expect(overflowed == [true, false], "some sums of integers fit Int, others do not")
        }
    }

    /// Every figure of the rows `filter` keeps; returns whether their integer sum was past `Int`'s range.
    private static func figures(_ service: PostgresService, _ filter: EntityFilter<Sheet>?, _ rows: [Sheet], _ name: String) async throws
        -> Bool
    {
        let (count, ratios, smallSum, amountSum, ratioSum, smallAverage, wholeAverage, amountAverage, ratioAverage) =
            try await service.aggregate(
                of: Sheet.self, .count, .count(\.ratio), .sum(\.small), .sum(\.amount), .sum(\.ratio), .average(\.small), .average(\.whole),
                .average(\.amount), .average(\.ratio), where: filter)
        let smalls = rows.compactMap(\.small).map(Int.init)
        let wholes = rows.compactMap(\.whole)
        let amounts = rows.compactMap(\.amount)
        let doubles = rows.compactMap(\.ratio)
        #expect(count == rows.count, "\(name)")
        #expect(ratios == doubles.count, "\(name)")
        #expect(smallSum == (smalls.isEmpty ? nil : smalls.reduce(0, +)), "\(name)")
        #expect(amountSum == (amounts.isEmpty ? nil : amounts.reduce(0, +)), "\(name): a Decimal sum is exact")
        expectClose(ratioSum, doubles.isEmpty ? nil : doubles.reduce(0, +), scale: doubles.map(abs).reduce(0, +), name)
        #expect(smallAverage == (smalls.isEmpty ? nil : Double(smalls.reduce(0, +)) / Double(smalls.count)), "\(name)")
        let exactWholes = wholes.reduce(Int128(0)) { $0 + Int128($1) }
        expectClose(wholeAverage, wholes.isEmpty ? nil : Double(exactWholes) / Double(wholes.count), scale: abs(wholeAverage ?? 0), name)
        if let amountAverage {
            let expected = amounts.reduce(0, +) / Decimal(amounts.count)
            #expect(abs(amountAverage - expected) <= Decimal(string: "1e-19")!, "\(name): \(amountAverage) against \(expected)")
        } else {
            #expect(amounts.isEmpty, "\(name)")
        }
        expectClose(
            ratioAverage, doubles.isEmpty ? nil : doubles.reduce(0, +) / Double(doubles.count),
            scale: doubles.map(abs).reduce(0, +) / Double(max(doubles.count, 1)), name)

        // A sum of integers past Int's range is refused by name, never wrapped.
        if wholes.isEmpty {
            #expect(try await service.sum(\Sheet.whole, of: Sheet.self, where: filter) == nil)
        } else if let exact = Int(exactly: exactWholes) {
            #expect(try await service.sum(\Sheet.whole, of: Sheet.self, where: filter) == exact, "\(name)")
        } else {
            let error = await #expect(throws: StructPostgresError.self, "\(name): \(exactWholes)") {
                try await service.sum(\Sheet.whole, of: Sheet.self, where: filter)
            }
            #expect(error?.code == .invalidValue && error?.message.contains("which Int cannot hold exactly") == true)
        }

        let (
            leastSmall, mostSmall, leastWhole, mostWhole, leastAmount, mostAmount, leastRatio, mostRatio, leastLabel, mostLabel, first, last
        ) =
            try await service.aggregate(
                of: Sheet.self, .min(\.small), .max(\.small), .min(\.whole), .max(\.whole), .min(\.amount), .max(\.amount), .min(\.ratio),
                .max(\.ratio),
                .min(\.label), .max(\.label), .min(\.at), .max(\.at), where: filter)
        #expect(leastSmall == rows.compactMap(\.small).min() && mostSmall == rows.compactMap(\.small).max(), "\(name)")
        #expect(leastWhole == wholes.min() && mostWhole == wholes.max(), "\(name)")
        #expect(leastAmount == amounts.min() && mostAmount == amounts.max(), "\(name)")
        #expect(leastRatio == doubles.min() && mostRatio == doubles.max(), "\(name)")
        #expect(leastLabel == rows.compactMap(\.label).min() && mostLabel == rows.compactMap(\.label).max(), "\(name)")
        #expect(first == rows.map(\.at).min() && last == rows.map(\.at).max(), "\(name)")
        #expect(try await service.min(\Sheet.at, of: Sheet.self, where: filter) == first)
        #expect(try await service.average(\Sheet.amount, of: Sheet.self, where: filter) == amountAverage)
        return !wholes.isEmpty && Int(exactly: exactWholes) == nil
    }

    private static func groups(_ service: PostgresService, _ filter: EntityFilter<Sheet>?, _ rows: [Sheet], _ name: String) async throws {
        let byShelf = try await service.groups(
            of: Sheet.self, by: \.shelf, .count, .sum(\.amount), .average(\.ratio), .min(\.label), .max(\.at), where: filter)
        let expected = Dictionary(grouping: rows, by: \.shelf)
        #expect(byShelf.count == expected.count, "\(name)")
        for group in byShelf {
            let members = try #require(expected[group.key], "\(name): group \(String(describing: group.key))")
            let (count, amount, ratio, label, at) = group.values
            let amounts = members.compactMap(\.amount)
            let doubles = members.compactMap(\.ratio)
            #expect(count == members.count)
            #expect(amount == (amounts.isEmpty ? nil : amounts.reduce(0, +)))
            expectClose(
                ratio, doubles.isEmpty ? nil : doubles.reduce(0, +) / Double(doubles.count),
                scale: doubles.map(abs).reduce(0, +) / Double(max(doubles.count, 1)), name)
            #expect(label == members.compactMap(\.label).min() && at == members.map(\.at).max())
        }

        struct Pair: Hashable { let shelf: String?; let tier: Int32? }
        let pairs = Dictionary(grouping: rows) { Pair(shelf: $0.shelf, tier: $0.tier) }
        let byPair = try await service.groups(
            of: Sheet.self, by: (\.shelf, \.tier), .count, .sum(\.small), .max(\.whole), where: filter, having: .count > 3)
        let kept = pairs.filter { $0.value.count > 3 }
        #expect(byPair.count == kept.count, "\(name)")
        for group in byPair {
            let members = try #require(kept[Pair(shelf: group.key.0, tier: group.key.1)])
            let smalls = members.compactMap(\.small).map(Int.init)
            #expect(group.values.0 == members.count && group.values.1 == (smalls.isEmpty ? nil : smalls.reduce(0, +)))
            #expect(group.values.2 == members.compactMap(\.whole).max())
        }

        // The two largest shelves, ties broken by the shelf (NULL last, as ascending order puts it).
        let top = try await service.groups(
            of: Sheet.self, by: \.shelf, .count, where: filter, having: .sum(\.small) > 0,
            sortedBy: [.descending(.count), .ascending(\.shelf)], limit: 2)
        var swiftTop: [(shelf: String?, count: Int)] = []
        for (shelf, members) in expected where members.compactMap(\.small).map(Int.init).reduce(0, +) > 0 {
            swiftTop.append((shelf, members.count))
        }
        swiftTop.sort { a, b in
            if a.count != b.count { return a.count > b.count }
            return (a.shelf ?? "\u{10FFFF}") < (b.shelf ?? "\u{10FFFF}")
        }
        let keys: [String?] = top.map { $0.key }
        let counts: [Int] = top.map { $0.values }
        #expect(keys == swiftTop.prefix(2).map { $0.shelf } && counts == swiftTop.prefix(2).map { $0.count }, "\(name)")
    }

    /// Pages of nine sorted by `small` (NULLs last) then `label` descending (NULLs first), ties broken by the key.
    private static func pages(_ service: PostgresService, _ filter: EntityFilter<Sheet>?, _ rows: [Sheet], _ name: String) async throws {
        var paged: [Sheet] = []
        var cursor: PageCursor?
        repeat {
            let page = try await service.fetch(
                Sheet.self, where: filter, sortedBy: [.ascending("small"), .descending("label")], pageSize: 9, after: cursor,
                includingTotal: cursor == nil)
            if cursor == nil { #expect(page.total == rows.count) }
            paged += page.items
            cursor = page.next
        } while cursor != nil
        let sorted = rows.sorted { a, b in
            if a.small != b.small { return b.small == nil || (a.small != nil && a.small! < b.small!) }
            if a.label != b.label { return a.label == nil || (b.label != nil && a.label! > b.label!) }
            return a.uuid.uuidString > b.uuid.uuidString
        }
        #expect(paged.map(\.uuid) == sorted.map(\.uuid), "\(name): pages")
    }

    @Test func nanAndInfinitiesGoThroughAsInSwiftAndMaxOrdersNaNLast() async throws {
        try await withTables(Sheet.create) { service, _ in
            let at = Date(timeIntervalSince1970: 1_700_000_000)
            let ratios: [Double] = [1, .nan, 3, .infinity, -.infinity]
            try await service.update(entities: ratios.map { Sheet(uuid: UUID(), ratio: $0, at: at) })
            let (sum, average, least, most) = try await service.aggregate(
                of: Sheet.self, .sum(\.ratio), .average(\.ratio), .min(\.ratio), .max(\.ratio))
            #expect(sum!.isNaN && ratios.reduce(0, +).isNaN)
            #expect(average!.isNaN)
            #expect(least == -.infinity && most!.isNaN)
            let finite = try await service.sum(\Sheet.ratio, of: Sheet.self, where: .format("ratio < %@", 5.0))
            #expect(finite == -.infinity)
        }
    }
}

extension Sheet {
    init(uuid: UUID, ratio: Double?, at: Date) {
        self.init(uuid: uuid, shelf: nil, tier: nil, small: nil, whole: nil, amount: nil, ratio: ratio, label: nil, at: at)
    }
}

/// Two doubles summed in different orders agree within what rounding allows: `scale` is the sum of the magnitudes.
private func expectClose(
    _ actual: Double?, _ expected: Double?, scale: Double, _ name: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let actual, let expected else {
        #expect(
            actual == nil && expected == nil, "\(name): \(String(describing: actual)) against \(String(describing: expected))",
            sourceLocation: sourceLocation)
        return
    }
    #expect(abs(actual - expected) <= scale * 1e-12 + 1e-300, "\(name): \(actual) against \(expected)", sourceLocation: sourceLocation)
}
