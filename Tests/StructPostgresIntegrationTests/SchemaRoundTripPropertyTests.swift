import Foundation
import StructPostgres
import Testing

/// Random models, drafted, migrated, verified, written and read back, then drafted again: the draft makes the schema
/// the models need, verify agrees, every value comes back, and a second draft has nothing to add.
@Suite struct SchemaRoundTripPropertyTests {
    /// How the models of one graph relate.
    enum Pattern: CaseIterable {
        case single, toOne, toOneWithBackReference, manyToMany, selfReference, cycle
    }

    /// One random graph: its shapes (one or two models), as the test at `index` makes it.
    static func graph(_ index: Int, _ random: inout SeededRandom) -> (Pattern, [ModelShape]) {
        let pattern = random.pick(Pattern.allCases)
        let (a, b) = ("rt\(index)_as", "rt\(index)_bs")
        func properties() -> [PropertyShape] {
            (0..<Int.random(in: 1...6, using: &random)).map { n in
                let kind = random.chance(0.3) ? ValueKind.array(random.pick(ValueKind.elements)) : random.pick(ValueKind.scalars + [.json])
                return PropertyShape(key: random.pick(["p\(n)", "value\(n)Count", "p\(n)URL"]), kind: kind, optional: random.chance(0.4))
            }
        }
        let uuid = PropertyShape(key: "uuid", kind: .uuid, optional: false)
        func link(_ name: String) -> PropertyShape { PropertyShape(key: name, kind: .uuid, optional: true) }
        switch pattern {
        case .single:
            let key = random.pick([["uuid"], ["code"], ["code", "number"]])
            var shape = ModelShape(table: a, uniqueKey: key, properties: properties())
            for column in key {
                let kind: ValueKind = column == "uuid" ? .uuid : column == "code" ? .string : .int32
                shape.properties.insert(PropertyShape(key: column, kind: kind, optional: key.count == 1 && random.chance(0.2)), at: 0)
            }
            return (pattern, [shape])
        case .toOne, .toOneWithBackReference:
            var first = ModelShape(
                table: a, properties: [uuid, link("oneBID")] + properties(), relationships: [.toOne(name: "oneB", target: RoleB.self)])
            var second = ModelShape(table: b, properties: [uuid] + properties())
            if pattern == .toOneWithBackReference {
                second.relationships = [.backReference(name: "manyA", target: RoleA.self, column: "oneBID")]
            }
            first.properties.shuffle(using: &random)
            return (pattern, [first, second])
        case .manyToMany:
            return (
                pattern,
                [
                    ModelShape(
                        table: a, properties: [uuid] + properties(),
                        relationships: [.through(name: "manyB", target: RoleB.self, table: "rt\(index)_links")]),
                    ModelShape(table: b, properties: [uuid] + properties()),
                ]
            )
        case .selfReference:
            return (
                pattern,
                [
                    ModelShape(
                        table: a, properties: [uuid, link("oneAID")] + properties(),
                        relationships: [
                            .toOne(name: "oneA", target: RoleA.self), .backReference(name: "manyA", target: RoleA.self, column: "oneAID"),
                        ])
                ]
            )
        case .cycle:
            return (
                pattern,
                [
                    ModelShape(
                        table: a, properties: [uuid, link("oneBID")] + properties(),
                        relationships: [.toOne(name: "oneB", target: RoleB.self)]),
                    ModelShape(
                        table: b, properties: [uuid, link("oneAID")] + properties(),
                        relationships: [.toOne(name: "oneA", target: RoleA.self)]),
                ]
            )
        }
    }

    /// One graph's round trip, on fresh types.
    struct Check: WithFreshTag {
        let index: Int
        let pattern: Pattern
        let shapes: [ModelShape]
        let harness: DraftHarness
        let seed: UInt64

        func run<Tag: TypeTag>(_ tag: Tag.Type) async throws {
            typealias A = DynamicModel<Tag, RoleA>
            typealias B = DynamicModel<Tag, RoleB>
            A.register(shapes[0])
            if shapes.count > 1 { B.register(shapes[1]) }
            let models: [any EntityConvertible.Type] = shapes.count > 1 ? [A.self, B.self] : [A.self]
            let service = harness.service
            let context = "graph \(index) (\(pattern), seed \(seed)): \(shapes)"

            let draft = try await service.draftMigration(for: models)
            #expect(draft.reviews.isEmpty, "\(context)\n\(draft.up)")
            try await harness.apply(draft)
            let report = try await service.schemaReport(for: models)
            #expect(report.matches, "\(context)\n\(draft.files)\n\(report)")

            var random = SeededRandom(seed: seed)
            var rowsA = (0..<3).map { _ in A(values: random.values(for: shapes[0])) }
            var rowsB = shapes.count > 1 ? (0..<3).map { _ in B(values: random.values(for: shapes[1])) } : []
            func id<M: AnyDynamicModel>(_ row: M) -> DynamicValue? { row.values["uuid"] }
            switch pattern {
            case .single:
                for i in rowsA.indices {
                    for column in shapes[0].uniqueKey {
                        rowsA[i].values[column] = column == "uuid" ? .uuid(UUID()) : column == "code" ? .string("k\(i)") : .int32(Int32(i))
                    }
                }
                try await service.update(entities: rowsA)
            case .toOne, .toOneWithBackReference:
                try await service.update(entities: rowsB)
                for i in rowsA.indices { rowsA[i].values["oneBID"] = random.chance(0.8) ? id(random.pick(rowsB)) : nil }
                try await service.update(entities: rowsA)
            case .manyToMany:
                try await service.update(entities: rowsB)
                for i in rowsA.indices { rowsA[i].manyB = rowsB.filter { _ in random.chance(0.5) } }
                try await service.update(entities: rowsA)
            case .selfReference:
                for i in rowsA.indices.dropFirst() { rowsA[i].values["oneAID"] = random.chance(0.7) ? id(rowsA[i - 1]) : nil }
                rowsA[0].values["oneAID"] = nil
                try await service.update(entities: rowsA)
            case .cycle:
                for i in rowsA.indices { rowsA[i].values["oneBID"] = nil }
                try await service.update(entities: rowsA)
                for i in rowsB.indices { rowsB[i].values["oneAID"] = id(random.pick(rowsA)) }
                try await service.update(entities: rowsB)
                for i in rowsA.indices { rowsA[i].values["oneBID"] = id(random.pick(rowsB)) }
                try await service.update(entities: rowsA)
            }
            let readA = try await service.fetch(A.self, loading: .all(depth: 1))
            #expect(Set(readA.map(\.values)) == Set(rowsA.map(\.values)), "\(context)")
            if shapes.count > 1 {
                #expect(Set(try await service.fetch(B.self, loading: .none).map(\.values)) == Set(rowsB.map(\.values)), "\(context)")
            }
            try checkRelationships(readA, rowsA, context)
            #expect(try await service.draftMigration(for: models).isEmpty, "\(context)")
        }

        /// The loaded relationships link what was written.
        private func checkRelationships<Tag>(_ read: [DynamicModel<Tag, RoleA>], _ written: [DynamicModel<Tag, RoleA>], _ context: String)
            throws
        {
            let byKey = Dictionary(read.map { ($0.values["uuid"], $0) }, uniquingKeysWith: { a, _ in a })
            for row in written {
                let loaded = try #require(byKey[row.values["uuid"]], "\(context)")
                switch pattern {
                case .toOne, .toOneWithBackReference, .cycle:
                    #expect(loaded.oneB?.values["uuid"] == row.values["oneBID"], "\(context)")
                case .manyToMany:
                    #expect(Set(loaded.manyB.map { $0.values["uuid"] }) == Set(row.manyB.map { $0.values["uuid"] }), "\(context)")
                case .selfReference:
                    #expect(loaded.oneA?.values["uuid"] == row.values["oneAID"], "\(context)")
                    let children = written.filter { $0.values["oneAID"] == row.values["uuid"] && row.values["uuid"] != nil }
                    #expect(Set(loaded.manyA.map { $0.values["uuid"] }) == Set(children.map { $0.values["uuid"] }), "\(context)")
                case .single:
                    break
                }
            }
        }
    }

    @Test func randomModelsDraftMigrateVerifyAndRoundTrip() async throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["STRUCTPG_PROPERTY_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        var random = SeededRandom(seed: seed)
        let graphs = 150
        let depths = FreshDepth.take(graphs)
        var models = 0
        var kinds: Set<ValueKind> = []
        var patterns: Set<String> = []
        let clock = ContinuousClock()
        let start = clock.now
        // One call at a time: two connections, so the suite's other tests keep the test server's connections.
        try await withTables(pool: PoolOptions(maxConnections: 2)) { service, _ in
            let harness = DraftHarness(service)
            for index in 0..<graphs {
                let (pattern, shapes) = Self.graph(index, &random)
                models += shapes.count
                kinds.formUnion(shapes.flatMap { $0.properties.map(\.kind) })
                patterns.insert("\(pattern)")
                try await withFreshTag(
                    depths + index, Check(index: index, pattern: pattern, shapes: shapes, harness: harness, seed: random.next()))
            }
        }
        print("SchemaRoundTripPropertyTests: \(models) models in \(graphs) graphs, seed \(seed), \(clock.now - start)")
        #expect(models >= 200, "seed \(seed)")
        #expect(patterns.count == Pattern.allCases.count, "every pattern ran (seed \(seed))")
        #expect(
            Set(ValueKind.scalars).isSubset(of: kinds),
            "every scalar type ran (seed \(seed)): missing \(Set(ValueKind.scalars).subtracting(kinds))")
    }
}
