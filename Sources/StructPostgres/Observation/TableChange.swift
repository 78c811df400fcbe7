import Foundation
import StructPostgresCore
import StructPostgresDriver

/// One committed statement's change of an observed table, as its trigger announced it.
public struct TableChange: Sendable, Equatable {
    /// The kind of statement that made a change.
    public enum Operation: String, Sendable, Equatable {
        /// `INSERT`, `UPDATE`, `DELETE` or `TRUNCATE`, as the trigger names it.
        case insert = "INSERT", update = "UPDATE", delete = "DELETE", truncate = "TRUNCATE"
    }

    /// The table, schema-qualified (`public.books`).
    public var table: String
    /// The statement that made the change.
    public var operation: Operation
    /// How many rows the statement changed; `nil` for `TRUNCATE` and for triggers installed without keys.
    public var rowCount: Int?
    /// The changed rows' primary keys as text, when the triggers were installed with keys, the table has a
    /// one-column primary key and the statement changed at most ``ChangeNotifications/keysPerNotification`` rows;
    /// otherwise `nil`.
    public var keys: [String]?

    /// A change of `table` by `operation`.
    public init(table: String, operation: Operation, rowCount: Int?, keys: [String]?) {
        self.table = table
        self.operation = operation
        self.rowCount = rowCount
        self.keys = keys
    }

    /// The change a notification's payload describes, on the channel of `table`: the operation alone (triggers
    /// without keys), or a JSON object (with keys, or installed by an earlier version); `nil` for a payload the
    /// triggers do not send.
    init?(payload: String, table: String) {
        if let operation = Operation(rawValue: payload) {
            self.init(table: table, operation: operation, rowCount: nil, keys: nil)
            return
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let table = object["table"] as? String, let op = (object["op"] as? String).flatMap(Operation.init(rawValue:))
        else { return nil }
        let rows = (object["rows"] as? NSNumber)?.intValue
        let keys = (object["keys"] as? [Any])?.map { key -> String in
            if let text = key as? String { return text }
            if let number = key as? NSNumber { return number.stringValue }
            return "\(key)"
        }
        self.init(table: table, operation: op, rowCount: rows.flatMap { $0 < 0 ? nil : $0 }, keys: keys)
    }
}
