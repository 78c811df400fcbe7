import StructPostgresCore
import StructPostgresDriver

extension PostgresService {
    /// The models matching `filter`, now and again after every committed change of a table the fetch reads (see
    /// ``ModelObservation``). The tables need the triggers of ``ChangeNotifications``.
    ///
    /// - Throws: (from the first iteration) `invalidConfiguration` naming a table without the triggers and how
    ///   to install them; the error of a filter that cannot be compiled.
    public func observe<Model: EntityConvertible>(
        _ type: Model.Type, where filter: EntityFilter<Model.Entity>? = nil, sortedBy sort: [SortKey] = [], limit: Int? = nil,
        loading: Loading = .default
    ) -> ModelObservation<Model> {
        ModelObservation(
            path: path.onPrimaryOnly(), registry: observations, request: FetchRequest(filter: filter?.filter, sort: sort, limit: limit),
            loading: loading)
    }

    /// Every change announced for `tables` (names as in ``EntityProtocol/table``), as it arrives.
    /// A reader that falls `buffering` behind loses the changes beyond it and reads ``ChangeEvent/dropped(_:)``.
    public func changes(in tables: [String], buffering: ChangeBuffering = .default) -> TableChanges {
        TableChanges(path: path.onPrimaryOnly(), tables: tables, buffering: buffering)
    }

    /// Installs the triggers of ``ChangeNotifications`` on `tables`, for code that sets up its own schema; an app
    /// with migrations installs them in one (`structpg observe add books reviews` writes it).
    ///
    /// - Parameters:
    ///   - tables: the tables' names, as in ``EntityProtocol/table``.
    ///   - keys: notifications also carry the changed rows' count and primary keys (``TableChange/keys``), at a
    ///     cost to every write of the tables.
    public func installChangeNotifications(on tables: [String], keys: Bool = false) async throws {
        try await execute(unsafeSQL: ChangeNotifications.installSQL(tables: tables, keys: keys))
        forgetSchemaCache()
    }
}
