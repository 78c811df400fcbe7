import NIOCore
import NIOEmbedded
@testable import StructPostgres
@testable import StructPostgresCore
@testable import StructPostgresDriver
import Testing

/// The frames of backend messages, split anywhere, and what the watcher makes of them, without a server.
struct ReadyForQueryWatcherTests {
    private static func frame(_ type: Character, _ body: [UInt8]) -> [UInt8] {
        let length = UInt32(body.count + 4)
        return [type.asciiValue!, UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + body
    }

    private static func error(_ fields: [(Character, String)]) -> [UInt8] {
        frame("E", fields.flatMap { [$0.0.asciiValue!] + Array($0.1.utf8) + [0] } + [0])
    }

    private static let parseBindComplete = frame("1", []) + frame("2", [])
    private static let commandComplete = frame("C", Array("INSERT 0 1".utf8) + [0])
    private static let dataRow = frame("D", [0, 1, 0, 0, 0, 3] + Array("abc".utf8))
    private static let readyIdle = frame("Z", [UInt8(ascii: "I")])
    private static let deferredViolation = error([
        ("S", "ERROR"), ("V", "ERROR"), ("C", "23503"), ("M", "insert or update violates"), ("n", "fk"),
    ])

    private func events(_ bytes: [UInt8], cutEvery step: Int) -> ([BackendMessageScanner.Event], Bool) {
        var scanner = BackendMessageScanner()
        var events: [BackendMessageScanner.Event] = []
        var synchronized = true
        for start in stride(from: 0, to: bytes.count, by: step) {
            let buffer = ByteBuffer(bytes: bytes[start..<min(start + step, bytes.count)])
            synchronized = scanner.scan(buffer) { events.append($0) } && synchronized
        }
        return (events, synchronized)
    }

    @Test(arguments: [1, 2, 3, 5, 7, 1000])
    func framesAreReadWhereverTheBytesAreCut(step: Int) {
        let bytes = Self.parseBindComplete + Self.dataRow + Self.dataRow + Self.commandComplete + Self.deferredViolation + Self.readyIdle
        let (events, synchronized) = events(bytes, cutEvery: step)
        #expect(synchronized)
        #expect(
            events == [
                .completed,
                .error([
                    UInt8(ascii: "S"): "ERROR", UInt8(ascii: "V"): "ERROR", UInt8(ascii: "C"): "23503",
                    UInt8(ascii: "M"): "insert or update violates", UInt8(ascii: "n"): "fk",
                ]),
                .ready(UInt8(ascii: "I")),
            ])
    }

    @Test func bytesThatCannotBeAFrameStopTheScanner() {
        let (events, synchronized) = events(Array("INSERT 0 1".utf8) + Self.readyIdle, cutEvery: 4)
        #expect(!synchronized)
        #expect(events.isEmpty)
        var scanner = BackendMessageScanner()
        #expect(!scanner.scan(ByteBuffer(bytes: Self.frame("Z", [1, 2]))) { _ in }, "a ReadyForQuery is 5 bytes long")
    }

    /// The watcher, in an embedded channel, answers a statement that completed with how it ended.
    private func watched(_ body: (EmbeddedChannel, ReadyForQueryWatcher) throws -> Void) throws {
        let channel = EmbeddedChannel()
        let watcher = ReadyForQueryWatcher(eventLoop: channel.eventLoop)
        try channel.pipeline.syncOperations.addHandler(watcher)
        try body(channel, watcher)
        _ = try? channel.finish()
    }

    private func outcome(_ watcher: ReadyForQueryWatcher) -> String {
        var result = "waiting"
        switch watcher.outcomeOfLastStatement() {
        case .now(let outcome): result = "\(outcome)"
        case .later(let future): future.whenSuccess { result = "later \($0)" }
        }
        return result
    }

    @Test func aStatementEndsAtReadyForQueryAndACommitErrorIsItsOutcome() throws {
        try watched { channel, watcher in
            var written = 0
            func send(_ bytes: [UInt8]) throws {
                written += bytes.count
                try channel.writeInbound(ByteBuffer(bytes: bytes))
            }
            try send(Self.parseBindComplete + Self.commandComplete + Self.readyIdle)
            #expect(outcome(watcher) == "ready")
            try send(Self.parseBindComplete + Self.commandComplete)
            var later = "waiting"
            if case .later(let future) = watcher.outcomeOfLastStatement() { future.whenSuccess { later = "\($0)" } }
            #expect(later == "waiting")
            try send(Self.deferredViolation)
            #expect(later == "waiting")
            try send(Self.readyIdle)
            #expect(later.hasPrefix("failedAtCommit"))
            // An error that is the statement's own (before any completion) is not a commit's.
            try send(Self.parseBindComplete + Self.commandComplete + Self.readyIdle + Self.deferredViolation + Self.readyIdle)
            #expect(outcome(watcher) == "ready")
            // Every message went on to the next handler unchanged.
            var forwarded = 0
            while let buffer = try channel.readInbound(as: ByteBuffer.self) { forwarded += buffer.readableBytes }
            #expect(forwarded == written)
        }
    }

    @Test func aConnectionClosedBeforeReadyForQueryLeavesTheOutcomeUnknown() throws {
        try watched { channel, watcher in
            try channel.writeInbound(ByteBuffer(bytes: Self.commandComplete))
            var later = "waiting"
            if case .later(let future) = watcher.outcomeOfLastStatement() { future.whenSuccess { later = "\($0)" } }
            channel.pipeline.fireChannelInactive()
            #expect(later == "lost")
            #expect(outcome(watcher) == "lost")
        }
    }

    private static let adminShutdown = error([
        ("S", "FATAL"), ("V", "FATAL"), ("C", "57P01"), ("M", "terminating connection due to administrator command"),
    ])
    private static let idleTimeout = error([
        ("S", "FATAL"), ("V", "FATAL"), ("C", "57P05"), ("M", "terminating connection due to idle-session timeout"),
    ])
    private static let poolerServerLost = error([("S", "FATAL"), ("V", "FATAL"), ("C", "08P01"), ("M", "server conn crashed?")])
    private static let statementError = error([("S", "ERROR"), ("V", "ERROR"), ("C", "23505"), ("M", "duplicate key value")])

    /// Messages read before a statement was written (`before`), and after it (`after`): whether the server ended the
    /// session without reading the statement.
    private func endedBeforeReading(before: [UInt8], after: [UInt8]) throws -> Bool {
        var ended = false
        try watched { channel, watcher in
            if !before.isEmpty { try channel.writeInbound(ByteBuffer(bytes: before)) }
            let mark = watcher.mark
            if !after.isEmpty { try channel.writeInbound(ByteBuffer(bytes: after)) }
            ended = watcher.endedSessionBeforeReading(since: mark)
        }
        return ended
    }

    @Test func aSessionEndedBeforeTheStatementWasReadIsToldApartFromOneEndedWhileItRan() throws {
        let earlier = Self.parseBindComplete + Self.commandComplete + Self.readyIdle
        // The server ended the session unread: the error came first after the write, or before it.
        #expect(try endedBeforeReading(before: earlier, after: Self.adminShutdown))
        #expect(try endedBeforeReading(before: earlier + Self.adminShutdown, after: []))
        #expect(try endedBeforeReading(before: earlier + Self.idleTimeout, after: []))
        // The server answered part of the statement first: it read it, and may have run it.
        #expect(try !endedBeforeReading(before: earlier, after: Self.parseBindComplete + Self.adminShutdown))
        #expect(try !endedBeforeReading(before: earlier, after: Self.parseBindComplete + Self.commandComplete + Self.adminShutdown))
        // A pooler's own FATAL: it may have sent the statement on to a server that ran it.
        #expect(try !endedBeforeReading(before: earlier, after: Self.poolerServerLost))
        // An error that does not end the session is the statement's own; nothing ended.
        #expect(try !endedBeforeReading(before: earlier, after: Self.statementError + Self.readyIdle))
        #expect(try !endedBeforeReading(before: earlier, after: []))
    }

    @Test func aWatcherThatLostTrackOfTheFramesSaysSo() throws {
        try watched { channel, watcher in
            try channel.writeInbound(ByteBuffer(bytes: Array("garbage".utf8)))
            #expect(outcome(watcher) == "unknown")
        }
    }

    @Test func aCommitErrorFollowedByTheConnectionClosingIsStillTheCommitsError() throws {
        try watched { channel, watcher in
            try channel.writeInbound(ByteBuffer(bytes: Self.parseBindComplete + Self.commandComplete))
            var later = "waiting"
            if case .later(let future) = watcher.outcomeOfLastStatement() { future.whenSuccess { later = "\($0)" } }
            try channel.writeInbound(ByteBuffer(bytes: Self.deferredViolation))
            channel.pipeline.fireChannelInactive()
            #expect(later.hasPrefix("failedAtCommit"), "the server said why the commit failed before it closed")
        }
    }

    @Test(arguments: ["57P01", "57P02", "57P03", "57P05", "25P03"])
    func everySessionEndingOfTheServersOwnIsSeen(sqlState: String) throws {
        let ending = Self.error([("S", "FATAL"), ("V", "FATAL"), ("C", sqlState), ("M", "terminating connection")])
        #expect(try endedBeforeReading(before: Self.readyIdle, after: ending))
        let notFatal = Self.error([("S", "ERROR"), ("V", "ERROR"), ("C", sqlState), ("M", "not the end")])
        #expect(try !endedBeforeReading(before: Self.readyIdle, after: notFatal), "only a FATAL error ends the session")
    }

    @Test func framesThatStopMakingSenseWhileAStatementWaitsAnswerItUnknown() throws {
        try watched { channel, watcher in
            try channel.writeInbound(ByteBuffer(bytes: Self.parseBindComplete + Self.commandComplete))
            var later = "waiting"
            if case .later(let future) = watcher.outcomeOfLastStatement() { future.whenSuccess { later = "\($0)" } }
            try channel.writeInbound(ByteBuffer(bytes: Array("garbage".utf8)))
            #expect(later == "unknown", "the waiting statement is not left waiting for a ReadyForQuery the watcher cannot see")
        }
    }
}
