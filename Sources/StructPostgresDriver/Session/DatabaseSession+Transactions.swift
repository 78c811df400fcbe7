import PostgresNIO
import StructPostgresCore

extension DatabaseSession {
    /// Runs `sql`, without parameters; `evenIfCancelled`: also in a cancelled task, without cancelling it.
    package func execute(statement sql: String, evenIfCancelled: Bool = false) async throws {
        var statement = Statement(sql: sql)
        statement.runsWhenCancelled = evenIfCancelled
        _ = try await run(statement)
    }

    /// Rolls the connection's transaction back, also in a cancelled task; a connection where that fails is
    /// closed, so that it never goes back to the pool inside a transaction.
    package func rollBack() async {
        do {
            try await execute(statement: "ROLLBACK", evenIfCancelled: true)
        } catch {
            if !connection.isClosed { connection.close().whenComplete { _ in } }
        }
    }

    /// Sends COMMIT and checks that PostgreSQL did commit: after a failed statement whose error the
    /// closure caught, PostgreSQL answers COMMIT with ROLLBACK, which must not pass for success.
    ///
    /// A task cancelled before COMMIT never sends it. COMMIT itself is not cancelled: once sent, its outcome
    /// is reported as it is.
    package func commit() async throws {
        let result: PostgresQueryResult
        let start = ContinuousClock.now
        if Task.isCancelled {
            throw StructPostgresError(
                .queryCancelled, "the task was cancelled before COMMIT; the transaction was rolled back", sql: "COMMIT")
        }
        context.logger.debug("query", metadata: ["sql": "COMMIT", "binds": "0"])
        do {
            result = try await connection.sendingOnEventLoop(sql: "COMMIT") {
                try await connection.query("COMMIT", logger: context.logger).get()
            }
            observe(Statement(sql: "COMMIT"), since: start, failed: false)
        } catch {
            observe(Statement(sql: "COMMIT"), since: start, failed: true)
            var failure = StructPostgresError.from(error, sql: "COMMIT")
            if failure.underlying is ConnectionClosedBeforeWriting {
                // The transaction's statements before it ran: the call does not run again (no ``StatementDelivery``).
                failure.message = "the connection closed before COMMIT was sent: the transaction was rolled back (\(failure.message))"
            } else if failure.code == .connectionLost {
                failure.message =
                    "the connection was lost while COMMIT was in flight, so whether the transaction was committed is unknown; check before running it again (\(failure.message))"
            }
            throw failure
        }
        if result.metadata.command == "ROLLBACK" {
            throw StructPostgresError(
                .server,
                "the transaction was rolled back, not committed: a statement in it failed and its error was caught inside the closure",
                sqlState: "25P02", sql: "COMMIT")
        }
    }
}
