import Foundation
import StructPostgres
import StructPostgresTesting
import Testing

/// With several hosts, the first calls look for the primary: one search, in the task of the call that started it,
/// answers the calls that arrive meanwhile, also when that call is cancelled (its connection attempt still ends).
@Suite struct PrimarySearchTests {
    @Test func callsWaitingForASearchGetItsAnswerThoughTheCallThatSearchesIsCancelled() async throws {
        let database = try await TestDatabase.create()
        let silent = try SilentListener()
        // First a host that takes connections and never answers (each attempt waits for connect_timeout), then the
        // test's server; read-write makes every first call look for the primary.
        let url =
            database.url.replacingOccurrences(of: "@", with: "@127.0.0.1:\(silent.port),", range: database.url.range(of: "@"))
            + (database.url.contains("?") ? "&" : "?") + "target_session_attrs=read-write&connect_timeout=5"
        let configuration = PostgresService.Configuration(
            connection: try ConnectionSettings(url: url), pool: PoolOptions(maxConnections: 4))
        try await PostgresService.withService(configuration: configuration) { service in
            let searcher = Task { try await service.query("SELECT 1") }
            try await Task.sleep(for: .milliseconds(200))
            let waiting = Task {
                try await withThrowingTaskGroup(of: Int32.self) { group in
                    for _ in 0..<16 { group.addTask { try await service.query("SELECT 1")[0].decode(Int32.self) } }
                    return try await group.reduce(into: 0) { $0 += $1 }
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            searcher.cancel()
            // Cancelled while it connects, the searching call ends once that attempt does (connect_timeout); what it
            // fails with depends on where it then is (loaded, its own lease may time out too), so only the others are
            // checked.
            _ = await searcher.result
            #expect(try await waiting.value == 16)
        }
        try await database.drop()
    }
}

/// A port of 127.0.0.1 that takes connections (in the kernel's backlog) and never answers them.
private final class SilentListener {
    let port: Int
    private let socketFD: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 64) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard descriptor >= 0, bound else { throw POSIXError(.EADDRNOTAVAIL) }
        socketFD = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socketFD) }
}
