import Testing

extension Tag {
    /// Suites that time cancellations, pool waits and TLS handshakes, or restart a server under load: scripts/test.sh
    /// runs them one test at a time in a pass of their own (it finds them by this tag, whatever their names), so that a
    /// loaded machine does not stretch the times they assert, nor their load stretch other tests'.
    @Tag static var timed: Self
}
