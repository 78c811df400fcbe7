import Foundation
import StructPostgres
import Synchronization

/// Writers for failover tests: each upserts one new row per call until stopped, keeping the key and time of every
/// write the service acknowledged, and the failures.
final class AcknowledgedWriters<Model: EntityConvertible & Sendable>: Sendable {
    let acknowledged = Mutex<[(UUID, ContinuousClock.Instant)]>([])
    let failures = Mutex<[String]>([])
    let stopping = Atomic(false)
    private let make: @Sendable (UUID) -> Model

    /// `make` builds the row of a key.
    init(_ make: @escaping @Sendable (UUID) -> Model) { self.make = make }

    /// The keys of the acknowledged writes.
    var keys: [UUID] { acknowledged.withLock { $0.map(\.0) } }

    func run(_ service: PostgresService, tasks: Int) async {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    while !self.stopping.load(ordering: .relaxed) {
                        let key = UUID()
                        do {
                            try await service.update(entities: [self.make(key)])
                            let now = ContinuousClock.now
                            self.acknowledged.withLock { $0.append((key, now)) }
                        } catch {
                            self.failures.withLock { $0.append("\(error)") }
                            try? await Task.sleep(for: .milliseconds(20))
                        }
                    }
                }
            }
        }
    }
}
