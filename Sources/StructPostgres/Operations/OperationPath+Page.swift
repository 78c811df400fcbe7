import StructPostgresCore
import StructPostgresDriver

extension OperationPath {
    /// One page of a fetch in keyset order, its cursor sealed with the service's key.
    func fetchPage<Model: EntityConvertible>(_ type: Model.Type, _ request: PageRequest, loading: Loading) async throws -> Page<Model> {
        if let refusal = request.filter?.refusal { throw refusal.with(entity: "\(Model.Entity.self)", table: Model.Entity.table) }
        var operation = Operation(.fetch, Model.Entity.self)
        operation.countsRows = .read
        return try await perform(operation) { session in
            let page = try await session.fetchPage(
                Model.Entity.self, request, seal: runtime.cursorSeal, loading: loading.resolved(runtime.defaultLoading))
            return Page(items: try page.entities.models(), next: page.next, total: page.total)
        }
    }
}
