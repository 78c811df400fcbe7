import Synchronization
import StructPostgresCore

/// What a session's statements did on one lease of a pooled connection: whether the statement being sent is the
/// lease's first, and whether the server ended the session before reading the one just written. The session
/// records it on a failed statement's error (``StatementDelivery``), for ``SendAgain``.
package final class LeaseRecord: Sendable {
    private let sent = Atomic(false)
    private let unread = Atomic(false)

    package init() {}

    /// Notes a statement about to be sent; returns whether it is the lease's first.
    package func noteStatement() -> Bool { !sent.exchange(true, ordering: .relaxed) }

    /// Notes that the server ended the session without reading the statement just written.
    package func noteEndedUnread() { unread.store(true, ordering: .relaxed) }

    /// Whether the server ended the session without reading the statement just written; forgets it.
    package func takeEndedUnread() -> Bool { unread.exchange(false, ordering: .relaxed) }
}
