import Synchronization

/// What a session's statements did on one lease of a pooled connection, for ``ServiceRuntime/withSession(_:_:atomic:_:)``:
/// a call whose first statement never ran (its connection had closed, or the server had ended the session before
/// reading it) runs again on another connection. A later statement that never ran does not: those before it ran.
final class LeaseRecord: Sendable {
    /// The connection goes to the server itself, not through a declared pooler (`pool_mode=transaction`), whose
    /// sessions are not the server's: only then does the end of the session say what the server read.
    let directToServer: Bool
    private let sent = Atomic(false)
    private let unread = Atomic(false)

    init(directToServer: Bool) { self.directToServer = directToServer }

    /// Notes a statement about to be sent; returns whether it is the lease's first.
    func noteStatement() -> Bool { !sent.exchange(true, ordering: .relaxed) }

    /// Notes that the server ended the session without reading the statement just written.
    func noteEndedUnread() { unread.store(true, ordering: .relaxed) }

    /// Whether the server ended the session without reading the statement just written; forgets it.
    func takeEndedUnread() -> Bool { unread.exchange(false, ordering: .relaxed) }
}
