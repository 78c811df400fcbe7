import Foundation
import StructPostgres

/// W1, W3, W4, W5: writes, each verified in the database afterwards.
extension Bench {
    /// W1: `count` books, half new, half existing with every field changed, in one call.
    func bulkUpsert(_ report: inout Report, count: Int) async throws {
        let books = BenchData.books(0..<count, authors: options.authors, version: 1)
        // One call's speed varies by tens of percent from round to round on a shared two-core machine (W1's round
        // ratios at 100,000 rows: 0.60 to 1.73), so many rounds, fewer where one call takes 20 seconds.
        let rounds = count >= 1_000_000 ? options.hugeBatchRounds : options.shortRounds
        // COPY against unnest needs fewer rounds than the library's ratio, and costs a call per round.
        let copyRounds = count >= 1_000_000 ? min(options.rounds, 3) : options.rounds
        var peaks: [Contender: Double] = [:]
        var cpu: [Contender: [CPUTime]] = [:]
        var copyRates: [Double] = []
        // Fluent's fetch-or-create takes seconds per 10,000 rows: three rounds (one ratio moved from 46x to 58x).
        let times = try await self.rounds(rounds, fluent: count <= options.fluentMaxRows, fluentRounds: 3) { contender in
            if contender == .handWritten, copyRates.count < copyRounds {
                // The other way to stream a huge batch: COPY into a staging table, then INSERT ... ON CONFLICT.
                try await seed(books: count / 2)
                let seconds = try await Report.seconds { try await hand.upsertByCopy(books) }
                try await verify(books, "hand-written COPY", total: count)
                copyRates.append(Double(count) / seconds)
            }
            try await seed(books: count / 2)
            let before = Memory.currentMB
            Memory.resetPeak()
            let cpuStart = CPUTime.now(server: serverIsLocal)
            let seconds = try await Report.seconds {
                switch contender {
                case .handWritten:
                    if count > options.chunk {
                        try await hand.upsertInChunks(books, chunk: options.chunk)
                    } else {
                        try await hand.upsert(books)
                    }
                case .library: try await service.update(entities: books)
                case .fluent: try await fluent!.upsert(books)
                }
            }
            cpu[contender, default: []].append(CPUTime.now(server: serverIsLocal) - cpuStart)
            peaks[contender] = max(peaks[contender] ?? 0, Memory.peakMB - before)
            try await verify(books, contender.rawValue, total: count)
            return Double(count) / seconds
        }
        report.add(
            "W1 upsert \(count) books", unit: "rows/s", rounds: times, target: .atLeast(0.9), fluentTarget: .atLeast(50))
        if !copyRates.isEmpty {  // empty when --profile leaves hand-written out
            let ratio = Report.median(zip(copyRates, times[.handWritten]!).map { $0 / $1 })  // each COPY ran just before its round's unnest
            report.note(
                "W1 upsert \(count) books", "hand COPY",
                "\(report.figure(Report.median(copyRates))) rows/s: \(format(ratio)) of hand-written unnest (COPY to a staging table + INSERT ... ON CONFLICT)"
            )
        }
        for contender in Contender.allCases {
            if let peak = peaks[contender] {
                report.note("W1 upsert \(count) books", contender.rawValue, "peak RSS +\(Int(peak)) MB during the call")
            }
        }
        report.noteCPU("W1 upsert \(count) books", cpu) { "\(format($0 * 1e3 * 1_000 / Double(count))) ms per 1,000 rows" }
    }

    /// W3: sequential single-book upserts, contenders interleaved call by call; p50 and p99 latency. Hand-written
    /// code holds one connection for all its upserts (no lease per call) and learns what the library's
    /// `update(entities:)` returns: whether the row was inserted, updated, or left alone because nothing differed
    /// (`... DO UPDATE ... WHERE (columns) IS DISTINCT FROM (EXCLUDED columns) RETURNING (xmax = 0)`).
    func singleUpserts(_ report: inout Report) async throws {
        let singles = options.singles
        let contenders = Contender.allCases.filter { $0 != .fluent || fluent != nil }
        try await seed(books: 3 * singles / 2)
        func book(_ index: Int, _ contender: Contender) -> BenchBook {
            BenchData.book(index * contenders.count + contenders.firstIndex(of: contender)!, authors: options.authors, version: 3)
        }
        var latencies: [Contender: [Double]] = [:]
        try await hand.client.withConnection { connection in
            for index in -50..<singles {  // the first 50: warm-up (connections, prepared statements, catalog)
                for contender in contenders {
                    let book = book(max(index, 0) + (index < 0 ? singles : 0), contender)
                    let seconds = try await Report.seconds {
                        switch contender {
                        case .handWritten: _ = try await hand.upsertOneReportingOutcome(book, on: connection)
                        case .library: try await service.update(entities: [book])
                        case .fluent: try await fluent!.upsertOne(book)
                        }
                    }
                    if index >= 0 { latencies[contender, default: []].append(seconds * 1_000_000) }
                }
            }
        }
        for contender in contenders {
            try await verify((0..<singles).map { book($0, contender) }, contender.rawValue)
        }
        report.addLatencies("W3 single upsert", latencies)
    }

    /// W3 against a plain statement: the library against hand-written code that learns nothing of what its upsert
    /// did (no `RETURNING`) and rewrites a row even when nothing differs, interleaved call by call on held
    /// connections. A diagnostic without a target: what the answer the library returns costs.
    func singleUpsertsPlainStatement() async throws {
        let singles = options.singles
        try await seed(books: 3 * singles / 2)
        var latencies: [Contender: [Double]] = [:]
        try await hand.client.withConnection { connection in
            for index in -50..<singles {
                for (slot, contender) in [Contender.handWritten, .library].enumerated() {
                    let book = BenchData.book((max(index, 0) + (index < 0 ? singles : 0)) * 2 + slot, authors: options.authors, version: 3)
                    let seconds = try await Report.seconds {
                        switch contender {
                        case .library: try await service.update(entities: [book])
                        default: try await hand.upsertOne(book, on: connection)
                        }
                    }
                    if index >= 0 { latencies[contender, default: []].append(seconds * 1_000_000) }
                }
            }
        }
        let (handP50, libraryP50) = (Report.percentile(latencies[.handWritten]!, 0.5), Report.percentile(latencies[.library]!, 0.5))
        say(
            "W3 plain statement (hand-written without RETURNING, unchanged rows rewritten): p50 hand-written \(Int(handP50)) µs, StructPostgres \(Int(libraryP50)) µs, ratio \(format(libraryP50 / handP50)) (no target)"
        )
    }

    /// W4: 8 tasks, each 500 single upserts, through a pool of 8 connections; upserts per second.
    func concurrentUpserts(_ report: inout Report) async throws {
        let (tasks, perTask) = (8, options.singles / 4)
        var cpu: [Contender: [CPUTime]] = [:]
        let throughput = try await rounds(options.rounds) { contender in
            try await seed(books: tasks * perTask / 2)
            let cpuStart = CPUTime.now(server: serverIsLocal)
            let seconds = try await Report.seconds {
                try await upsertConcurrently(tasks: tasks, perTask: perTask, version: 4) { book in
                    switch contender {
                    case .handWritten: try await hand.upsertOne(book)
                    case .library: try await service.update(entities: [book])
                    case .fluent: try await fluent!.upsertOne(book)
                    }
                }
            }
            cpu[contender, default: []].append(CPUTime.now(server: serverIsLocal) - cpuStart)
            try await verify(
                BenchData.books(0..<(tasks * perTask), authors: options.authors, version: 4), contender.rawValue, total: tasks * perTask)
            return Double(tasks * perTask) / seconds
        }
        report.add(
            "W4 \(tasks) tasks x \(perTask) upserts", unit: "rows/s", rounds: throughput, target: .atLeast(0.9), fluentTarget: .atLeast(2))
        report.noteCPU("W4 \(tasks) tasks x \(perTask) upserts", cpu) { "\(Int($0 * 1e6 / Double(tasks * perTask))) µs per upsert" }
    }

    /// Books `0..<tasks * perTask` at `version`, upserted one per call by `tasks` tasks at once.
    func upsertConcurrently(tasks: Int, perTask: Int, version: Int, _ upsert: @escaping @Sendable (BenchBook) async throws -> Void)
        async throws
    {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for index in 0..<perTask {
                        try await upsert(BenchData.book(task * perTask + index, authors: options.authors, version: version))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// W5: delete half of `count` books by uuid.
    func deleteHalf(_ report: inout Report, count: Int) async throws {
        let doomed = BenchData.books(0..<(count / 2), authors: options.authors, version: 0)
        let ids = doomed.map(\.uuid)
        let throughput = try await rounds(options.shortRounds) { contender in
            try await seed(books: count)
            let seconds = try await Report.seconds {
                switch contender {
                case .handWritten: try await hand.delete(ids)
                case .library: try await service.delete(entities: doomed)
                case .fluent: try await fluent!.delete(ids)
                }
            }
            let left = try await hand.count("books")
            guard left == count - count / 2, try await hand.book(ids[ids.count / 2]) == nil else {
                throw BenchError("W5 \(contender.rawValue): \(left) books left, expected \(count - count / 2)")
            }
            return Double(count / 2) / seconds
        }
        report.add(
            "W5 delete \(count / 2) books", unit: "rows/s", rounds: throughput, target: .atLeast(0.9), fluentTarget: .atLeast(1))
    }
}
