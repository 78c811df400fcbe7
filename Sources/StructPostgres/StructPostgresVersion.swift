import StructPostgresCore
import StructPostgresDriver

/// The version of StructPostgres (semantic versioning; before 1.0 a minor version may change the API).
public enum StructPostgresVersion {
    /// This version, `major.minor.patch`.
    public static let current = "0.1.0"
}
