/// How far a failed statement got, as its session saw it: recorded on the error by
/// ``DatabaseSession`` where the statement failed, read by ``SendAgain``.
package struct StatementDelivery: Sendable, Equatable {
    /// Written to the connection; `false`: refused before the write, the connection had closed
    /// (see ``ConnectionClosedBeforeWriting``).
    package var written: Bool
    /// The server ended the session (a restart, a failover, an idle timeout) before reading the statement, as the
    /// commit watcher saw the messages. Only a connection to the server itself says so: a pooler's sessions are not
    /// the server's.
    package var endedUnread: Bool
    /// The first statement on the call's lease of its connection: nothing of the call ran before it.
    package var first: Bool
    /// The task was cancelled when the statement failed.
    package var cancelled: Bool

    package init(written: Bool, endedUnread: Bool, first: Bool, cancelled: Bool) {
        (self.written, self.endedUnread, self.first, self.cancelled) = (written, endedUnread, first, cancelled)
    }
}

/// The underlying error of a statement refused because its connection had closed: it was never written.
package struct ConnectionClosedBeforeWriting: Error, Sendable, CustomStringConvertible {
    package var description: String { "the connection had closed before the statement was written" }

    package init() {}
}
