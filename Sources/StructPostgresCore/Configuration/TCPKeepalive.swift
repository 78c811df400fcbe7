/// TCP keepalive on a connection (libpq's `keepalives_idle`, `keepalives_interval`, `keepalives_count`): once nothing
/// has arrived for ``idle``, the client's TCP asks the server's every ``interval``, and gives the connection up after
/// ``count`` probes go unanswered. A server that vanished without a word (a cut link, a host powered off, an address
/// moved by a failover) is noticed so, and a statement waiting on it fails with `connectionLost`.
///
/// On by default (see ``ConnectionSettings/tcpKeepalive``): 10 s idle, then a probe every 5 s, 3 probes, so that a
/// dead link is found within 25 s, the default ``ConnectionSettings/tcpUserTimeout`` as well. A `nil` field takes the
/// operating system's value (Linux: 7200 s, 75 s, 9), as a zero does in libpq. See the *Deploying* article.
///
/// ```swift
/// var settings = try ConnectionSettings(url: "postgres://app@db.internal/shop")
/// settings.tcpKeepalive = TCPKeepalive(idle: .seconds(30), interval: .seconds(10), count: 3)
/// // or in the URL: ?keepalives_idle=30&keepalives_interval=10&keepalives_count=3
/// ```
public struct TCPKeepalive: Sendable, Hashable {
    /// How long a connection may receive nothing before the first probe (`keepalives_idle`, whole seconds).
    public var idle: Duration?
    /// How long between unanswered probes (`keepalives_interval`, whole seconds).
    public var interval: Duration?
    /// How many unanswered probes end the connection (`keepalives_count`).
    public var count: Int?

    /// Keepalive with the given timings; each defaults to the library's (10 s, 5 s, 3), `nil` to the system's.
    public init(idle: Duration? = .seconds(10), interval: Duration? = .seconds(5), count: Int? = 3) {
        self.idle = idle
        self.interval = interval
        self.count = count
    }

    /// How long after the last answer a dead peer is given up at most, when every field is set.
    var bound: Duration? {
        guard let idle, let interval, let count else { return nil }
        return idle + interval * count
    }
}
